/* ka-bench primitives: every primitive of ka_prims.h, one row each, against
 * OpenMP loops on the host's cores (the goal on a CPU device, informative on
 * a GPU) and, on a CUDA device, against CUB's device-wide call in the same
 * process (bench/cub_prims.cu, loaded with dlopen). Every figure is one call +
 * its wait; the rows and implementations interleave within each repetition;
 * medians. Every result is checked against the OpenMP loop's, whose sorts
 * are checked themselves. A call the device does not support
 * (KA_ERR_UNSUPPORTED) makes its row "not available", not a failure. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_common.h"
#include <ka_prims.h>

static const char usage[] =
    "usage: ka-bench primitives [--device SEL] [--n N] [--sort-n S] [--only LIST] [--iterations I] [--reps R]\n"
    "                           [--omp-reps R] [--cub PATH] [--json]\n"
    "  Each primitive of ka_prims.h against OpenMP loops on every host core and, on a CUDA device, against\n"
    "  CUB (in the same process, interleaved). Rows (LIST: comma-separated names or prefixes, e.g. sort,scan):\n"
    "    copy, reduce_u32, reduce_f32, reduce_sumsq_f32 (user op a + b, map x * x), scan_u32 (inclusive),\n"
    "    sort_u32, sort_pairs_u32, sort_u64, argsort_u32 (S keys), select_flagged_u32 (1-byte flags, ~50%),\n"
    "    select_if_u32 (x < 512), histogram_u32, histogram_f32 (256 even bins), searchsorted_u32 (N needles\n"
    "    into 2^20 sorted), segreduce_u32 (N elements in segments of ~1000).\n"
    "  Copy, reduce and scan are rated in GB/s (bytes read + written), the others in G elements/s. A call\n"
    "  this libka does not provide makes its row 'not available'. I calls per repetition (sorts and\n"
    "  searchsorted: 1), R interleaved repetitions (OpenMP: --omp-reps, default R on CPUs, min(R, 3) on\n"
    "  GPUs), medians.\n"
    "  N, S: 1 to 2^34. Default: N = S = 2^28 on GPUs, 2^24 on CPUs; --iterations 3 --reps 7.\n"
    "  --cub PATH: CUB's shared object (default: libka_cub_bench.so beside ka-bench, on CUDA devices; a\n"
    "  PATH given is loaded on any device); 'none': no CUB.\n";

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "ka-bench primitives: " __VA_ARGS__);                                      \
        fprintf(stderr, "\n");                                                                     \
        return 1;                                                                                  \
    } while (0)
#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != KA_OK) FAIL("%s: %s", #call, ka_last_error());                               \
    } while (0)

/* ---- OpenMP references ---------------------------------------------------- */
static int nthreads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
static int thread_id(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
/* Thread t's block [*lo, *hi) of n split over T. */
static void block(size_t n, int T, int t, size_t *lo, size_t *hi) {
    size_t per = (n + (size_t)T - 1) / (size_t)T;
    *lo = per * (size_t)t < n ? per * (size_t)t : n;
    *hi = *lo + per < n ? *lo + per : n;
}
static uint32_t host_sum_u32(const uint32_t *a, size_t n) {
    uint32_t s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (size_t i = 0; i < n; i++) s += a[i];
    return s;
}
static float host_sum_f32(const float *a, size_t n) {
    float s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (size_t i = 0; i < n; i++) s += a[i];
    return s;
}
static float host_sumsq_f32(const float *a, size_t n) {
    float s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (size_t i = 0; i < n; i++) s += a[i] * a[i];
    return s;
}
/* Inclusive scan: each thread sums its block, then scans it from the sum of the blocks before. */
static void host_scan_u32(const uint32_t *in, uint32_t *out, size_t n, uint64_t *part) {
    int T = nthreads();
#pragma omp parallel num_threads(T)
    {
        int t = thread_id();
        size_t lo, hi;
        block(n, T, t, &lo, &hi);
        uint32_t s = 0;
        for (size_t i = lo; i < hi; i++) s += in[i];
        part[t] = s;
#pragma omp barrier
        uint32_t c = 0;
        for (int j = 0; j < t; j++) c += (uint32_t)part[j];
        for (size_t i = lo; i < hi; i++) out[i] = c += in[i];
    }
}
/* LSD radix sort, 8 bits a pass (an even number of passes: the result ends
 * in a), each thread a block with its own digit counts; v (or NULL) moves
 * with the keys; stable. */
#define HOST_RADIX(NAME, KT)                                                                        \
    static void NAME(KT *a, KT *ta, uint32_t *v, uint32_t *tv, size_t n, size_t (*cnt)[256]) {     \
        int T = nthreads();                                                                         \
        for (int shift = 0; shift < (int)sizeof(KT) * 8; shift += 8) {                              \
            _Pragma("omp parallel num_threads(T)") {                                                \
                int t = thread_id();                                                                \
                size_t lo, hi, *c = cnt[t];                                                         \
                block(n, T, t, &lo, &hi);                                                           \
                memset(c, 0, 256 * sizeof *c);                                                      \
                for (size_t i = lo; i < hi; i++) c[(a[i] >> shift) & 255]++;                        \
                _Pragma("omp barrier") _Pragma("omp single") {                                      \
                    size_t off = 0;                                                                 \
                    for (int d = 0; d < 256; d++)                                                   \
                        for (int j = 0; j < T; j++) {                                               \
                            size_t x = cnt[j][d];                                                   \
                            cnt[j][d] = off;                                                        \
                            off += x;                                                               \
                        }                                                                           \
                }                                                                                   \
                if (v)                                                                              \
                    for (size_t i = lo; i < hi; i++) {                                              \
                        size_t to = c[(a[i] >> shift) & 255]++;                                     \
                        ta[to] = a[i], tv[to] = v[i];                                               \
                    }                                                                               \
                else                                                                                \
                    for (size_t i = lo; i < hi; i++) ta[c[(a[i] >> shift) & 255]++] = a[i];         \
            }                                                                                       \
            KT *s = a;                                                                              \
            a = ta, ta = s;                                                                         \
            uint32_t *w = v;                                                                        \
            v = tv, tv = w;                                                                         \
        }                                                                                           \
    }
HOST_RADIX(host_radix_u32, uint32_t)
HOST_RADIX(host_radix_u64, uint64_t)

static void host_iota(uint32_t *v, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) v[i] = (uint32_t)i;
}
/* Stable compaction: each thread counts its block's kept elements, then
 * writes them after the counts of the blocks before, without a branch per
 * element (every element stored, the position advanced past kept ones) up
 * to its block's last kept element, so no store lands in the next block's
 * part. fl NULL: keep x < 512. */
static uint64_t host_select_u32(const uint32_t *in, const uint8_t *fl, uint32_t *out, size_t n, uint64_t *part) {
    int T = nthreads();
    uint64_t total = 0;
#pragma omp parallel num_threads(T)
    {
        int t = thread_id();
        size_t lo, hi, k = 0, last = 0;
        block(n, T, t, &lo, &hi);
        if (fl)
            for (size_t i = lo; i < hi; i++) k += fl[i] != 0, last = fl[i] ? i : last;
        else
            for (size_t i = lo; i < hi; i++) k += in[i] < 512u, last = in[i] < 512u ? i : last;
        part[t] = k;
#pragma omp barrier
        size_t o = 0;
        for (int j = 0; j < t; j++) o += part[j];
        size_t end = k ? last + 1 : lo;
        /* The keep bit by arithmetic: GCC turns `o += fl[i] != 0` into a branch, mispredicted on random flags. */
        if (fl)
            for (size_t i = lo; i < end; i++) out[o] = in[i], o += (unsigned)(fl[i] | -fl[i]) >> 31;
        else
            for (size_t i = lo; i < end; i++) out[o] = in[i], o += (size_t)(((uint64_t)in[i] - 512u) >> 63);
        if (t == T - 1) total = o;
    }
    return total;
}
/* 256 even bins of [lo, hi) = [0, 1024) (u32) or [0, 1) (f32), the range read at run time as
 * a histogram over any range computes its bin (a float scale), per-thread counts, then summed. */
static volatile uint32_t hist_lo = 0, hist_hi = 1024;
static volatile float hist_flo = 0.0f, hist_fhi = 1.0f;
static void host_hist(const uint32_t *u, const float *f, size_t n, uint32_t *counts, uint32_t (*tc)[256]) {
    int T = nthreads();
#pragma omp parallel num_threads(T)
    {
        int t = thread_id();
        size_t lo, hi;
        block(n, T, t, &lo, &hi);
        uint32_t *c = tc[t];
        memset(c, 0, 256 * sizeof *c);
        if (u) {
            uint32_t l = hist_lo, h = hist_hi;
            float s = 256.0f / (float)(h - l);
            for (size_t i = lo; i < hi; i++)
                if (u[i] >= l && u[i] < h) {
                    uint32_t b = (uint32_t)((float)(u[i] - l) * s);
                    c[b < 256u ? b : 255u]++;
                }
        } else {
            float l = hist_flo, h = hist_fhi, s = 256.0f / (h - l);
            for (size_t i = lo; i < hi; i++)
                if (f[i] >= l && f[i] < h) {
                    uint32_t b = (uint32_t)((f[i] - l) * s);
                    c[b < 256u ? b : 255u]++;
                }
        }
#pragma omp barrier
#pragma omp for schedule(static)
        for (int b = 0; b < 256; b++) {
            uint32_t s = 0;
            for (int j = 0; j < T; j++) s += tc[j][b];
            counts[b] = s;
        }
    }
}
/* Lower bound of each needle in the ascending sorted[0, m). */
static void host_search(const uint32_t *sorted, size_t m, const uint32_t *needles, uint64_t *out, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t j = 0; j < n; j++) {
        size_t lo = 0, hi = m;
        uint32_t x = needles[j];
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (sorted[mid] < x) lo = mid + 1;
            else hi = mid;
        }
        out[j] = lo;
    }
}
static void host_segreduce(const uint32_t *in, const uint64_t *off, size_t nseg, uint32_t *out) {
#pragma omp parallel for schedule(static)
    for (size_t s = 0; s < nseg; s++) {
        uint32_t a = 0;
        for (uint64_t i = off[s]; i < off[s + 1]; i++) a += in[i];
        out[s] = a;
    }
}

/* ---- CUB, loaded at run time ------------------------------------------------- */
typedef struct cub_api {
    void *so;
    const char *(*error)(void);
    int (*version)(void);
    int (*setup)(int, const char *, uint64_t, uint64_t, const void *, const void *);
    int (*run)(const char *);
    int (*result)(const char *, void *, void *);
    void (*release)(void);
} cub_api;

/* Opens CUB's object: path, or libka_cub_bench.so beside this program, then
 * where the build put it. *why: the reason when it is not loaded. */
static int cub_open(cub_api *c, const char *path, char *why, size_t whylen) {
    char self[4096], buf[4200];
    if (!path) {
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k > 0) {
            self[k] = 0;
            char *sl = strrchr(self, '/');
            if (sl) *sl = 0;
            snprintf(buf, sizeof buf, "%s/libka_cub_bench.so", self);
            if (access(buf, R_OK) == 0) path = buf;
        }
#ifdef KA_CUB_BENCH_SO
        if (!path && access(KA_CUB_BENCH_SO, R_OK) == 0) path = KA_CUB_BENCH_SO;
#endif
        if (!path) {
            snprintf(why, whylen, "CUB not built");
            return -1;
        }
    }
    c->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!c->so) {
        const char *e = dlerror();
        snprintf(why, whylen, "CUB not loaded: %.200s", e ? e : path);
        return -1;
    }
    *(void **)&c->error = dlsym(c->so, "kacub_error");
    *(void **)&c->version = dlsym(c->so, "kacub_version");
    *(void **)&c->setup = dlsym(c->so, "kacub_setup");
    *(void **)&c->run = dlsym(c->so, "kacub_run");
    *(void **)&c->result = dlsym(c->so, "kacub_result");
    *(void **)&c->release = dlsym(c->so, "kacub_release");
    if (!c->error || !c->version || !c->setup || !c->run || !c->result || !c->release) {
        snprintf(why, whylen, "CUB not loaded: %.200s lacks kacub_* functions", path);
        dlclose(c->so);
        c->so = NULL;
        return -1;
    }
    return 0;
}

/* ---- the rows ------------------------------------------------------------------ */
enum {
    R_COPY, R_RED_U32, R_RED_F32, R_SUMSQ, R_SCAN, R_SORT, R_PAIRS, R_SORT64, R_ARGSORT, R_SEL_FLAG, R_SEL_IF,
    R_HIST_U32, R_HIST_F32, R_SEARCH, R_SEGRED, NR
};
enum { KA, OMP, CUB, NI };
enum { GBS, GELS, GKEYS };

typedef struct row {
    const char *key, *label;
    int unit;           /* GBS: per_elem bytes an element; GELS, GKEYS: elements (needles), keys per second */
    double per_elem;
    int heavy;          /* sorts, searchsorted: one call per timing (sorts in place: fresh keys first) */
    const char *cub;    /* CUB's call, NULL: none */
    double goal_cub;    /* libka speed / CUB speed at least (0: no goal) */
    double goal_cpu;    /* on a CPU device, libka speed / OpenMP speed at least */
    /* state */
    int on, avail, cub_on, bad[NI];
    char na[256], cub_na[256];
    size_t count;       /* elements a call rates by */
    ka_prims_plan *plan;
    ka_buffer b[2];
    void *h[4];         /* the OpenMP loop's outputs and scratch: keys, their scratch, values, theirs */
    double *t[NI];
} row;

#define ROW(k, l, u, pe, hv, cb, gc, gp)                                                      \
    {.key = k, .label = l, .unit = u, .per_elem = pe, .heavy = hv, .cub = cb, .goal_cub = gc,          \
     .goal_cpu = gp}
static row rows[NR] = {
    [R_COPY] = ROW("copy", "ka_buffer_copy u32", GBS, 8, 0, "cudaMemcpyAsync", 0, 0),
    [R_RED_U32] = ROW("reduce_u32", "ka_reduce sum u32", GBS, 4, 0, "DeviceReduce::Sum", 1.0, 1.0),
    [R_RED_F32] = ROW("reduce_f32", "ka_reduce sum f32", GBS, 4, 0, "DeviceReduce::Sum", 1.0, 1.0),
    [R_SUMSQ] = ROW("reduce_sumsq_f32", "ka_reduce user op f32 x*x, a+b", GBS, 4, 0, "DeviceReduce::TransformReduce",
                 1.0, 1.0),
    [R_SCAN] = ROW("scan_u32", "ka_scan inclusive u32", GBS, 8, 0, "DeviceScan::InclusiveSum", 0.95, 1.0),
    [R_SORT] = ROW("sort_u32", "ka_sort u32 keys", GKEYS, 0, 1, "DeviceRadixSort::SortKeys", 0.8, 1.0),
    [R_PAIRS] = ROW("sort_pairs_u32", "ka_sort_pairs u32/u32", GKEYS, 0, 1, "DeviceRadixSort::SortPairs", 0.8, 1.0),
    [R_SORT64] = ROW("sort_u64", "ka_sort u64 keys", GKEYS, 0, 1, "DeviceRadixSort::SortKeys", 0.7, 1.0),
    [R_ARGSORT] = ROW("argsort_u32", "ka_argsort u32", GKEYS, 0, 1, "DeviceRadixSort::SortPairs (iota)", 0, 0),
    [R_SEL_FLAG] = ROW("select_flagged_u32", "ka_select flagged u32", GELS, 0, 0, "DeviceSelect::Flagged", 0.9, 1.0),
    [R_SEL_IF] = ROW("select_if_u32", "ka_select if x < 512 u32", GELS, 0, 0, "DeviceSelect::If", 0.9, 1.0),
    [R_HIST_U32] = ROW("histogram_u32", "ka_histogram 256 bins u32", GELS, 0, 0, "DeviceHistogram::HistogramEven",
                    0.9, 1.0),
    [R_HIST_F32] = ROW("histogram_f32", "ka_histogram 256 bins f32", GELS, 0, 0, "DeviceHistogram::HistogramEven",
                    0.9, 1.0),
    [R_SEARCH] = ROW("searchsorted_u32", "ka_searchsorted u32", GELS, 0, 1, "thrust::lower_bound", 0, 0),
    [R_SEGRED] = ROW("segreduce_u32", "ka_segmented_reduce sum u32", GELS, 0, 0, "DeviceSegmentedReduce::Sum", 0, 0),
};

/* What the rows share: the device, the sizes, the inputs (host and device, made when a row needs them). */
typedef struct ctx {
    ka_device dev;
    ka_queue q;
    const ka_device_info *di;
    size_t n, sn, m, nseg;
    int T;
    uint64_t *part;
    size_t (*cnt)[256];
    uint32_t (*tc)[256];
    uint32_t *hu, *hk, *hiota, *hsorted, *hneedles;
    float *hf;
    uint64_t *hk64, *hoff;
    uint8_t *hflags;
    ka_buffer bu, bf, bk, bk64, biota, bflags, bsorted, bneedles, boff;
    cub_api cub;
    int cub_ordinal;
} ctx;

static uint64_t mix(uint64_t x) { /* splitmix64's finalizer: the inputs, reproducible and made in parallel */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void *xmalloc(size_t bytes) { return malloc(bytes ? bytes : 8); }

/* Host input and its device copy, each made once. */
static int need(ctx *c, void **h, ka_buffer *b, size_t n, size_t es, int what) {
    size_t bytes = n * es;
    if (!*h) {
        if (!(*h = xmalloc(bytes))) FAIL("out of host memory (%zu bytes)", bytes);
        switch (what) {
        case 0: { /* u32 in [0, 1024) */
            uint32_t *u = *h;
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++) u[i] = (uint32_t)mix(i) & 1023u;
        } break;
        case 1: { /* f32: the same values / 1024, exact */
            float *f = *h;
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++) f[i] = (float)((uint32_t)mix(i) & 1023u) / 1024.0f;
        } break;
        case 2: { /* random u32 keys */
            uint32_t *u = *h;
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++) u[i] = (uint32_t)(mix(i + (1ull << 40)) >> 32);
        } break;
        case 3: { /* random u64 keys */
            uint64_t *u = *h;
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++) u[i] = mix(i + (2ull << 40));
        } break;
        case 4: { /* ascending u32 (gaps of 0 to 4095: duplicates, below 2^32) */
            uint32_t *u = *h, s = 0;
            for (size_t i = 0; i < n; i++) u[i] = s += (uint32_t)mix(i + (3ull << 40)) & 4095u;
        } break;
        case 5: host_iota(*h, n); break;
        case 6: { /* flags: one byte, 0 or 1, half of each */
            uint8_t *u = *h;
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++) u[i] = (uint8_t)(mix(i + (4ull << 40)) >> 63);
        } break;
        case 8: { /* needles: random u32 across the sorted array's range and past it */
            uint32_t *u = *h, top = c->hsorted[c->m - 1];
            uint64_t span = (uint64_t)top + top / 16 + 1;
#pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++) u[i] = (uint32_t)(mix(i + (5ull << 40)) % span);
        } break;
        default: break; /* 7: offsets, made by the caller */
        }
    }
    if (b && !b->id) {
        CHECK(ka_buffer_create(c->dev, bytes, b));
        CHECK(ka_buffer_write(c->q, *b, 0, *h, bytes));
    }
    return 0;
}
#define NEED(field, buf, count, what)                                                              \
    do {                                                                                           \
        if (need(c, (void **)&c->field, buf, count, sizeof *c->field, what)) return 1;             \
    } while (0)

/* Segments of 1 to 1999 elements (~1000) covering the n elements. */
static int make_offsets(ctx *c) {
    if (c->hoff) return 0;
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
        size_t s = 0;
        uint64_t o = 0;
        if (pass) c->hoff[0] = 0;
        while (o < c->n) {
            uint64_t len = 1 + mix(s + (6ull << 40)) % 1999;
            o = o + len < c->n ? o + len : c->n;
            s++;
            if (pass) c->hoff[s] = o;
        }
        c->nseg = s;
        if (!pass && !(c->hoff = xmalloc((s + 1) * 8))) FAIL("out of host memory");
    }
    return 0;
}

/* A refusal of a row's plan or first call: not available (UNSUPPORTED), else a failure (1). */
static int refused(row *r, ka_status st, const char *where) {
    if (st == KA_ERR_UNSUPPORTED) {
        snprintf(r->na, sizeof r->na, "%s", ka_last_error());
        r->avail = 0;
        return 0;
    }
    fprintf(stderr, "ka-bench primitives: %s: %s: %s\n", r->key, where, ka_last_error());
    return 1;
}

/* The row's plan, buffers and inputs. 1: failure; r->avail 0: not available. */
static int setup_row(ctx *c, row *r, int id) {
    size_t n = c->n, sn = c->sn;
    ka_prims_desc d = {.dtype = KA_DTYPE_U32, .max_n = n};
    switch (id) {
    case R_COPY: d.kind = 0; break;
    case R_RED_U32: d.kind = KA_PRIM_REDUCE; break;
    case R_RED_F32: d.kind = KA_PRIM_REDUCE, d.dtype = KA_DTYPE_F32; break;
    case R_SUMSQ:
        d.kind = KA_PRIM_REDUCE, d.dtype = KA_DTYPE_F32, d.op = "a + b", d.identity = "0.0f", d.map = "x * x";
        break;
    case R_SCAN: d.kind = KA_PRIM_SCAN; break;
    case R_SORT: d.kind = KA_PRIM_SORT, d.max_n = sn; break;
    case R_PAIRS: d.kind = KA_PRIM_SORT, d.max_n = sn, d.flags = KA_PRIM_SORT_VALUES; break;
    case R_SORT64: d.kind = KA_PRIM_SORT, d.max_n = sn, d.dtype = KA_DTYPE_U64; break;
    case R_ARGSORT: d.kind = KA_PRIM_SORT, d.max_n = sn, d.flags = KA_PRIM_ARGSORT; break;
    case R_SEL_FLAG: d.kind = KA_PRIM_SELECT; break;
    case R_SEL_IF: d.kind = KA_PRIM_SELECT, d.predicate = "x < 512u"; break;
    case R_HIST_U32: d.kind = KA_PRIM_HISTOGRAM, d.bins = 256; break;
    case R_HIST_F32: d.kind = KA_PRIM_HISTOGRAM, d.dtype = KA_DTYPE_F32, d.bins = 256; break;
    case R_SEARCH: d.kind = KA_PRIM_SEARCHSORTED; break;
    case R_SEGRED:
        if (make_offsets(c)) return 1;
        d.kind = KA_PRIM_SEGMENTED_REDUCE, d.max_n = c->nseg;
        break;
    }
    r->avail = 1;
    if (d.kind) {
        ka_status st = ka_prims_plan_create_desc(c->dev, &d, &r->plan);
        if (st != KA_OK) return refused(r, st, "ka_prims_plan_create_desc");
    }
    size_t ob = 0, ob1 = 0, hb[4] = {0}; /* device outputs; host outputs */
    r->count = n;
    switch (id) {
    case R_COPY: NEED(hu, &c->bu, n, 0); ob = n * 4, hb[0] = n * 4; break;
    case R_RED_U32:
    case R_SUMSQ:
    case R_RED_F32:
        if (id == R_RED_U32) NEED(hu, &c->bu, n, 0);
        else NEED(hf, &c->bf, n, 1);
        ob = 8, hb[0] = 8;
        break;
    case R_SCAN: NEED(hu, &c->bu, n, 0); ob = n * 4, hb[0] = n * 4; break;
    case R_SORT: NEED(hk, &c->bk, sn, 2); ob = sn * 4, hb[0] = hb[1] = sn * 4, r->count = sn; break;
    case R_PAIRS:
    case R_ARGSORT:
        NEED(hk, &c->bk, sn, 2);
        NEED(hiota, id == R_PAIRS ? &c->biota : NULL, sn, 5);
        ob = sn * 4, ob1 = id == R_PAIRS ? sn * 4 : 0, r->count = sn;
        hb[0] = hb[1] = hb[2] = hb[3] = sn * 4;
        break;
    case R_SORT64: NEED(hk64, &c->bk64, sn, 3); ob = sn * 8, hb[0] = hb[1] = sn * 8, r->count = sn; break;
    case R_SEL_FLAG:
    case R_SEL_IF:
        NEED(hu, &c->bu, n, 0);
        if (id == R_SEL_FLAG) NEED(hflags, &c->bflags, n, 6);
        ob = n * 4, ob1 = 8, hb[0] = n * 4, hb[1] = 8;
        break;
    case R_HIST_U32: NEED(hu, &c->bu, n, 0); ob = 256 * 4, hb[0] = 256 * 4; break;
    case R_HIST_F32: NEED(hf, &c->bf, n, 1); ob = 256 * 4, hb[0] = 256 * 4; break;
    case R_SEARCH:
        NEED(hsorted, &c->bsorted, c->m, 4);
        NEED(hneedles, &c->bneedles, n, 8);
        ob = n * 8, hb[0] = n * 8;
        break;
    case R_SEGRED:
        NEED(hu, &c->bu, n, 0);
        NEED(hoff, &c->boff, c->nseg + 1, 7);
        ob = c->nseg * 4, hb[0] = c->nseg * 4;
        break;
    }
    if (ob) CHECK(ka_buffer_create(c->dev, ob, &r->b[0]));
    if (ob1) CHECK(ka_buffer_create(c->dev, ob1, &r->b[1]));
    for (int i = 0; i < 4; i++)
        if (hb[i] && !(r->h[i] = xmalloc(hb[i]))) FAIL("out of host memory");
    return 0;
}

/* Untimed work before a timed call: the in-place sorts' fresh input. */
static int prepare(ctx *c, row *r, int id, int impl) {
    size_t sn = c->sn;
    if (impl == KA) {
        if (id == R_SORT || id == R_PAIRS) CHECK(ka_buffer_copy(c->q, r->b[0], 0, c->bk, 0, sn * 4, NULL));
        if (id == R_PAIRS) CHECK(ka_buffer_copy(c->q, r->b[1], 0, c->biota, 0, sn * 4, NULL));
        if (id == R_SORT64) CHECK(ka_buffer_copy(c->q, r->b[0], 0, c->bk64, 0, sn * 8, NULL));
        if (id == R_SORT || id == R_PAIRS || id == R_SORT64) CHECK(ka_queue_finish(c->q));
    } else if (impl == OMP) {
        if (id == R_SORT) memcpy(r->h[0], c->hk, sn * 4);
        if (id == R_PAIRS) memcpy(r->h[0], c->hk, sn * 4), memcpy(r->h[2], c->hiota, sn * 4);
        if (id == R_SORT64) memcpy(r->h[0], c->hk64, sn * 8);
    }
    return 0;
}

/* One libka call of the row and its wait. */
static ka_status ka_call(ctx *c, row *r, int id) {
    size_t n = c->n, sn = c->sn;
    ka_event ev = {0};
    ka_status st = KA_OK;
    ka_queue q = c->q;
    switch (id) {
    case R_COPY: st = ka_buffer_copy(q, r->b[0], 0, c->bu, 0, n * 4, &ev); break;
    case R_RED_U32: st = ka_reduce(q, r->plan, r->b[0], 0, c->bu, 0, n, KA_REDUCE_SUM, &ev); break;
    case R_RED_F32: st = ka_reduce(q, r->plan, r->b[0], 0, c->bf, 0, n, KA_REDUCE_SUM, &ev); break;
    case R_SUMSQ: st = ka_reduce(q, r->plan, r->b[0], 0, c->bf, 0, n, KA_REDUCE_USER, &ev); break;
    case R_SCAN: st = ka_scan(q, r->plan, r->b[0], 0, c->bu, 0, n, 0, &ev); break;
    case R_SORT:
    case R_SORT64: st = ka_sort(q, r->plan, r->b[0], 0, (ka_buffer){0}, 0, sn, &ev); break;
    case R_PAIRS: st = ka_sort_pairs(q, r->plan, r->b[0], 0, r->b[1], 0, sn, &ev); break;
    case R_ARGSORT: st = ka_argsort(q, r->plan, r->b[0], 0, c->bk, 0, sn, &ev); break;
    case R_SEL_FLAG: st = ka_select(q, r->plan, r->b[0], 0, r->b[1], 0, c->bu, 0, c->bflags, 0, n, &ev); break;
    case R_SEL_IF: st = ka_select(q, r->plan, r->b[0], 0, r->b[1], 0, c->bu, 0, (ka_buffer){0}, 0, n, &ev); break;
    case R_HIST_U32: st = ka_histogram(q, r->plan, r->b[0], 0, c->bu, 0, n, 0.0, 1024.0, &ev); break;
    case R_HIST_F32: st = ka_histogram(q, r->plan, r->b[0], 0, c->bf, 0, n, 0.0, 1.0, &ev); break;
    case R_SEARCH: st = ka_searchsorted(q, r->plan, r->b[0], 0, c->bsorted, 0, c->m, c->bneedles, 0, n, 0, &ev); break;
    case R_SEGRED:
        st = ka_segmented_reduce(q, r->plan, r->b[0], 0, c->bu, 0, c->boff, 0, c->nseg, KA_REDUCE_SUM, &ev);
        break;
    }
    if (st != KA_OK) return st;
    st = ka_event_wait(ev, KA_WAIT_FOREVER);
    ka_event_release(ev);
    return st;
}

/* One OpenMP run of the row (results in r->h). */
static void omp_call(ctx *c, row *r, int id) {
    size_t n = c->n, sn = c->sn;
    switch (id) {
    case R_COPY: bench_omp_copy(r->h[0], c->hu, n * 4); break;
    case R_RED_U32: *(uint32_t *)r->h[0] = host_sum_u32(c->hu, n); break;
    case R_RED_F32: *(float *)r->h[0] = host_sum_f32(c->hf, n); break;
    case R_SUMSQ: *(float *)r->h[0] = host_sumsq_f32(c->hf, n); break;
    case R_SCAN: host_scan_u32(c->hu, r->h[0], n, c->part); break;
    case R_SORT: host_radix_u32(r->h[0], r->h[1], NULL, NULL, sn, c->cnt); break;
    case R_SORT64: host_radix_u64(r->h[0], r->h[1], NULL, NULL, sn, c->cnt); break;
    case R_PAIRS: host_radix_u32(r->h[0], r->h[1], r->h[2], r->h[3], sn, c->cnt); break;
    case R_ARGSORT: /* the keys stay: sort a copy with the indices */
        bench_omp_copy(r->h[0], c->hk, sn * 4);
        host_iota(r->h[2], sn);
        host_radix_u32(r->h[0], r->h[1], r->h[2], r->h[3], sn, c->cnt);
        break;
    case R_SEL_FLAG: *(uint64_t *)r->h[1] = host_select_u32(c->hu, c->hflags, r->h[0], n, c->part); break;
    case R_SEL_IF: *(uint64_t *)r->h[1] = host_select_u32(c->hu, NULL, r->h[0], n, c->part); break;
    case R_HIST_U32: host_hist(c->hu, NULL, n, r->h[0], c->tc); break;
    case R_HIST_F32: host_hist(NULL, c->hf, n, r->h[0], c->tc); break;
    case R_SEARCH: host_search(c->hsorted, c->m, c->hneedles, r->h[0], n); break;
    case R_SEGRED: host_segreduce(c->hu, c->hoff, c->nseg, r->h[0]); break;
    }
}

static int cub_setup(ctx *c, row *r, int id) {
    const void *in0 = NULL, *in1 = NULL;
    uint64_t n = c->n, aux = 0;
    switch (id) {
    case R_COPY: case R_RED_U32: case R_SCAN: case R_SEL_IF: case R_HIST_U32: in0 = c->hu; break;
    case R_RED_F32: case R_SUMSQ: case R_HIST_F32: in0 = c->hf; break;
    case R_SORT: in0 = c->hk, n = c->sn; break;
    case R_SORT64: in0 = c->hk64, n = c->sn; break;
    case R_PAIRS: case R_ARGSORT: in0 = c->hk, in1 = c->hiota, n = c->sn; break;
    case R_SEL_FLAG: in0 = c->hu, in1 = c->hflags; break;
    case R_SEGRED: in0 = c->hu, in1 = c->hoff, aux = c->nseg; break;
    case R_SEARCH: in0 = c->hsorted, in1 = c->hneedles, aux = c->m; break;
    }
    int e = c->cub.setup(c->cub_ordinal, r->key, n, aux, in0, in1);
    if (e) snprintf(r->cub_na, sizeof r->cub_na, "CUB setup failed: %s", c->cub.error());
    return e;
}

/* ---- checks ---------------------------------------------------------------------- */
static int mismatch(const row *r, const char *who, const void *got, const void *want, size_t bytes, size_t es) {
    if (!memcmp(got, want, bytes)) return 0;
    size_t i = 0;
    while (i + es <= bytes && !memcmp((const char *)got + i, (const char *)want + i, es)) i += es;
    uint64_t g = 0, w = 0;
    memcpy(&g, (const char *)got + i, es), memcpy(&w, (const char *)want + i, es);
    fprintf(stderr, "ka-bench primitives: %s: %s's [%zu] = %llu, OpenMP's %llu\n", r->key, who, i / es,
            (unsigned long long)g, (unsigned long long)w);
    return 1;
}
static int near(const row *r, const char *who, double got, double want) {
    if (got > want * (1 - 1e-3) && got < want * (1 + 1e-3)) return 0;
    fprintf(stderr, "ka-bench primitives: %s: %s's %.9g, the exact value %.9g\n", r->key, who, got, want);
    return 1;
}

/* The OpenMP loop's result checked on its own, then libka's and CUB's against it. */
static int check_row(ctx *c, row *r, int id) {
    size_t n = c->n, sn = c->sn;
    size_t o0 = 0, o1 = 0, es = 4; /* bytes of the outputs compared */
    double exact = 0;
    int fl = id == R_RED_F32 || id == R_SUMSQ;
    switch (id) {
    case R_COPY: case R_SCAN: case R_SEL_FLAG: case R_SEL_IF: o0 = n * 4; break;
    case R_RED_U32: case R_RED_F32: case R_SUMSQ: o0 = 4; break;
    case R_SORT: case R_ARGSORT: o0 = sn * 4; break;
    case R_PAIRS: o0 = o1 = sn * 4; break;
    case R_SORT64: o0 = sn * 8, es = 8; break;
    case R_HIST_U32: case R_HIST_F32: o0 = 256 * 4; break;
    case R_SEARCH: o0 = n * 8, es = 8; break;
    case R_SEGRED: o0 = c->nseg * 4; break;
    }
    if (fl) /* the OpenMP loop's f32 sum is not checked: its serial order per thread rounds more */
        for (size_t i = 0; i < n; i++) exact += id == R_SUMSQ ? (double)c->hf[i] * c->hf[i] : c->hf[i];
    if (id == R_SORT || id == R_SORT64 || id == R_PAIRS || id == R_ARGSORT) {
        /* Ascending, the same key sum, and (pairs, argsort) each value the index of its key. */
        uint64_t s0 = 0, s1 = 0;
        int ok = 1;
        for (size_t i = 0; i < sn; i++) {
            uint64_t k = id == R_SORT64 ? ((uint64_t *)r->h[0])[i] : ((uint32_t *)r->h[0])[i];
            uint64_t p = id == R_SORT64 ? ((uint64_t *)r->h[0])[i ? i - 1 : 0] : ((uint32_t *)r->h[0])[i ? i - 1 : 0];
            s0 += k, s1 += id == R_SORT64 ? c->hk64[i] : c->hk[i];
            if (p > k) ok = 0;
            if ((id == R_PAIRS || id == R_ARGSORT) && c->hk[((uint32_t *)r->h[2])[i]] != k) ok = 0;
        }
        if (!ok || s0 != s1) {
            fprintf(stderr, "ka-bench primitives: %s: the OpenMP sort's result is wrong\n", r->key);
            r->bad[OMP] = 1;
        }
    }
    size_t full0 = o0; /* what CUB's result writes */
    if (id == R_SEL_FLAG || id == R_SEL_IF) o0 = *(uint64_t *)r->h[1] * 4, o1 = 8;
    void *g0 = xmalloc(full0), *g1 = xmalloc(o1 ? o1 : 8);
    if (!g0 || !g1) FAIL("out of host memory");
    const void *w1 = id == R_PAIRS ? r->h[2] : r->h[1];
    const void *w0 = id == R_ARGSORT ? r->h[2] : r->h[0];
    for (int impl = KA; impl < NI; impl += 2) {
        if (impl == CUB && !r->cub_on) continue;
        const char *who = impl == KA ? "libka" : "CUB";
        if (impl == KA) {
            CHECK(ka_buffer_read(c->q, g0, r->b[0], 0, o0));
            if (o1) CHECK(ka_buffer_read(c->q, g1, r->b[1], 0, o1));
        } else if (id == R_ARGSORT ? c->cub.result(r->key, NULL, g0) : c->cub.result(r->key, g0, o1 ? g1 : NULL)) {
            fprintf(stderr, "ka-bench primitives: %s: CUB's result: %s\n", r->key, c->cub.error());
            r->bad[impl] = 1;
            continue;
        }
        if (fl) r->bad[impl] = near(r, who, *(float *)g0, exact);
        else if (id == R_SEL_FLAG || id == R_SEL_IF) {
            r->bad[impl] = mismatch(r, who, g1, w1, 8, 8) || mismatch(r, who, g0, w0, o0, 4);
        } else {
            r->bad[impl] = mismatch(r, who, g0, w0, o0, es) || (o1 && mismatch(r, who, g1, w1, o1, 4));
        }
    }
    free(g0), free(g1);
    return 0;
}

/* ---- output ---------------------------------------------------------------------- */
static double rate(const ctx *c, const row *r, double ns) {
    (void)c;
    return r->unit == GBS ? r->per_elem * (double)r->count / ns : (double)r->count / ns;
}
static void json_num(const char *k, double v, int ok) {
    if (ok) printf(",\"%s\":%.6g", k, v);
    else printf(",\"%s\":null", k);
}
static void json_str(const char *k, const char *v) {
    printf(",\"%s\":", k);
    if (!v) {
        printf("null");
        return;
    }
    putchar('"');
    for (const char *s = v; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 32) printf(" ");
        else putchar(*s);
    }
    putchar('"');
}

int bench_prims_main(int argc, char **argv) {
#ifdef _OPENMP
    omp_set_dynamic(0); /* the OpenMP loops split their work over exactly nthreads() threads */
#endif
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_ITERATIONS, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"n", required_argument, NULL, 'n'}, {"sort-n", required_argument, NULL, 's'},
                                       {"only", required_argument, NULL, 'o'},
                                       {"omp-reps", required_argument, NULL, 'm'},
                                       {"cub", required_argument, NULL, 'c'}, BENCH_OPT_END};
    bench_opts o = {.iters = 3, .reps = 7};
    uint64_t n = 0, sn = 0;
    int omp_reps = 0;
    const char *only = NULL, *cub_path = NULL;
    cli cl;
    cli_init(&cl, "ka-bench primitives", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st;
        switch (r) {
        case 'n':
            if (cli_u64(&cl, arg, 1, 1ull << 34, &n)) return KA_EXIT_USAGE;
            break;
        case 's':
            if (cli_u64(&cl, arg, 1, 1ull << 34, &sn)) return KA_EXIT_USAGE;
            break;
        case 'm':
            if (cli_int(&cl, arg, 1, BENCH_MAX_REPS, &omp_reps)) return KA_EXIT_USAGE;
            break;
        case 'o': only = arg; break;
        case 'c': cub_path = arg; break;
        default:
            if ((st = bench_option(&cl, r, arg, &o)) >= 0) return st;
        }
    }
    /* --only: names or prefixes of rows. */
    for (int i = 0; i < NR; i++) rows[i].on = !only;
    if (only) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", only);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            int hit = 0;
            for (int i = 0; i < NR; i++)
                if (!strncmp(rows[i].key, tok, strlen(tok))) rows[i].on = hit = 1;
            if (!hit) return cli_error(&cl, "--only: no row '%s' (see --help)", tok);
        }
    }
    ctx C = {0}, *c = &C;
    if (cli_device_open(&cl, o.sel, &c->dev)) return KA_EXIT_FAIL;
    ka_device_get_info(c->dev, &c->di);
    const ka_device_info *di = c->di;
    if (!n) n = di->is_cpu ? 1u << 24 : 1u << 28;
    if (!sn) sn = n;
    if (!omp_reps) omp_reps = di->is_cpu || o.reps < 3 ? o.reps : 3;
    if (omp_reps > o.reps) omp_reps = o.reps;
    c->n = n, c->sn = sn, c->m = 1u << 20;
    c->T = nthreads();
    CHECK(ka_queue_create(c->dev, NULL, &c->q));
    c->part = malloc((size_t)c->T * sizeof *c->part);
    c->cnt = malloc((size_t)c->T * sizeof *c->cnt);
    c->tc = malloc((size_t)c->T * sizeof *c->tc);
    if (!c->part || !c->cnt || !c->tc) FAIL("out of host memory");

    /* CUB: on a CUDA device, where its object loads. */
    char cub_state[300] = "not a CUDA device";
    int cub = 0;
    /* An explicit --cub PATH loads on any device: a stand-in object tests the CUB columns without a GPU. */
    if (di->backend == KA_BACKEND_CUDA || (cub_path && strcmp(cub_path, "none"))) {
        if (cub_path && !strcmp(cub_path, "none")) snprintf(cub_state, sizeof cub_state, "CUB not run (--cub none)");
        else if (cub_open(&c->cub, cub_path, cub_state, sizeof cub_state) == 0) {
            cub = 1;
            c->cub_ordinal = atoi(strchr(di->selector, ':') ? strchr(di->selector, ':') + 1 : "0");
            snprintf(cub_state, sizeof cub_state, "CUB %d.%d.%d", c->cub.version() / 100000,
                     c->cub.version() / 100 % 1000, c->cub.version() % 100);
        }
    }

    /* Each row: its plan and inputs, a first call (not available where refused), CUB's setup. */
    for (int id = 0; id < NR; id++) {
        row *r = &rows[id];
        if (!r->on) continue;
        if (setup_row(c, r, id)) return 1;
        if (r->avail) {
            if (prepare(c, r, id, KA)) return 1;
            ka_status st = ka_call(c, r, id);
            if (st != KA_OK && refused(r, st, "first call")) return 1;
        }
        if (!r->avail) continue;
        if (!r->cub) snprintf(r->cub_na, sizeof r->cub_na, "no CUB call");
        else if (!cub) snprintf(r->cub_na, sizeof r->cub_na, "%.250s", cub_state);
        else r->cub_on = cub_setup(c, r, id) == 0;
        for (int i = 0; i < NI; i++)
            if (!(r->t[i] = calloc((size_t)o.reps, sizeof(double)))) FAIL("out of host memory");
    }

    /* The runs: every (row, implementation), rotated by one each repetition so
     * that drift favours none; rep -1 warms up. */
    int order[NR * NI], no = 0;
    for (int id = 0; id < NR; id++)
        for (int i = 0; i < NI; i++)
            if (rows[id].on && rows[id].avail && (i != CUB || rows[id].cub_on)) order[no++] = id * NI + i;
    for (int rep = -1; rep < o.reps; rep++) {
        for (int turn = 0; turn < no; turn++) {
            int e = order[(turn + (rep < 0 ? 0 : rep)) % no], id = e / NI, impl = e % NI;
            row *r = &rows[id];
            if ((impl == OMP && rep >= omp_reps) || (impl == CUB && !r->cub_on)) continue;
            int it = rep < 0 || r->heavy ? 1 : o.iters;
            if (prepare(c, r, id, impl)) return 1;
            if (di->is_cpu) bench_quiet(); /* the last run's spinning threads (PoCL's, OpenMP's) asleep first */
            int64_t t0 = bench_now_ns();
            for (int k = 0; k < it; k++) {
                if (impl == KA) {
                    if (ka_call(c, r, id) != KA_OK) FAIL("%s: %s", r->key, ka_last_error());
                } else if (impl == OMP) {
                    omp_call(c, r, id);
                } else if (c->cub.run(r->key)) { /* the row goes on without CUB, which says why */
                    snprintf(r->cub_na, sizeof r->cub_na, "CUB failed: %s", c->cub.error());
                    fprintf(stderr, "ka-bench primitives: %s: %s\n", r->key, r->cub_na);
                    r->cub_on = 0;
                    break;
                }
            }
            int64_t t1 = bench_now_ns();
            if (rep >= 0) r->t[impl][rep] = (double)(t1 - t0) / it;
        }
    }

    int bad = 0;
    for (int id = 0; id < NR; id++) {
        row *r = &rows[id];
        if (!r->on || !r->avail) continue;
        if (check_row(c, r, id)) return 1;
        for (int i = 0; i < NI; i++) bad |= r->bad[i];
    }

    /* Medians, rates, ratios (speed ratios: the other's time / libka's). */
    if (o.json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"backend\":\"%s\",\"is_cpu\":%s,\"n\":%llu,\"sort_n\":%llu,"
               "\"search_sorted_n\":%zu,\"segments\":%zu,\"iterations\":%d,\"reps\":%d,\"omp_reps\":%d,"
               "\"host_threads\":%d",
               di->name, di->selector, ka_backend_name(di->backend), di->is_cpu ? "true" : "false",
               (unsigned long long)n, (unsigned long long)sn, c->m, c->nseg, o.iters, o.reps, omp_reps, c->T);
        json_str("cub", cub_state);
        printf(",\"checked\":%s,\"rows\":[", bad ? "false" : "true");
    } else {
        printf("ka-bench primitives on %s (%s): n = %llu, sort n = %llu, %d calls x %d interleaved reps (OpenMP %d), "
               "host %d OpenMP threads, %s; results %s\n",
               di->name, di->selector, (unsigned long long)n, (unsigned long long)sn, o.iters, o.reps, omp_reps, c->T,
               cub_state, bad ? "WRONG" : "checked");
        printf("speed ratios: the other's time / libka's (> 1: libka faster); goals in [], * missed\n");
        printf("%-32s %9s %9s %6s | %9s %9s %7s | %9s %9s %7s\n", "row", "libka ms", "rate", "unit", "OpenMP ms",
               "rate", "ka/OMP", "CUB ms", "rate", "ka/CUB");
    }
    int first = 1;
    for (int id = 0; id < NR; id++) {
        row *r = &rows[id];
        if (!r->on) continue;
        double med[NI] = {0}, mn[NI] = {0};
        if (r->avail)
            for (int i = 0; i < NI; i++) {
                int k = i == OMP ? omp_reps : o.reps;
                if (i == CUB && !r->cub_on) continue;
                med[i] = bench_median(r->t[i], k), mn[i] = bench_min(r->t[i], k);
            }
        int has_cub = r->avail && r->cub_on;
        double vo = r->avail ? med[OMP] / med[KA] : 0, vc = has_cub ? med[CUB] / med[KA] : 0;
        const char *unit = r->unit == GBS ? "GB/s" : r->unit == GKEYS ? "Gkey/s" : "Gel/s";
        if (o.json) {
            printf("%s{\"row\":\"%s\"", first ? "" : ",", r->key);
            json_str("label", r->label);
            printf(",\"available\":%s", r->avail ? "true" : "false");
            json_str("not_available", r->avail ? NULL : r->na);
            printf(",\"unit\":\"%s\",\"count\":%zu", unit, r->count);
            json_num("ka_ms", med[KA] / 1e6, r->avail);
            json_num("ka_min_ms", mn[KA] / 1e6, r->avail);
            json_num("ka_rate", rate(c, r, med[KA]), r->avail);
            json_num("omp_ms", med[OMP] / 1e6, r->avail);
            json_num("omp_rate", rate(c, r, med[OMP]), r->avail);
            json_num("ka_vs_omp", vo, r->avail);
            json_num("goal_vs_omp", r->goal_cpu, di->is_cpu && r->goal_cpu > 0);
            json_str("cub_call", r->cub);
            json_str("cub_not_available", r->avail && !has_cub ? r->cub_na : NULL);
            json_num("cub_ms", med[CUB] / 1e6, has_cub);
            json_num("cub_min_ms", mn[CUB] / 1e6, has_cub);
            json_num("cub_rate", rate(c, r, med[CUB]), has_cub);
            json_num("ka_vs_cub", vc, has_cub);
            json_num("goal_vs_cub", r->goal_cub, r->goal_cub > 0);
            int wrong = r->bad[KA] || r->bad[OMP] || r->bad[CUB];
            printf(",\"checked\":%s}", !r->avail ? "null" : wrong ? "false" : "true");
            first = 0;
        } else if (!r->avail) {
            printf("%-32s not available: %s\n", r->label, r->na);
        } else {
            char gk[32] = "", gc[32] = "", cb[sizeof r->cub_na + 32];
            if (di->is_cpu && r->goal_cpu > 0)
                snprintf(gk, sizeof gk, " [%.2f]%s", r->goal_cpu, vo >= r->goal_cpu ? "" : "*");
            if (has_cub && r->goal_cub > 0)
                snprintf(gc, sizeof gc, " [%.2f]%s", r->goal_cub, vc >= r->goal_cub ? "" : "*");
            if (has_cub) snprintf(cb, sizeof cb, "%9.3f %9.3f %7.3f", med[CUB] / 1e6, rate(c, r, med[CUB]), vc);
            else snprintf(cb, sizeof cb, "%s", r->cub ? r->cub_na : "-");
            printf("%-32s %9.3f %9.3f %6s | %9.3f %9.3f %7.3f%s | %s%s%s\n", r->label, med[KA] / 1e6,
                   rate(c, r, med[KA]), unit, med[OMP] / 1e6, rate(c, r, med[OMP]), vo, gk, cb, gc,
                   r->bad[KA] || r->bad[OMP] || r->bad[CUB] ? "  WRONG" : "");
        }
    }
    if (o.json) printf("]}\n");

    for (int id = 0; id < NR; id++) {
        row *r = &rows[id];
        for (int i = 0; i < NI; i++) free(r->t[i]);
        for (int i = 0; i < 4; i++) free(r->h[i]);
        for (int i = 0; i < 2; i++)
            if (r->b[i].id) ka_buffer_release(r->b[i]);
        ka_prims_plan_release(r->plan);
    }
    ka_buffer bs[] = {c->bu, c->bf, c->bk, c->bk64, c->biota, c->bflags, c->bsorted, c->bneedles, c->boff};
    for (size_t i = 0; i < sizeof bs / sizeof bs[0]; i++)
        if (bs[i].id) ka_buffer_release(bs[i]);
    free(c->hu), free(c->hk), free(c->hiota), free(c->hsorted), free(c->hneedles), free(c->hf), free(c->hk64);
    free(c->hoff), free(c->hflags), free(c->part), free(c->cnt), free(c->tc);
    if (cub) c->cub.release(); /* the object stays loaded: CUDA's runtime may still hold threads of it */
    ka_queue_release(c->q);
    ka_device_close(c->dev);
    return bad;
}
