/* The host device: the machine's CPUs, listed when a C compiler is found
 * ($KA_CC, else cc, gcc or clang on PATH), chosen again at each open. */
#define _GNU_SOURCE /* dladdr */
#include "host_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* An executable regular file at the path dir/name (dir NULL: name itself):
 * a directory is searchable, so access(X_OK) alone would take one. */
static bool exe_at(const char *dir, size_t dl, const char *name, char *out, size_t cap) {
    int n = dir ? snprintf(out, cap, "%.*s/%s", (int)dl, dir, name) : snprintf(out, cap, "%s", name);
    struct stat st;
    return n > 0 && (size_t)n < cap && stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0;
}

/* name as the shell finds it: a path when it holds a '/', else along $PATH. */
static bool find_exe(const char *name, char *out, size_t cap) {
    if (strchr(name, '/')) return exe_at(NULL, 0, name, out, cap);
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *s = path;;) {
        const char *e = strchr(s, ':');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (exe_at(len ? s : ".", len ? len : 1, name, out, cap)) return true;
        if (!e) return false;
        s = e + 1;
    }
}

ka_status ka__host_find_cc(char *out, size_t cap) {
    const char *env = getenv("KA_CC");
    if (env && *env) {
        if (find_exe(env, out, cap)) return KA_OK;
        return ka__fail(KA_ERR_BACKEND_UNAVAILABLE, "host: $KA_CC is '%s', which is not an executable program "
                        "(a regular file with execute permission, a path or a name on PATH)", env);
    }
    static const char *const names[] = {"cc", "gcc", "clang"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (find_exe(names[i], out, cap)) return KA_OK;
    return ka__fail(KA_ERR_BACKEND_UNAVAILABLE, "host: no C compiler found (none of cc, gcc, clang on PATH; set $KA_CC)");
}

static void cpu_name(char *out, size_t cap) {
    snprintf(out, cap, "host CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        size_t n = strcspn(v, "\n");
        snprintf(out, cap, "%.*s", (int)n, v);
        break;
    }
    fclose(f);
}

/* $name as a plain decimal number in [lo, hi] into *v (unset or "": *v
 * stays). Digits only, as the other numeric variables are read: a sign, a
 * blank on either side or a suffix is KA_ERR_INVALID_ARGUMENT naming the
 * variable, its value and what it wants. */
static ka_status env_number(const char *name, uint64_t lo, uint64_t hi, const char *want, uint64_t *v) {
    const char *e = getenv(name);
    if (!e || !*e) return KA_OK;
    uint64_t x = 0;
    const char *s = e;
    for (; *s >= '0' && *s <= '9' && x <= hi; s++) x = x * 10 + (uint64_t)(*s - '0');
    if (*s || x < lo || x > hi)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "%s='%.64s': want %s, %llu to %llu", name, e, want,
                        (unsigned long long)lo, (unsigned long long)hi);
    *v = x;
    return KA_OK;
}

/* The pool's size: $KA_NUM_THREADS, else the CPUs this process may run on
 * (its affinity mask, as OpenMP counts them). A bad value: the error, *n the
 * default. */
static ka_status thread_count(uint32_t *n) {
    cpu_set_t set;
    long c = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t v = c > 0 ? (uint64_t)c : 1;
    ka_status st = env_number("KA_NUM_THREADS", 1, 65536, "a number of threads", &v);
    *n = (uint32_t)v;
    return st;
}

/* The compiler's limits: $KA_CC_TIMEOUT seconds and $KA_CC_MEMORY MiB (0:
 * none), else the defaults. */
static ka_status cc_limits(ka__cc_limits *l) {
    uint64_t t = KA__CC_TIMEOUT_S, m = KA__CC_MEMORY_MIB;
    ka_status st = env_number("KA_CC_TIMEOUT", 0, KA__CC_TIMEOUT_MAX, "seconds (0: no limit)", &t);
    if (st == KA_OK) st = env_number("KA_CC_MEMORY", 0, KA__CC_MEMORY_MAX, "MiB (0: no limit)", &m);
    l->timeout_s = (uint32_t)t;
    l->memory_mib = m;
    return st;
}

static void fill_info(ka_device_info *i, uint32_t threads) {
    memset(i, 0, sizeof *i);
    i->backend = KA_BACKEND_HOST;
    snprintf(i->selector, sizeof i->selector, "host:0");
    cpu_name(i->name, sizeof i->name);
    snprintf(i->vendor, sizeof i->vendor, "libka");
    snprintf(i->platform, sizeof i->platform, "libka host back-end");
    snprintf(i->version, sizeof i->version, "C11");
    snprintf(i->driver_version, sizeof i->driver_version, "libka %d.%d.%d", KA_VERSION_MAJOR, KA_VERSION_MINOR, KA_VERSION_PATCH);
    i->is_cpu = 1;
    i->compute_units = threads;
    i->max_workgroup_size = KA__HOST_MAX_WG;
    i->max_workgroup[0] = i->max_workgroup[1] = i->max_workgroup[2] = KA__HOST_MAX_WG;
    i->preferred_workgroup_multiple = 1;
    i->local_mem_size = KA__HOST_LOCAL_MEM;
    struct sysinfo si;
    uint64_t mem = sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit : (uint64_t)1 << 32;
    i->global_mem_size = mem;
    i->max_alloc_size = mem;
    i->max_arg_bytes = 1024;
    i->has_double = 1;
    i->has_atomic_float_add = 2; /* a compare-exchange loop */
    i->has_atomic64 = 1;
    i->has_printf = 1;
}

#define FNV_BASIS 0xcbf29ce484222325ull

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
    return h;
}

/* The first "flags" (x86) or "Features" (arm) line of /proc/cpuinfo: what
 * -march=native may compile for. */
static uint64_t cpu_flags_hash(void) {
    uint64_t h = FNV_BASIS;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return h;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) && strncmp(line, "Features", 8)) continue;
        h = fnv(h, line, strlen(line));
        break;
    }
    fclose(f);
    return h;
}

/* The file this code was loaded from (libka, or the program it is linked
 * into), its size and mtime: the entry functions a program's object holds
 * and the launch's constants it reads are this build's, so a new build of
 * libka must not load objects an older one compiled. */
static uint64_t self_hash(void) {
    Dl_info di;
    struct stat st;
    uint64_t h = FNV_BASIS;
    if (!dladdr((void *)&self_hash, &di) || !di.dli_fname || stat(di.dli_fname, &st) != 0) return h;
    h = fnv(h, di.dli_fname, strlen(di.dli_fname));
    int64_t v[3] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec};
    return fnv(h, v, sizeof v);
}

/* The cache key's target: the compiler as resolved (symbolic links such as
 * cc -> gcc-12 followed), its size and mtime (an upgrade changes them), the
 * CPU's feature flags and libka's own build. */
static void make_target(ka__hdev *hd) {
    char real[4096];
    struct stat st;
    const char *path = realpath(hd->cc, real) ? real : hd->cc;
    if (stat(path, &st) != 0) memset(&st, 0, sizeof st);
    snprintf(hd->target, sizeof hd->target, "cc %.160s %lld %lld.%09ld flags %016llx libka %016llx", path,
             (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
             (unsigned long long)cpu_flags_hash(), (unsigned long long)self_hash());
}

ka_status ka__host_enumerate(ka_device_info *out, uint32_t cap, uint32_t *n) {
    char cc[4096];
    *n = 0;
    /* Not listed; ka_device_open("host") says why (the core asks again). */
    ka_status st = ka__host_find_cc(cc, sizeof cc);
    if (st != KA_OK) return st;
    uint32_t threads;
    (void)thread_count(&threads); /* a bad value: the default here, and ka_device_open says why */
    if (cap) fill_info(&out[0], threads);
    *n = 1;
    return KA_OK;
}

ka_status ka__host_device_open(ka__device *d, uint32_t index) {
    (void)index;
    ka__hdev *hd = ka__calloc(1, sizeof *hd);
    if (!hd) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    uint32_t threads;
    ka_status st = thread_count(&threads);
    if (st == KA_OK) st = cc_limits(&hd->lim);
    if (st == KA_OK) st = ka__host_find_cc(hd->cc, sizeof hd->cc);
    if (st == KA_OK) {
        make_target(hd);
        fill_info(&d->info, threads);
        st = ka__pool_create(threads, &hd->pool);
    }
    if (st == KA_OK && (st = ka__host_cb_start(hd)) != KA_OK) ka__pool_destroy(hd->pool);
    if (st == KA_OK) {
        pthread_mutex_init(&hd->defer_lock, NULL);
        pthread_mutex_init(&hd->guard_lock, NULL);
    }
    if (st != KA_OK) {
        ka__free(hd, sizeof *hd);
        return st;
    }
    d->native = hd;
    return KA_OK;
}

void ka__host_device_close(ka__device *d) {
    ka__hdev *hd = d->native;
    /* The threads first: none may be in a completion that takes the locks. */
    ka__host_cb_stop(hd);
    ka__pool_destroy(hd->pool);
    hd->pool = NULL;
    ka__host_defer_fini(hd);
    ka__host_guard_fini(hd);
    pthread_mutex_destroy(&hd->defer_lock);
    pthread_mutex_destroy(&hd->guard_lock);
    while (hd->fs_free) {
        ka__fiberset *fs = hd->fs_free;
        hd->fs_free = *ka__fiberset_link(fs);
        ka__fiberset_destroy(fs);
    }
    ka__free(hd, sizeof *hd);
}

/* The free fiber sets, under a spin lock. A set holds the stacks of the
 * group it was made for; a launch of larger groups replaces the sets too
 * small for them as it meets them. At most one set per pool thread and
 * queue is kept (what runs at once: a launch over the pool, and one part at
 * a time in each other launching thread); more runs at once make and free
 * the sets beyond. */
static uint32_t fs_keep(const ka__hdev *hd) {
    return ka__pool_size(hd->pool) + atomic_load_explicit(&hd->nqueues, memory_order_relaxed);
}

ka_status ka__host_fs_take(ka__hdev *hd, uint32_t items, ka__fiberset **out) {
    ka__spin_lock(&hd->fs_lock);
    ka__fiberset **at = &hd->fs_free;
    while (*at && ka__fiberset_items(*at) < items) at = ka__fiberset_link(*at);
    if (!*at) at = &hd->fs_free; /* none holds such a group: the latest is replaced */
    ka__fiberset *fs = *at;
    if (fs) {
        *at = *ka__fiberset_link(fs);
        hd->nfree--;
    }
    ka__spin_unlock(&hd->fs_lock);
    if (fs && ka__fiberset_items(fs) >= items) {
        *out = fs;
        return KA_OK;
    }
    ka__fiberset_destroy(fs);
    return ka__fiberset_create(items, KA__HOST_FIBER_STACK, KA__FG_AUTO, out);
}

void ka__host_fs_give(ka__hdev *hd, ka__fiberset *fs) {
    ka__spin_lock(&hd->fs_lock);
    bool kept = hd->nfree < fs_keep(hd);
    if (kept) {
        *ka__fiberset_link(fs) = hd->fs_free;
        hd->fs_free = fs;
        hd->nfree++;
    }
    ka__spin_unlock(&hd->fs_lock);
    if (!kept) ka__fiberset_destroy(fs);
}

void ka__host_fs_trim(ka__hdev *hd) {
    for (;;) {
        ka__spin_lock(&hd->fs_lock);
        ka__fiberset *fs = hd->nfree > fs_keep(hd) ? hd->fs_free : NULL;
        if (fs) {
            hd->fs_free = *ka__fiberset_link(fs);
            hd->nfree--;
        }
        ka__spin_unlock(&hd->fs_lock);
        if (!fs) return;
        ka__fiberset_destroy(fs);
    }
}
