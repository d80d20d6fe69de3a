/* Device enumeration over all back-ends, selection by string, open/close. */
#include "ka_internal.h"
#include "backend.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KA__MAX_DEVICES 64

typedef struct entry {
    const ka__backend *be;
    uint32_t local_index;
    ka_device_info info;
} entry;

static entry devices[KA__MAX_DEVICES];
static uint32_t ndevices;
static pthread_once_t enum_once = PTHREAD_ONCE_INIT;
/* By back-end: its enumerate failed (it lists no device, and can say why). */
static bool enum_failed[16];

static void enumerate_all(void) {
    for (uint32_t b = 0; b < ka__nbackends; b++) {
        const ka__backend *be = ka__backends[b];
        /* A table this core cannot call is left out (ka_device_open of it would say why). */
        if ((be->flags & KA__BE_UNLISTED) || ka__backend_check(be) != KA_OK) continue;
        ka_device_info tmp[16];
        uint32_t n = 0;
        if (ka__be_enumerate(be, tmp, 16, &n) != KA_OK) {
            if (b < sizeof enum_failed / sizeof *enum_failed) enum_failed[b] = true;
            continue;
        }
        if (n > 16) n = 16;
        for (uint32_t i = 0; i < n && ndevices < KA__MAX_DEVICES; i++) {
            devices[ndevices].be = be;
            devices[ndevices].local_index = i;
            devices[ndevices].info = tmp[i];
            ndevices++;
        }
    }
}

ka_status ka_device_count(uint32_t *count) {
    KA__ENTRY();
    if (!count) return ka__fail(KA_ERR_INVALID_ARGUMENT, "count is NULL");
    pthread_once(&enum_once, enumerate_all);
    *count = ndevices;
    return KA_OK;
}

ka_status ka_device_describe(uint32_t index, ka_device_info *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    pthread_once(&enum_once, enumerate_all);
    if (index >= ndevices)
        return ka__fail(KA_ERR_NO_DEVICE, "index %u, %u devices", index, ndevices);
    *out = devices[index].info;
    return KA_OK;
}

bool ka__icontains(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    if (n == 0) return false;
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return true;
    }
    return false;
}

/* Finds the entry for a selector: "NAME:N" (the N-th device of back-end
 * NAME), a back-end's own word (its selects hook), else a substring of a
 * device's name or platform. Returns the index or -1. */
static int select_entry(const char *sel) {
    for (uint32_t b = 0; b < ka__nbackends; b++) {
        const ka__backend *be = ka__backends[b];
        size_t nl = strlen(be->name);
        if (strncmp(sel, be->name, nl) || sel[nl] != ':') continue;
        const char *num = sel + nl + 1;
        char *end;
        long k = strtol(num, &end, 10);
        if (end == num || *end || k < 0) return -1;
        for (uint32_t i = 0; i < ndevices; i++)
            if (devices[i].be == be && k-- == 0) return (int)i;
        return -1;
    }
    for (uint32_t i = 0; i < ndevices; i++)
        if (ka__be_selects(devices[i].be, sel, &devices[i].info)) return (int)i;
    for (uint32_t i = 0; i < ndevices; i++)
        if (ka__icontains(devices[i].info.name, sel) || ka__icontains(devices[i].info.platform, sel)) return (int)i;
    return -1;
}

/* Why no device matches a selector that names a back-end ("host",
 * "host:0") whose enumerate failed: that failure, asked again (the
 * environment it reads, $KA_CC, may have changed since); KA_OK when the
 * selector names none such, or the back-end now finds its devices. */
static ka_status unlisted_reason(const char *sel) {
    for (uint32_t b = 0; b < ka__nbackends && b < sizeof enum_failed / sizeof *enum_failed; b++) {
        size_t nl = strlen(ka__backends[b]->name);
        if (!enum_failed[b] || strncmp(sel, ka__backends[b]->name, nl) || (sel[nl] && sel[nl] != ':')) continue;
        ka_device_info tmp[16];
        uint32_t n = 0;
        return ka__be_enumerate(ka__backends[b], tmp, 16, &n);
    }
    return KA_OK;
}

/* An unlisted back-end named by the whole selector ("null"). */
static const ka__backend *unlisted(const char *sel) {
    for (uint32_t b = 0; b < ka__nbackends; b++)
        if ((ka__backends[b]->flags & KA__BE_UNLISTED) && !strcmp(sel, ka__backends[b]->name)) return ka__backends[b];
    return NULL;
}

ka_status ka_device_open(const char *selector, ka_device *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    out->id = 0;
    if (!selector || !*selector) selector = getenv("KA_DEVICE");
    const ka__backend *be = selector ? unlisted(selector) : NULL;
    uint32_t local = 0;
    ka_status st;
    if (!be) {
        pthread_once(&enum_once, enumerate_all);
        int idx = -1;
        if (selector && *selector) {
            idx = select_entry(selector);
            if (idx < 0 && (st = unlisted_reason(selector)) != KA_OK) return st;
            if (idx < 0)
                return ka__fail(KA_ERR_NO_DEVICE, "no device matches \"%s\" (%u devices; see `ka info`)",
                                selector, ndevices);
        } else {
            for (uint32_t i = 0; i < ndevices && idx < 0; i++)
                if (ka__be_preferred(devices[i].be, &devices[i].info)) idx = (int)i;
            if (idx < 0 && ndevices) idx = 0;
            if (idx < 0) return ka__fail(KA_ERR_NO_DEVICE, "no OpenCL or CUDA device found");
        }
        be = devices[idx].be;
        local = devices[idx].local_index;
    }
    if ((st = ka__backend_check(be)) != KA_OK) return st;
    ka__device *d = ka__calloc(1, sizeof *d);
    if (!d) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    st = ka__be_device_open(be, d, local);
    if (st != KA_OK) {
        ka__free(d, sizeof *d);
        return st;
    }
    d->ops = ka__backend_layer(ka__be_device_ops(be, d));
    if ((st = ka__debug_device_open(d)) != KA_OK) {
        ka__be_device_close(d);
        ka__free(d, sizeof *d);
        return st;
    }
    d->id = ka__handle_new(KA__T_DEVICE, d);
    if (!d->id) {
        ka__debug_device_close(d);
        ka__be_device_close(d);
        ka__free(d, sizeof *d);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for a handle");
    }
    out->id = d->id;
    return KA_OK;
}

ka_status ka_device_close(ka_device dev) {
    KA__ENTRY();
    ka__device *d = ka__resolve(dev.id, KA__T_DEVICE);
    if (!d) return ka__fail_handle(KA__T_DEVICE, __func__);
    uint32_t live = atomic_load(&d->live);
    if (live)
        return ka__fail(KA_ERR_IN_USE,
                        "%u queues, buffers, programs, graphs or host memory blocks (ka_host_alloc, "
                        "ka_host_register) of the device are alive",
                        live);
    ka__handle_free(d->id);
    ka__debug_device_close(d);
    ka__be_device_close(d);
    ka__free(d, sizeof *d);
    return KA_OK;
}

ka_status ka_device_get_info(ka_device dev, const ka_device_info **out) {
    KA__ENTRY();
    ka__device *d = ka__resolve(dev.id, KA__T_DEVICE);
    if (!d) return ka__fail_handle(KA__T_DEVICE, __func__);
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = &d->info;
    return KA_OK;
}

ka_status ka_device_get_native(ka_device dev, ka_native_device *out) {
    KA__ENTRY();
    ka__device *d = ka__resolve(dev.id, KA__T_DEVICE);
    if (!d) return ka__fail_handle(KA__T_DEVICE, __func__);
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    out->device = out->context = out->inline_device = NULL;
    if (!ka__be_device_native(d, out))
        return ka__fail(KA_ERR_UNSUPPORTED, "the %s back-end has no native objects", ka__be_name(d));
    return KA_OK;
}
