/* Device enumeration over all back-ends, selection by string, open/close. */
#include "ka_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KA__MAX_DEVICES 64

typedef struct entry {
    const ka_backend_ops *ops;
    uint32_t local_index;
    ka_device_info info;
} entry;

static entry devices[KA__MAX_DEVICES];
static uint32_t ndevices;
static pthread_once_t enum_once = PTHREAD_ONCE_INIT;

static const ka_backend_ops *const backends[] = {
    &ka__opencl_ops,
#ifdef KA_HAVE_CUDA
    &ka__cuda_ops,
#endif
};

static void enumerate_all(void) {
    for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
        ka_device_info tmp[16];
        uint32_t n = 0;
        if (backends[b]->enumerate(tmp, 16, &n) != KA_OK) continue;
        if (n > 16) n = 16;
        for (uint32_t i = 0; i < n && ndevices < KA__MAX_DEVICES; i++) {
            devices[ndevices].ops = backends[b];
            devices[ndevices].local_index = i;
            devices[ndevices].info = tmp[i];
            ndevices++;
        }
    }
}

ka_status ka_device_count(uint32_t *count) {
    if (!count) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_device_count: count is NULL");
    pthread_once(&enum_once, enumerate_all);
    *count = ndevices;
    return KA_OK;
}

ka_status ka_device_describe(uint32_t index, ka_device_info *out) {
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_device_describe: out is NULL");
    pthread_once(&enum_once, enumerate_all);
    if (index >= ndevices)
        return ka__fail(KA_ERR_NO_DEVICE, "ka_device_describe: index %u, %u devices", index, ndevices);
    *out = devices[index].info;
    return KA_OK;
}

static bool icontains(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    if (n == 0) return false;
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return true;
    }
    return false;
}

static bool is_pocl(const ka_device_info *d) {
    return d->backend == KA_BACKEND_OPENCL && icontains(d->platform, "Portable Computing Language");
}

/* PoCL's basic device (named cpu-minimal from PoCL 5 on) runs commands in the
 * calling thread; "pocl" means the threaded CPU device (which routes small
 * launches to basic itself). */
static bool is_pocl_main(const ka_device_info *d) {
    return is_pocl(d) && strncmp(d->name, "basic", 5) != 0 && strncmp(d->name, "cpu-minimal", 11) != 0;
}

/* Finds the entry for a selector; returns index or -1. */
static int select_entry(const char *sel) {
    if (!strncmp(sel, "opencl:", 7) || !strncmp(sel, "cuda:", 5)) {
        ka_backend want = sel[0] == 'o' ? KA_BACKEND_OPENCL : KA_BACKEND_CUDA;
        const char *num = strchr(sel, ':') + 1;
        char *end;
        long k = strtol(num, &end, 10);
        if (end == num || *end || k < 0) return -1;
        for (uint32_t i = 0; i < ndevices; i++)
            if (devices[i].info.backend == want && k-- == 0) return (int)i;
        return -1;
    }
    if (!strcmp(sel, "pocl")) {
        for (uint32_t i = 0; i < ndevices; i++)
            if (is_pocl_main(&devices[i].info)) return (int)i;
        return -1;
    }
    for (uint32_t i = 0; i < ndevices; i++)
        if (icontains(devices[i].info.name, sel) || icontains(devices[i].info.platform, sel)) return (int)i;
    return -1;
}

ka_status ka_device_open(const char *selector, ka_device *out) {
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_device_open: out is NULL");
    out->id = 0;
    if (!selector || !*selector) selector = getenv("KA_DEVICE");
    const ka_backend_ops *ops = NULL;
    uint32_t local = 0;
    if (selector && !strcmp(selector, "null")) {
        ops = &ka__null_ops;
    } else {
        pthread_once(&enum_once, enumerate_all);
        int idx = -1;
        if (selector && *selector) {
            idx = select_entry(selector);
            if (idx < 0)
                return ka__fail(KA_ERR_NO_DEVICE, "ka_device_open: no device matches \"%s\" (%u devices; see `ka info`)",
                                selector, ndevices);
        } else {
            for (uint32_t i = 0; i < ndevices && idx < 0; i++)
                if (is_pocl_main(&devices[i].info)) idx = (int)i;
            if (idx < 0 && ndevices) idx = 0;
            if (idx < 0) return ka__fail(KA_ERR_NO_DEVICE, "ka_device_open: no OpenCL or CUDA device found");
        }
        ops = devices[idx].ops;
        local = devices[idx].local_index;
    }
    ka__device *d = ka__calloc(1, sizeof *d);
    if (!d) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_device_open: out of memory");
    d->ops = ops;
    ka_status st = ops->device_open(d, local);
    if (st != KA_OK) {
        ka__free(d, sizeof *d);
        return st;
    }
    d->id = ka__handle_new(KA__T_DEVICE, d);
    if (!d->id) {
        ops->device_close(d);
        ka__free(d, sizeof *d);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_device_open: out of memory for a handle");
    }
    out->id = d->id;
    return KA_OK;
}

ka_status ka_device_close(ka_device dev) {
    ka__device *d = ka__resolve(dev.id, KA__T_DEVICE);
    if (!d) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_device_close: invalid or released device");
    uint32_t live = atomic_load(&d->live);
    if (live)
        return ka__fail(KA_ERR_IN_USE, "ka_device_close: %u queues, buffers or programs of the device are alive", live);
    ka__handle_free(d->id);
    d->ops->device_close(d);
    ka__free(d, sizeof *d);
    return KA_OK;
}

ka_status ka_device_get_info(ka_device dev, const ka_device_info **out) {
    ka__device *d = ka__resolve(dev.id, KA__T_DEVICE);
    if (!d) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_device_get_info: invalid or released device");
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_device_get_info: out is NULL");
    *out = &d->info;
    return KA_OK;
}

ka_status ka_device_get_native(ka_device dev, ka_native_device *out) {
    ka__device *d = ka__resolve(dev.id, KA__T_DEVICE);
    if (!d) return ka__fail(KA_ERR_INVALID_HANDLE, "ka_device_get_native: invalid or released device");
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_device_get_native: out is NULL");
    out->device = out->context = out->inline_device = NULL;
    if (!d->ops->device_native) return ka__fail(KA_ERR_UNSUPPORTED, "ka_device_get_native: the %s back-end has no native objects", d->ops->name);
    d->ops->device_native(d, out);
    return KA_OK;
}
