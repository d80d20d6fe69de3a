/* ka-bench timeloop: a 2-D time loop through libka, against the same loop in
 * serial C and with an OpenMP `parallel for` (the loop a C user would write
 * instead), for grid sizes 16 to 4096: the heat equation (one 5-point
 * stencil launch per step, ping-pong buffers) or, with --kernels 6, a
 * shallow-water-like step of six launches. On a device with PoCL routing,
 * libka runs three queues: the default (adaptive routing), every launch
 * inline (inline_max_items past any grid) and routing off (KA_INLINE_OFF).
 * Per size: a warm-up that also checks every result equal bit for bit, then
 * R repetitions interleaved (each implementation in turn), each S steps and
 * its final wait; medians, in us per step. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "bench_timeloop.h"

static const char *ka_src =
    "KA_KERNEL(heat, KA_GLOBAL float *dst, KA_GLOBAL const float *src, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t x = ka_global_id(0), y = ka_global_id(1), i = y * n + x;\n"
    "    if (x == 0 || y == 0 || x == n - 1 || y == n - 1) { dst[i] = src[i]; return; }\n"
    "    dst[i] = ((((src[i] + src[i - 1]) + src[i + 1]) + src[i - n]) + src[i + n]) * 0.2f;\n"
    "}\n"
    "#define SW_CELL if (!ka_in_range()) return; \\\n"
    "    size_t x = ka_global_id(0), y = ka_global_id(1), i = y * n + x; \\\n"
    "    size_t xp = x == n - 1 ? i : i + 1, xm = x == 0 ? i : i - 1; \\\n"
    "    size_t yp = y == n - 1 ? i : i + n, ym = y == 0 ? i : i - n; \\\n"
    "    (void)xp, (void)xm, (void)yp, (void)ym\n"
    "KA_KERNEL(sw_fx, KA_GLOBAL float *fx, KA_GLOBAL const float *h, KA_GLOBAL const float *u, uint n) {\n"
    "    SW_CELL; fx[i] = ((h[i] + h[xp]) + (u[i] + u[xp])) * 0.25f;\n"
    "}\n"
    "KA_KERNEL(sw_fy, KA_GLOBAL float *fy, KA_GLOBAL const float *h, KA_GLOBAL const float *v, uint n) {\n"
    "    SW_CELL; fy[i] = ((h[i] + h[yp]) + (v[i] + v[yp])) * 0.25f;\n"
    "}\n"
    "KA_KERNEL(sw_h, KA_GLOBAL float *ht, KA_GLOBAL const float *h, KA_GLOBAL const float *fx,\n"
    "          KA_GLOBAL const float *fy, uint n) {\n"
    "    SW_CELL; ht[i] = ((h[i] + fx[xm]) + (fx[i] + fy[ym])) * 0.25f;\n"
    "}\n"
    "KA_KERNEL(sw_u, KA_GLOBAL float *uo, KA_GLOBAL const float *u, KA_GLOBAL const float *fx,\n"
    "          KA_GLOBAL const float *ht, uint n) {\n"
    "    SW_CELL; uo[i] = ((u[i] + fx[i]) + (ht[i] + ht[xp])) * 0.25f;\n"
    "}\n"
    "KA_KERNEL(sw_v, KA_GLOBAL float *vo, KA_GLOBAL const float *v, KA_GLOBAL const float *fy,\n"
    "          KA_GLOBAL const float *ht, uint n) {\n"
    "    SW_CELL; vo[i] = ((v[i] + fy[i]) + (ht[i] + ht[yp])) * 0.25f;\n"
    "}\n";

static const char usage[] =
    "usage: ka-bench timeloop [--device SEL] [--sizes N,N,...] [--steps S] [--kernels K] [--wg X,Y] [--reps R]\n"
    "                         [--json]\n"
    "  A 2-D time loop on an N x N float grid with ping-pong buffers: serial C, OpenMP `parallel for`\n"
    "  over the rows ($OMP_NUM_THREADS threads, default all cores) and libka (one launch per kernel\n"
    "  and step, one wait per run), in microseconds per step and as ratios. K = 1 (default): the heat\n"
    "  equation, one 5-point stencil per step; K = 6: a shallow-water-like step of six stencils over\n"
    "  three fields. On a device with PoCL routing libka runs three queues, interleaved: the default\n"
    "  (adaptive routing), every launch inline (inline_max_items past the grid) and routing off\n"
    "  (KA_INLINE_OFF), with default / min(inline, off) and the default queue's inline launches per\n"
    "  repetition. Every result is checked equal to the serial loop's bit for bit.\n"
    "  The serial and OpenMP loops are compiled -O3 -ffp-contract=off whatever the build type, on\n"
    "  x86-64 for the best vector ISA of the running CPU (AVX-512, AVX2 or baseline clones).\n"
    "  N: 3 to 16384 each, up to 16 sizes (default 16,64,256,1024,4096); S: steps per run, 1 to\n"
    "  1000000 (default: 2^22 / N^2, at least 10 and at most 2000); R: interleaved repetitions,\n"
    "  medians (default 7, at most 64). X,Y: libka's work-group, 1 to 1024 each (default: libka's choice).\n";

#define MAX_SIZES 16
#define MAX_REPS 64
/* serial, OpenMP, then libka's queues: the default, all inline, routing off. */
enum { SERIAL, OPENMP, KA_DEFAULT, KA_INLINE, KA_OFF, NIMPL };
static const char *keys[NIMPL] = {"serial", "openmp", "ka", "ka_inline", "ka_off"};
#define MAX_ARRAYS SW_ARRAYS

typedef struct kaloop {
    int kernels;              /* 1 or 6 */
    int nimpl;                /* KA_DEFAULT + 1 without routing, else NIMPL */
    ka_queue q[NIMPL];        /* by implementation, from KA_DEFAULT */
    ka_program prog[NIMPL];   /* one per queue: a kernel's routing record is its own */
    ka_kernel k[NIMPL][6];    /* heat, or sw_fx, sw_fy, sw_h, sw_u, sw_v, heat */
    uint32_t wg[2];           /* --wg; 0, 0: libka's choice */
} kaloop;

static int narrays(int kernels) { return kernels == 1 ? 2 : SW_ARRAYS; }

static ka_status launch(const kaloop *L, int j, int kernel, size_t n, const ka_buffer *bufs, const int *idx, uint32_t nb) {
    ka_range r = {.dims = 2, .size = {n, n}, .workgroup = {L->wg[0], L->wg[1]}};
    ka_arg args[5];
    for (uint32_t a = 0; a < nb; a++) args[a] = ka_arg_buffer(bufs[idx[a]]);
    args[nb] = ka_arg_u32((uint32_t)n);
    return ka_launch(L->q[j], L->k[j][kernel], &r, args, nb + 1, NULL);
}

/* `steps` steps on implementation j's queue from state 0 (bufs[0], bufs[1]
 * for the heat equation; SW_* for the multi-kernel step), then its wait. */
static ka_status timeloop_ka(const kaloop *L, int j, size_t n, int steps, const ka_buffer *bufs) {
    ka_status st = KA_OK;
    for (int s = 0; s < steps && st == KA_OK; s++) {
        int src = s & 1, dst = src ^ 1;
        if (L->kernels == 1) {
            st = launch(L, j, 0, n, bufs, (int[]){dst, src}, 2);
            continue;
        }
        const int a[6][4] = {{SW_FX, SW_H(src), SW_U(src)},
                             {SW_FY, SW_H(src), SW_V(src)},
                             {SW_HT, SW_H(src), SW_FX, SW_FY},
                             {SW_U(dst), SW_U(src), SW_FX, SW_HT},
                             {SW_V(dst), SW_V(src), SW_FY, SW_HT},
                             {SW_H(dst), SW_HT}};
        static const uint32_t na[6] = {3, 3, 4, 4, 4, 2};
        for (int k = 0; k < 6 && st == KA_OK; k++) st = launch(L, j, k, n, bufs, a[k], na[k]);
    }
    return st == KA_OK ? ka_queue_finish(L->q[j]) : st;
}

/* Cold interior, a hot top edge and a pattern, so every cell changes; the
 * multi-kernel step's u and v other patterns. */
static void init_grid(float *g, size_t n, int field) {
    for (size_t y = 0; y < n; y++)
        for (size_t x = 0; x < n; x++)
            g[y * n + x] = field == 0 && y == 0 ? 100.0f : (float)((x * (7 + field) + y * (13 - field)) % 17) * 0.25f;
}

/* Comma-separated sizes into out; their count, or -1. */
static int parse_sizes(const cli *c, const char *arg, uint64_t *out) {
    int k = 0;
    const char *p = arg;
    for (;;) {
        char tok[32];
        size_t len = strcspn(p, ",");
        if (k == MAX_SIZES || len == 0 || len >= sizeof tok) {
            cli_error(c, "--sizes '%s': want 1 to %d sizes, each 3 to 16384, separated by commas", arg, MAX_SIZES);
            return -1;
        }
        memcpy(tok, p, len);
        tok[len] = 0;
        if (cli_u64(c, tok, 3, 16384, &out[k])) return -1;
        k++;
        if (!p[len]) return k;
        p += len + 1;
    }
}

#define CHECK(call) BENCH_CHECK("timeloop", call)

typedef struct row {
    uint64_t n;
    int steps;
    double us[NIMPL];
    uint64_t inl[MAX_REPS]; /* the default queue's launches that ran in the calling thread, per repetition */
    int equal;              /* every result equal to the serial loop's bit for bit */
} row;

/* One size: warm-up and check, then the interleaved repetitions. */
static int run_size(const kaloop *L, ka_device dev, uint64_t n, int steps, int reps, row *out) {
    size_t cells = (size_t)(n * n), bytes = cells * sizeof(float);
    int na = narrays(L->kernels), nimpl = L->nimpl;
    /* Host arrays of the reference loops and the first state, read back per queue. */
    float *g[NIMPL][MAX_ARRAYS] = {{0}};
    ka_buffer bufs[NIMPL][MAX_ARRAYS];
    for (int j = 0; j < nimpl; j++)
        for (int a = 0; a < na; a++)
            if (!(g[j][a] = malloc(bytes))) {
                fprintf(stderr, "ka-bench timeloop: out of memory for %llu x %llu\n", (unsigned long long)n,
                        (unsigned long long)n);
                return KA_EXIT_FAIL;
            }
    for (int j = 0; j < nimpl; j++)
        for (int a = 0; a < na; a++) {
            /* The heat equation's two buffers start equal; the multi-kernel
             * step's states by field, its temporaries zeroed. */
            int field = L->kernels == 1 ? 0 : a / 2;
            if (field < 3) init_grid(g[j][a], n, field);
            else memset(g[j][a], 0, bytes);
            if (j >= KA_DEFAULT) {
                CHECK(ka_buffer_create(dev, bytes, &bufs[j][a]));
                CHECK(ka_buffer_write(L->q[j], bufs[j][a], 0, g[j][a], bytes));
            }
        }
    /* Warm-up, and the check: the same even number of steps on each. PoCL
     * builds a kernel's work-group function at its first launch of a local
     * size; libka's routing measures both paths in its first launches. */
    int warm = steps < 64 ? 64 : steps;
    warm += warm & 1;
    out->equal = 1;
    for (int j = 0; j < nimpl; j++) {
        if (j == SERIAL) L->kernels == 1 ? timeloop_serial(g[j][0], g[j][1], n, warm) : sw_serial(g[j], n, warm);
        else if (j == OPENMP) L->kernels == 1 ? timeloop_omp(g[j][0], g[j][1], n, warm) : sw_omp(g[j], n, warm);
        else CHECK(timeloop_ka(L, j, n, warm, bufs[j]));
        /* State 0: the heat equation's a, the multi-kernel step's h, u, v. */
        for (int a = 0; a < (L->kernels == 1 ? 1 : 6); a += L->kernels == 1 ? 1 : 2) {
            if (j >= KA_DEFAULT) CHECK(ka_buffer_read(L->q[j], g[j][a], bufs[j][a], 0, bytes));
            if (memcmp(g[SERIAL][a], g[j][a], bytes)) out->equal = 0;
        }
    }
    double t[NIMPL][MAX_REPS];
    for (int r = 0; r < reps; r++)
        for (int j = 0; j < nimpl; j++) {
            ka_queue_stats s0, s1;
            if (j >= KA_DEFAULT) ka_queue_get_stats(L->q[j], &s0);
            /* The previous runtime's idle threads spin on for milliseconds
             * (libgomp's GOMP_SPINCOUNT, libka's pool): each run starts once
             * they sleep, not competing with them for cores. */
            bench_quiet();
            int64_t t0 = bench_now_ns();
            if (j == SERIAL) L->kernels == 1 ? timeloop_serial(g[j][0], g[j][1], n, steps) : sw_serial(g[j], n, steps);
            else if (j == OPENMP) L->kernels == 1 ? timeloop_omp(g[j][0], g[j][1], n, steps) : sw_omp(g[j], n, steps);
            else CHECK(timeloop_ka(L, j, n, steps, bufs[j]));
            t[j][r] = (double)(bench_now_ns() - t0) / steps;
            if (j == KA_DEFAULT) {
                ka_queue_get_stats(L->q[j], &s1);
                out->inl[r] = s1.inline_launches - s0.inline_launches;
            }
        }
    out->n = n;
    out->steps = steps;
    for (int j = 0; j < nimpl; j++) {
        out->us[j] = bench_median(t[j], reps) / 1e3;
        for (int a = 0; a < na; a++) {
            free(g[j][a]);
            if (j >= KA_DEFAULT) ka_buffer_release(bufs[j][a]);
        }
    }
    return 0;
}

static double best_other(const row *w) { return w->us[KA_INLINE] < w->us[KA_OFF] ? w->us[KA_INLINE] : w->us[KA_OFF]; }

int bench_timeloop_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"sizes", required_argument, NULL, 'z'}, {"steps", required_argument, NULL, 's'},
                                       {"kernels", required_argument, NULL, 'k'}, {"wg", required_argument, NULL, 'g'},
                                       BENCH_OPT_END};
    bench_opts o = {.reps = 7};
    uint64_t sizes[MAX_SIZES] = {16, 64, 256, 1024, 4096}, steps_opt = 0, kernels = 1;
    uint32_t wg[2] = {0, 0};
    int nsizes = 5;
    cli cl;
    cli_init(&cl, "ka-bench timeloop", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st;
        switch (r) {
        case 'z':
            if ((nsizes = parse_sizes(&cl, arg, sizes)) < 0) return KA_EXIT_USAGE;
            break;
        case 's':
            if (cli_u64(&cl, arg, 1, 1000000, &steps_opt)) return KA_EXIT_USAGE;
            break;
        case 'k':
            if (cli_u64(&cl, arg, 1, 6, &kernels)) return KA_EXIT_USAGE;
            if (kernels != 1 && kernels != 6) {
                cli_error(&cl, "--kernels '%s': want 1 (the heat equation) or 6 (the shallow-water-like step)", arg);
                return KA_EXIT_USAGE;
            }
            break;
        case 'g': {
            char x[16];
            const char *comma = strchr(arg, ',');
            size_t len = comma ? (size_t)(comma - arg) : 0;
            uint64_t wx, wy;
            if (!comma || !len || len >= sizeof x) {
                cli_error(&cl, "--wg '%s': want X,Y, each 1 to 1024", arg);
                return KA_EXIT_USAGE;
            }
            memcpy(x, arg, len);
            x[len] = 0;
            if (cli_u64(&cl, x, 1, 1024, &wx) || cli_u64(&cl, comma + 1, 1, 1024, &wy)) return KA_EXIT_USAGE;
            wg[0] = (uint32_t)wx, wg[1] = (uint32_t)wy;
            break;
        }
        default:
            if ((st = bench_option(&cl, r, arg, &o)) >= 0) return st;
        }
    }
    if (o.reps > MAX_REPS) {
        cli_error(&cl, "--reps %d: at most %d", o.reps, MAX_REPS);
        return KA_EXIT_USAGE;
    }
    ka_device dev;
    if (cli_device_open(&cl, o.sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    kaloop L = {.kernels = (int)kernels, .nimpl = NIMPL, .wg = {wg[0], wg[1]}};
    static const char *names[6] = {"sw_fx", "sw_fy", "sw_h", "sw_u", "sw_v", "heat"};
    /* inline_max_items past any grid (16384^2): every launch inline. */
    const ka_queue_config qc[NIMPL] = {[KA_INLINE] = {.inline_max_items = INT64_MAX},
                                       [KA_OFF] = {.inline_max_items = KA_INLINE_OFF}};
    for (int j = KA_DEFAULT; j < L.nimpl; j++) {
        CHECK(ka_queue_create(dev, j == KA_DEFAULT ? NULL : &qc[j], &L.q[j]));
        CHECK(ka_program_build(dev, ka_src, NULL, &L.prog[j]));
        for (int k = 0; k < L.kernels; k++)
            CHECK(ka_kernel_get(L.prog[j], L.kernels == 1 ? "heat" : names[k], NULL, &L.k[j][k]));
        if (j == KA_DEFAULT) {
            /* Without routing the three queues are the same: the default alone. */
            ka_queue_stats qs;
            ka_queue_get_stats(L.q[j], &qs);
            if (!qs.inline_max_items) L.nimpl = KA_DEFAULT + 1;
        }
    }
    int routing = L.nimpl == NIMPL;
    ka_queue_stats qs;
    ka_queue_get_stats(L.q[KA_DEFAULT], &qs);
    row rows[MAX_SIZES];
    int bad = 0;
    for (int i = 0; i < nsizes; i++) {
        uint64_t n = sizes[i], auto_steps = (4u << 20) / (n * n);
        int steps = steps_opt ? (int)steps_opt : auto_steps < 10 ? 10 : auto_steps > 2000 ? 2000 : (int)auto_steps;
        int st = run_size(&L, dev, n, steps, o.reps, &rows[i]);
        if (st) return st;
        if (!rows[i].equal) {
            fprintf(stderr, "ka-bench timeloop: %llu x %llu: the results differ\n", (unsigned long long)n,
                    (unsigned long long)n);
            bad = 1;
        }
        if (!o.json) {
            if (i == 0) {
                printf("ka-bench timeloop --kernels %d on %s (%s): OpenMP %d threads%s; libka's default queue (routing "
                       "limit %llu work-items)%s; %d interleaved reps, medians, us per step\n",
                       L.kernels, di->name, di->selector, bench_omp_threads(),
                       bench_omp_threads() ? "" : " (built without OpenMP: serial)",
                       (unsigned long long)qs.inline_max_items,
                       routing ? ", all inline, routing off" : "", o.reps);
                printf("%6s %6s %10s %10s %10s", "N", "steps", "serial", "openmp", "libka");
                if (routing) printf(" %10s %10s %8s", "inline", "off", "def/best");
                printf(" %8s %6s%s\n", "ka/omp", "equal", routing ? "  default queue's inline launches per rep" : "");
            }
            const row *w = &rows[i];
            printf("%6llu %6d %10.2f %10.2f %10.2f", (unsigned long long)w->n, w->steps, w->us[SERIAL], w->us[OPENMP],
                   w->us[KA_DEFAULT]);
            if (routing) printf(" %10.2f %10.2f %8.3f", w->us[KA_INLINE], w->us[KA_OFF], w->us[KA_DEFAULT] / best_other(w));
            printf(" %8.3f %6s", w->us[KA_DEFAULT] / w->us[OPENMP], w->equal ? "yes" : "NO");
            if (routing) {
                printf("  ");
                for (int r = 0; r < o.reps; r++) printf("%s%llu", r ? "," : "", (unsigned long long)w->inl[r]);
                printf(" of %d", w->steps * L.kernels);
            }
            printf("\n");
            fflush(stdout);
        }
    }
    if (o.json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"kernels\":%d,\"omp_threads\":%d,\"inline_max_items\":%llu,"
               "\"routing\":%s,\"reps\":%d,\"workgroup\":[%u,%u],\"checked\":%s,\"sizes\":[",
               di->name, di->selector, L.kernels, bench_omp_threads(), (unsigned long long)qs.inline_max_items,
               routing ? "true" : "false", o.reps, wg[0], wg[1], bad ? "false" : "true");
        for (int i = 0; i < nsizes; i++) {
            const row *w = &rows[i];
            printf("%s{\"n\":%llu,\"steps\":%d,\"launches\":%d", i ? "," : "", (unsigned long long)w->n, w->steps,
                   w->steps * L.kernels);
            for (int j = 0; j < L.nimpl; j++) printf(",\"%s_us\":%.3f", keys[j], w->us[j]);
            printf(",\"ka_over_openmp\":%.4f,\"ka_over_serial\":%.4f", w->us[KA_DEFAULT] / w->us[OPENMP],
                   w->us[KA_DEFAULT] / w->us[SERIAL]);
            uint64_t inl = 0;
            for (int r = 0; r < o.reps; r++) inl += w->inl[r];
            printf(",\"ka_inline_fraction\":%.4f", (double)inl / ((double)o.reps * w->steps * L.kernels));
            if (routing) {
                printf(",\"default_over_best\":%.4f,\"ka_inline_launches\":[", w->us[KA_DEFAULT] / best_other(w));
                for (int r = 0; r < o.reps; r++) printf("%s%llu", r ? "," : "", (unsigned long long)w->inl[r]);
                printf("]");
            }
            printf(",\"equal\":%s}", w->equal ? "true" : "false");
        }
        printf("]}\n");
    }
    for (int j = KA_DEFAULT; j < L.nimpl; j++) {
        ka_program_release(L.prog[j]);
        ka_queue_release(L.q[j]);
    }
    ka_device_close(dev);
    return bad;
}
