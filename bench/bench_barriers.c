/* ka-bench barriers: kernels with work-group barriers and local memory, on
 * any device, so a CPU back-end's way of running them (the host back-end's
 * fibers, PoCL's work-item loops split at barriers) can be compared on one
 * machine: a tiled matrix product, a 256-bin histogram through local
 * atomics, and a block reduction by a tree in local memory. Each: launch +
 * wait, median of interleaved repetitions after a warm-up, result checked
 * against a host computation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

static const char *ka_src =
    "#define T 16\n"
    "KA_KERNEL(matmul, KA_GLOBAL float *c, KA_CONST(float) a, KA_CONST(float) b, uint n) {\n"
    "    KA_LOCAL float ta[T][T];\n"
    "    KA_LOCAL float tb[T][T];\n"
    "    size_t lx = ka_local_id(0), ly = ka_local_id(1), col = ka_global_id(0), row = ka_global_id(1);\n"
    "    float acc = 0.0f;\n"
    "    for (uint t = 0; t < n; t += T) {\n"
    "        ta[ly][lx] = a[row * n + t + lx];\n"
    "        tb[ly][lx] = b[(t + ly) * n + col];\n"
    "        ka_barrier();\n"
    "        for (uint k = 0; k < T; k++) acc += ta[ly][k] * tb[k][lx];\n"
    "        ka_barrier();\n"
    "    }\n"
    "    c[row * n + col] = acc;\n"
    "}\n"
    /* each group counts its items' elements (a grid-stride loop) in local memory, then adds them up */
    "KA_KERNEL(histogram, KA_GLOBAL uint *h, KA_CONST(uint) in, uint n) {\n"
    "    KA_LOCAL uint lh[256];\n"
    "    size_t l = ka_local_id(0), ls = ka_group_size(0), stride = ls * ka_num_groups(0);\n"
    "    for (size_t b = l; b < 256; b += ls) lh[b] = 0;\n"
    "    ka_barrier();\n"
    "    for (size_t i = ka_global_id(0); i < n; i += stride) ka_atomic_add(&lh[in[i] & 255u], 1u);\n"
    "    ka_barrier();\n"
    "    for (size_t b = l; b < 256; b += ls) if (lh[b]) ka_atomic_add(&h[b], lh[b]);\n"
    "}\n"
    /* one partial sum per group, by a tree in local memory (group size a power of two, at most 256) */
    "KA_KERNEL(block_sum, KA_GLOBAL float *out, KA_CONST(float) in, uint n) {\n"
    "    KA_LOCAL float s[256];\n"
    "    size_t l = ka_local_id(0), ls = ka_group_size(0), stride = ls * ka_num_groups(0);\n"
    "    float acc = 0.0f;\n"
    "    for (size_t i = ka_global_id(0); i < n; i += stride) acc += in[i];\n"
    "    s[l] = acc;\n"
    "    ka_barrier();\n"
    "    for (size_t h = ls / 2; h > 0; h /= 2) {\n"
    "        if (l < h) s[l] += s[l + h];\n"
    "        ka_barrier();\n"
    "    }\n"
    "    if (l == 0) out[ka_group_id(0)] = s[0];\n"
    "}\n";

static const char usage[] =
    "usage: ka-bench barriers [--device SEL] [--reps R] [--quick] [--json]\n"
    "  Kernels with work-group barriers and local memory, launch + wait each, ms (median of R\n"
    "  interleaved repetitions after a warm-up), results checked against the host:\n"
    "    matmul     C = A B, 1024 x 1024 floats, 16 x 16 tiles in local memory\n"
    "    histogram  256 bins of 2^24 uints, local atomics, then global ones (2^16 items)\n"
    "    reduce     sum of 2^24 floats, one partial per 256-item group by a tree (2^16 items)\n"
    "  --quick: 256 x 256 and 2^18 elements, for a check that it runs. R: default 5.\n";

enum { MATMUL, HISTOGRAM, REDUCE, NK };
static const char *names[NK] = {"matmul", "histogram", "reduce"};

#define CHECK(call) BENCH_CHECK("barriers", call)

typedef struct setup {
    ka_queue q;
    ka_kernel k[NK];
    ka_buffer a, b, c, u, h, f, part;
    uint32_t n, elems, items, groups;
} setup;

static ka_status launch(const setup *s, int which) {
    ka_arg args[4];
    ka_range r = {.dims = 1};
    if (which == MATMUL) {
        r = (ka_range){.dims = 2, .size = {s->n, s->n}, .workgroup = {16, 16}};
        args[0] = ka_arg_buffer(s->c), args[1] = ka_arg_buffer(s->a), args[2] = ka_arg_buffer(s->b);
        args[3] = ka_arg_u32(s->n);
    } else if (which == HISTOGRAM) {
        uint32_t zero = 0;
        ka_status st = ka_buffer_fill(s->q, s->h, 0, &zero, 4, 256 * 4, NULL);
        if (st != KA_OK) return st;
        r = (ka_range){.dims = 1, .size = {s->items}, .workgroup = {256}};
        args[0] = ka_arg_buffer(s->h), args[1] = ka_arg_buffer(s->u), args[2] = ka_arg_u32(s->elems);
    } else {
        r = (ka_range){.dims = 1, .size = {s->items}, .workgroup = {256}};
        args[0] = ka_arg_buffer(s->part), args[1] = ka_arg_buffer(s->f), args[2] = ka_arg_u32(s->elems);
    }
    ka_event ev;
    ka_status st = ka_launch(s->q, s->k[which], &r, args, which == MATMUL ? 4 : 3, &ev);
    if (st != KA_OK) return st;
    st = ka_event_wait(ev, KA_WAIT_FOREVER);
    ka_event_release(ev);
    return st;
}

/* The results against the host's: matmul at sampled entries, the histogram
 * exactly, the sum within a relative 1e-4. 0 when right. */
static int check(const setup *s, const float *ha, const float *hb, const uint32_t *hu, const float *hf) {
    int bad = 0;
    uint32_t n = s->n;
    float *c = malloc((size_t)n * n * sizeof *c);
    if (!c || ka_buffer_read(s->q, c, s->c, 0, (size_t)n * n * sizeof *c)) return 1;
    for (uint32_t t = 0; t < 64; t++) {
        uint32_t i = (t * 7919u) % n, j = (t * 104729u + 13u) % n;
        double want = 0;
        for (uint32_t k = 0; k < n; k++) want += (double)ha[(size_t)i * n + k] * hb[(size_t)k * n + j];
        if (fabs(c[(size_t)i * n + j] - want) > 1e-3 * (fabs(want) + 1)) {
            fprintf(stderr, "ka-bench barriers: matmul: c[%u][%u] = %g, want %g\n", i, j, c[(size_t)i * n + j], want);
            bad = 1;
            break;
        }
    }
    free(c);
    uint32_t h[256], want[256] = {0};
    if (ka_buffer_read(s->q, h, s->h, 0, sizeof h)) return 1;
    for (uint32_t i = 0; i < s->elems; i++) want[hu[i] & 255u]++;
    if (memcmp(h, want, sizeof h)) {
        fprintf(stderr, "ka-bench barriers: histogram differs from the host's\n");
        bad = 1;
    }
    float *p = malloc((size_t)s->groups * sizeof *p);
    if (!p || ka_buffer_read(s->q, p, s->part, 0, (size_t)s->groups * sizeof *p)) return 1;
    double sum = 0, ref = 0;
    for (uint32_t g = 0; g < s->groups; g++) sum += p[g];
    for (uint32_t i = 0; i < s->elems; i++) ref += hf[i];
    if (fabs(sum - ref) > 1e-4 * fabs(ref)) {
        fprintf(stderr, "ka-bench barriers: reduce: %g, want %g\n", sum, ref);
        bad = 1;
    }
    free(p);
    return bad;
}

int bench_barriers_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"quick", no_argument, NULL, 'q'}, BENCH_OPT_END};
    bench_opts o = {.reps = 5};
    int quick = 0;
    cli cl;
    cli_init(&cl, "ka-bench barriers", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st;
        if (r == 'q') quick = 1;
        else if ((st = bench_option(&cl, r, arg, &o)) >= 0) return st;
    }
    ka_device dev;
    if (cli_device_open(&cl, o.sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    setup s = {.n = quick ? 256 : 1024, .elems = quick ? 1u << 18 : 1u << 24, .items = quick ? 1u << 12 : 1u << 16};
    s.groups = s.items / 256;
    size_t mbytes = (size_t)s.n * s.n * sizeof(float), ebytes = (size_t)s.elems * 4;
    float *ha = malloc(mbytes), *hb = malloc(mbytes), *hf = malloc(ebytes);
    uint32_t *hu = malloc(ebytes);
    if (!ha || !hb || !hf || !hu) {
        fprintf(stderr, "ka-bench barriers: out of host memory\n");
        return KA_EXIT_FAIL;
    }
    uint32_t x = 12345;
    for (size_t i = 0; i < (size_t)s.n * s.n; i++) {
        x = x * 1664525u + 1013904223u;
        ha[i] = (float)(x >> 20) / 4096.0f - 0.5f;
        hb[i] = (float)((x >> 8) & 4095u) / 4096.0f - 0.5f;
    }
    for (uint32_t i = 0; i < s.elems; i++) {
        x = x * 1664525u + 1013904223u;
        hu[i] = x >> 7;
        hf[i] = (float)(x >> 24) / 256.0f;
    }
    ka_program prog;
    CHECK(ka_queue_create(dev, NULL, &s.q));
    CHECK(ka_program_build(dev, ka_src, NULL, &prog));
    for (int k = 0; k < NK; k++) CHECK(ka_kernel_get(prog, k == REDUCE ? "block_sum" : names[k], NULL, &s.k[k]));
    CHECK(ka_buffer_create(dev, mbytes, &s.a));
    CHECK(ka_buffer_create(dev, mbytes, &s.b));
    CHECK(ka_buffer_create(dev, mbytes, &s.c));
    CHECK(ka_buffer_create(dev, ebytes, &s.u));
    CHECK(ka_buffer_create(dev, ebytes, &s.f));
    CHECK(ka_buffer_create(dev, 256 * 4, &s.h));
    CHECK(ka_buffer_create(dev, (size_t)s.groups * sizeof(float), &s.part));
    CHECK(ka_buffer_write(s.q, s.a, 0, ha, mbytes));
    CHECK(ka_buffer_write(s.q, s.b, 0, hb, mbytes));
    CHECK(ka_buffer_write(s.q, s.u, 0, hu, ebytes));
    CHECK(ka_buffer_write(s.q, s.f, 0, hf, ebytes));
    for (int k = 0; k < NK; k++) CHECK(launch(&s, k)); /* warm-up: first-launch work, the check's results */
    int bad = check(&s, ha, hb, hu, hf);
    int reps = o.reps;
    double *t[NK];
    for (int k = 0; k < NK; k++) t[k] = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++)
        for (int j = 0; j < NK; j++) {
            int k = (j + r) % NK; /* rotate the order, so drift favours none */
            int64_t t0 = bench_now_ns();
            CHECK(launch(&s, k));
            t[k][r] = (double)(bench_now_ns() - t0) / 1e6;
        }
    double med[NK], mn[NK], mx[NK];
    for (int k = 0; k < NK; k++) {
        med[k] = bench_median(t[k], reps);
        mn[k] = bench_min(t[k], reps);
        mx[k] = bench_max(t[k], reps);
        free(t[k]);
    }
    if (o.json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"reps\":%d,\"n\":%u,\"elements\":%u,\"checked\":%s", di->name,
               di->selector, reps, s.n, s.elems, bad ? "false" : "true");
        for (int k = 0; k < NK; k++)
            printf(",\"%s_ms\":%.4f,\"%s_min_ms\":%.4f,\"%s_max_ms\":%.4f", names[k], med[k], names[k], mn[k], names[k],
                   mx[k]);
        printf("}\n");
    } else {
        printf("ka-bench barriers on %s (%s): %d interleaved reps, launch + wait, ms (median [min, max]); results %s\n",
               di->name, di->selector, reps, bad ? "WRONG" : "checked");
        printf("  matmul %u x %u      %9.3f [%.3f, %.3f]\n", s.n, s.n, med[MATMUL], mn[MATMUL], mx[MATMUL]);
        printf("  histogram of %u  %9.3f [%.3f, %.3f]\n", s.elems, med[HISTOGRAM], mn[HISTOGRAM], mx[HISTOGRAM]);
        printf("  reduce of %u     %9.3f [%.3f, %.3f]\n", s.elems, med[REDUCE], mn[REDUCE], mx[REDUCE]);
    }
    ka_buffer_release(s.a), ka_buffer_release(s.b), ka_buffer_release(s.c), ka_buffer_release(s.u);
    ka_buffer_release(s.f), ka_buffer_release(s.h), ka_buffer_release(s.part);
    ka_program_release(prog);
    ka_queue_release(s.q);
    ka_device_close(dev);
    free(ha), free(hb), free(hf), free(hu);
    return bad ? KA_EXIT_FAIL : 0;
}
