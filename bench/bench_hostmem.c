/* ka-bench hostmem: a time loop whose every step launches a kernel over a
 * field of N floats and then reads the field on the host, as a simulation
 * that looks at its state each step does. Four ways to get the field to the
 * host, interleaved per repetition, medians:
 *   copy:       a device buffer, ka_buffer_read of the field into user memory
 *               (pageable), and into ka_host_alloc's (page-locked on CUDA);
 *   wrap+map:   the user's memory wrapped (ka_buffer_wrap), map + unmap (the
 *               portable way: no copy where the device works in host memory);
 *   buffer+map: a device buffer, map + unmap (a copy where the driver keeps
 *               device memory apart);
 *   wrap+finish: the wrapped memory read after ka_queue_finish, no map: what
 *               PoCL allows (not portable), the floor of the others.
 * Every step's result is checked. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

static const char *src =
    "KA_KERNEL(field_step, KA_GLOBAL float *y, float t) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    y[i] = y[i] * 0.5f + t;\n"
    "}\n";

enum { COPY, COPY_PINNED, WRAP_MAP, BUF_MAP, WRAP_FINISH, NKINDS };
static const char *names[NKINDS] = {"copy: ka_buffer_read", "copy into ka_host_alloc memory", "wrap + map/unmap",
                                    "device buffer + map/unmap", "wrap + finish (in place, PoCL)"};
static const char *keys[NKINDS] = {"copy", "copy_pinned", "wrap_map", "buffer_map", "wrap_finish"};

static const char usage[] =
    "usage: ka-bench hostmem [--device SEL] [--n N] [--iterations I] [--reps R] [--json]\n"
    "  A time loop: each step launches a kernel over N floats and reads the N floats on the host,\n"
    "  through ka_buffer_read of a device buffer (into malloc'd and into ka_host_alloc'd memory),\n"
    "  through a map of the user's memory wrapped with\n"
    "  ka_buffer_wrap, through a map of a device buffer, and (PoCL only) in place after\n"
    "  ka_queue_finish. I steps per repetition, R repetitions interleaved, medians per step.\n"
    "  N: 1 to 4294967295; I: at least 1; R: 1 to 100000. Default: N = 4M, --iterations 20 --reps 11.\n";

#define CHECK(call) BENCH_CHECK("hostmem", call)

typedef struct loop {
    ka_queue q;
    ka_kernel k;
    ka_range r;
    size_t n;
} loop;

/* One variant's I steps; *val tracks the field's value (all elements equal). */
static int run(const loop *L, int kind, ka_buffer b, float *host, float *user, float *pinned, int iters, float *val,
               double *ns) {
    size_t bytes = L->n * sizeof(float);
    int64_t t0 = bench_now_ns();
    for (int s = 0; s < iters; s++) {
        float t = (float)(s & 7);
        ka_arg a[] = {ka_arg_buffer(b), ka_arg_f32(t)};
        CHECK(ka_launch(L->q, L->k, &L->r, a, 2, NULL));
        *val = *val * 0.5f + t;
        const float *seen;
        void *m = NULL;
        if (kind == COPY || kind == COPY_PINNED) {
            /* Pageable memory against page-locked (CUDA: cuMemHostAlloc; PoCL: the same plain memory). */
            seen = kind == COPY ? user : pinned;
            CHECK(ka_buffer_read(L->q, (void *)seen, b, 0, bytes));
        } else if (kind == WRAP_FINISH) {
            CHECK(ka_queue_finish(L->q));
            seen = host;
        } else {
            CHECK(ka_buffer_map(L->q, b, 0, bytes, KA_MAP_READ, &m));
            seen = m;
        }
        /* The host looks at the field: first, middle and last element. */
        if (seen[0] != *val || seen[L->n / 2] != *val || seen[L->n - 1] != *val) {
            fprintf(stderr, "ka-bench hostmem: %s: step %d: %g, %g, %g, expected %g\n", names[kind], s, (double)seen[0],
                    (double)seen[L->n / 2], (double)seen[L->n - 1], (double)*val);
            return 1;
        }
        if (m) CHECK(ka_buffer_unmap(L->q, b, m));
    }
    *ns = (double)(bench_now_ns() - t0) / iters;
    return 0;
}

int bench_hostmem_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_ITERATIONS, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"n", required_argument, NULL, 'n'}, BENCH_OPT_END};
    bench_opts o = {.iters = 20, .reps = 11};
    uint64_t n = 4u << 20;
    cli cl;
    cli_init(&cl, "ka-bench hostmem", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st;
        if (r == 'n') {
            if (cli_u64(&cl, arg, 1, UINT32_MAX, &n)) return KA_EXIT_USAGE;
        } else if ((st = bench_option(&cl, r, arg, &o)) >= 0) {
            return st;
        }
    }
    ka_device dev;
    if (cli_device_open(&cl, o.sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    bool pocl = strstr(di->platform, "Portable Computing Language") != NULL;
    loop L = {.n = (size_t)n, .r = {.dims = 1, .size = {n}}};
    size_t bytes = L.n * sizeof(float);
    CHECK(ka_queue_create(dev, NULL, &L.q));
    ka_program prog;
    CHECK(ka_program_build(dev, src, NULL, &prog));
    CHECK(ka_kernel_get(prog, "field_step", NULL, &L.k));
    float *host, *user = malloc(bytes);
    if (!user) return 1;
    float *pinned;
    CHECK(ka_host_alloc(dev, bytes, (void **)&host));
    CHECK(ka_host_alloc(dev, bytes, (void **)&pinned));
    for (size_t i = 0; i < L.n; i++) host[i] = user[i] = 1.0f;
    ka_buffer b[NKINDS];
    CHECK(ka_buffer_create_with(dev, bytes, user, &b[COPY]));
    CHECK(ka_buffer_create_with(dev, bytes, user, &b[COPY_PINNED]));
    CHECK(ka_buffer_wrap(dev, host, bytes, &b[WRAP_MAP]));
    b[WRAP_FINISH] = b[WRAP_MAP];
    CHECK(ka_buffer_create_with(dev, bytes, user, &b[BUF_MAP]));
    float val[NKINDS] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    val[WRAP_FINISH] = 0; /* shares the wrapped buffer: tracked through WRAP_MAP's value */
    int nk = pocl ? NKINDS : WRAP_FINISH; /* in place without a map is PoCL's alone */
    double *t[NKINDS];
    for (int j = 0; j < NKINDS; j++)
        if (!(t[j] = calloc((size_t)o.reps, sizeof(double)))) return 1;
    /* One warm-up repetition (kernel builds, first maps), then R interleaved. */
    for (int rep = -1; rep < o.reps; rep++)
        for (int j = 0; j < nk; j++) {
            double ns;
            float *v = &val[j == WRAP_FINISH ? WRAP_MAP : j];
            if (run(&L, j, b[j], host, user, pinned, o.iters, v, &ns)) return 1;
            if (rep >= 0) t[j][rep] = ns;
        }
    /* Ratios per repetition first (its variants ran back to back, under the
     * same load), then their median: steadier on a busy machine. */
    double *ratio = calloc((size_t)o.reps, sizeof(double)), *ratio_b = calloc((size_t)o.reps, sizeof(double));
    if (!ratio || !ratio_b) return 1;
    for (int rep = 0; rep < o.reps; rep++) {
        ratio[rep] = t[COPY][rep] / t[WRAP_MAP][rep];
        ratio_b[rep] = t[COPY][rep] / t[BUF_MAP][rep];
    }
    double r_wrap = bench_median(ratio, o.reps), r_buf = bench_median(ratio_b, o.reps);
    free(ratio);
    free(ratio_b);
    double med[NKINDS] = {0}, mn[NKINDS] = {0}, mx[NKINDS] = {0};
    for (int j = 0; j < nk; j++) {
        mn[j] = bench_min(t[j], o.reps);
        mx[j] = bench_max(t[j], o.reps);
        med[j] = bench_median(t[j], o.reps);
    }
    if (o.json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"n\":%llu,\"bytes\":%zu,\"iterations\":%d,\"reps\":%d", di->name,
               di->selector, (unsigned long long)n, bytes, o.iters, o.reps);
        for (int j = 0; j < nk; j++)
            printf(",\"%s_ns\":%.0f,\"%s_min_ns\":%.0f,\"%s_max_ns\":%.0f", keys[j], med[j], keys[j], mn[j], keys[j], mx[j]);
        printf(",\"copy_over_wrap_map\":%.3f,\"copy_over_buffer_map\":%.3f,\"copy_over_copy_pinned\":%.3f}\n", r_wrap,
               r_buf, med[COPY] / med[COPY_PINNED]);
    } else {
        printf("ka-bench hostmem on %s (%s): a step = a kernel over %llu floats (%.1f MB) + the field on the host; "
               "%d steps x %d reps, medians\n",
               di->name, di->selector, (unsigned long long)n, (double)bytes / 1e6, o.iters, o.reps);
        printf("%-34s %-30s\n", "how the host gets the field", "us per step (median [min, max])");
        for (int j = 0; j < nk; j++) printf("%-34s %.1f [%.1f, %.1f]\n", names[j], med[j] / 1e3, mn[j] / 1e3, mx[j] / 1e3);
        printf("time of copy / wrap+map: %.2f; copy / buffer+map: %.2f (medians of the per-repetition ratios)\n", r_wrap,
               r_buf);
        printf("copy into malloc'd / into ka_host_alloc'd memory: %.2f\n", med[COPY] / med[COPY_PINNED]);
    }
    for (int j = 0; j < NKINDS; j++) free(t[j]);
    ka_buffer_release(b[COPY]);
    ka_buffer_release(b[COPY_PINNED]);
    ka_host_free(dev, pinned);
    ka_buffer_release(b[WRAP_MAP]);
    ka_buffer_release(b[BUF_MAP]);
    ka_host_free(dev, host);
    free(user);
    ka_program_release(prog);
    ka_queue_release(L.q);
    ka_device_close(dev);
    return 0;
}
