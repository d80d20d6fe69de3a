/* ka-bench timeloop: a 2-D or 3-D time loop through libka, against the same
 * loop in serial C and with an OpenMP `parallel for` (the loop a C user would
 * write instead), and on CUDA against the loop in hand-written CUDA: the heat
 * equation (one 5-point or 7-point stencil launch per step, ping-pong
 * buffers) or, with --kernels 6, a shallow-water-like step of six launches
 * (2-D). On a device with PoCL routing, libka runs three queues: the default
 * (adaptive routing), every launch inline (inline_max_items past any grid)
 * and routing off (KA_INLINE_OFF). libka's loop also as a ka_graph of two
 * steps replayed, the raw CUDA one as a CUDA graph of two steps. Per size:
 * every implementation's first two steps checked equal to the serial loop's
 * bit for bit, a warm-up, then R repetitions interleaved (each implementation
 * in turn), each S steps and its final wait; medians, in us per step. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cuda.h"
#include "bench_timeloop.h"

/* IDX: the stencils' index type (--define IDX=uint: 32-bit, as the hand-written ones). */
static const char *ka_src =
    "#ifndef IDX\n#define IDX size_t\n#endif\n"
    "KA_KERNEL(heat, KA_GLOBAL float *dst, KA_GLOBAL const float *src, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    IDX x = ka_global_id(0), y = ka_global_id(1), i = y * n + x;\n"
    "    if (x == 0 || y == 0 || x == n - 1 || y == n - 1) { dst[i] = src[i]; return; }\n"
    "    dst[i] = ((((src[i] + src[i - 1]) + src[i + 1]) + src[i - n]) + src[i + n]) * 0.2f;\n"
    "}\n"
    "KA_KERNEL(heat3, KA_GLOBAL float *dst, KA_GLOBAL const float *src, uint n) {\n"
    "    if (!ka_in_range()) return;\n"
    "    IDX x = ka_global_id(0), y = ka_global_id(1), z = ka_global_id(2), nn = (IDX)n * n;\n"
    "    IDX i = z * nn + y * n + x;\n"
    "    if (x == 0 || y == 0 || z == 0 || x == n - 1 || y == n - 1 || z == n - 1) { dst[i] = src[i]; return; }\n"
    "    dst[i] = ((((((src[i] + src[i - 1]) + src[i + 1]) + src[i - n]) + src[i + n]) + src[i - nn]) + src[i + nn])\n"
    "             * 0.14285715f;\n"
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

/* The stencil as a CUDA programmer writes it (bench_cu_build: NVRTC). */
static const char *cu_src[2] = {
    "extern \"C\" __global__ void heat(float *dst, const float *src, int n) {\n"
    "    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "    if (x >= n || y >= n) return;\n"
    "    int i = y * n + x;\n"
    "    if (x == 0 || y == 0 || x == n - 1 || y == n - 1) { dst[i] = src[i]; return; }\n"
    "    dst[i] = ((((src[i] + src[i - 1]) + src[i + 1]) + src[i - n]) + src[i + n]) * 0.2f;\n"
    "}\n",
    "extern \"C\" __global__ void heat3(float *dst, const float *src, int n) {\n"
    "    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "    int z = blockIdx.z * blockDim.z + threadIdx.z;\n"
    "    if (x >= n || y >= n || z >= n) return;\n"
    "    int nn = n * n, i = z * nn + y * n + x;\n"
    "    if (x == 0 || y == 0 || z == 0 || x == n - 1 || y == n - 1 || z == n - 1) { dst[i] = src[i]; return; }\n"
    "    dst[i] = ((((((src[i] + src[i - 1]) + src[i + 1]) + src[i - n]) + src[i + n]) + src[i - nn]) + src[i + nn])\n"
    "             * 0.14285715f;\n"
    "}\n"};

static const char usage[] =
    "usage: ka-bench timeloop [--device SEL] [--dims D] [--sizes N,N,...] [--steps S] [--kernels K] [--impl LIST]\n"
    "                         [--wg X,Y[,Z]] [--raw-wg X,Y[,Z]] [--define NAME[=V]]... [--reps R] [--json]\n"
    "       ka-bench timeloop --print-source ka|cuda\n"
    "  A time loop on an N x N (D = 2, default) or N x N x N (D = 3) float grid with ping-pong buffers:\n"
    "  serial C, OpenMP `parallel for` over the rows ($OMP_NUM_THREADS threads, default all cores) and\n"
    "  libka (one launch per kernel and step, one wait per run), in microseconds per step and as ratios.\n"
    "  K = 1 (default): the heat equation, one 5-point (2-D) or 7-point (3-D) stencil per step; K = 6\n"
    "  (2-D only): a shallow-water-like step of six stencils over three fields. On a device with PoCL\n"
    "  routing libka runs three queues, interleaved: the default (adaptive routing), every launch inline\n"
    "  (inline_max_items past the grid) and routing off (KA_INLINE_OFF), with default / min(inline, off)\n"
    "  and the default queue's inline launches per repetition. ka_graph: libka's two steps recorded once\n"
    "  (ka_graph_begin/end), replayed S/2 times, then ka_queue_finish. On CUDA (K = 1) also the stencil\n"
    "  hand-written in CUDA (int indices, compiled by NVRTC), one cuLaunchKernel per step on a stream of\n"
    "  its own (cuda), and its two steps captured into a CUDA graph replayed S/2 times, then\n"
    "  cuStreamSynchronize (cuda_graph), with ka / cuda and ka_graph / cuda_graph.\n"
    "  Before timing, every implementation's first two steps are checked equal to the serial loop's bit\n"
    "  for bit (exit status 1 when one differs); then a warm-up and R interleaved repetitions, medians.\n"
    "  The serial and OpenMP loops are compiled -O3 -ffp-contract=off whatever the build type, on\n"
    "  x86-64 for the best vector ISA of the running CPU (AVX-512, AVX2 or baseline clones).\n"
    "  LIST: the implementations timed, from serial, openmp, ka, ka_inline, ka_off, ka_graph, cuda,\n"
    "  cuda_graph, separated by commas (default: all the device has; the serial check runs always).\n"
    "  N: up to 16 sizes, 3 to 16384 each in 2-D (default 16,64,256,1024,4096), 3 to 1024 in 3-D\n"
    "  (default 64,128,256,512); S: steps per run, 1 to 1000000, made even (default: 2^22 / N^D, at\n"
    "  least 10 and at most 2000); R: interleaved repetitions, medians (default 7, at most 64).\n"
    "  --wg: libka's work-group, 1 to 1024 each (default: libka's choice; Z in 3-D: 1 when left out).\n"
    "  --raw-wg: the raw CUDA loop's blocks, 1 to 1024 each (default 32,8 in 2-D, 32,8,1 in 3-D).\n"
    "  --define: a macro for libka's build (ka_build_options.defines), up to 8; IDX=uint makes the\n"
    "  stencils' indices 32-bit like the hand-written ones' (default size_t).\n"
    "  --print-source ka|cuda: prints libka's kernels or the hand-written CUDA ones, and exits.\n";

#define MAX_SIZES 16
#define MAX_REPS 64
#define MAX_DEFINES 8
/* serial, OpenMP, libka's queues (the default, all inline, routing off), libka's graph, raw CUDA and its graph. */
enum { SERIAL, OPENMP, KA_DEFAULT, KA_INLINE, KA_OFF, KA_GRAPH, CUDA, CUDA_GRAPH, NIMPL };
static const char *keys[NIMPL] = {"serial", "openmp", "ka", "ka_inline", "ka_off", "ka_graph", "cuda", "cuda_graph"};
static const char *heads[NIMPL] = {"serial", "openmp", "libka", "inline", "off", "ka_graph", "cuda", "cuda_graph"};
#define IS_KA(j) ((j) >= KA_DEFAULT && (j) <= KA_GRAPH)
#define MAX_ARRAYS SW_ARRAYS

typedef struct kaloop {
    int kernels, dims;        /* 1 or 6; 2 or 3 */
    unsigned timed;           /* bit j: implementation j timed */
    ka_queue q[NIMPL];        /* by implementation, KA_DEFAULT to KA_GRAPH */
    ka_program prog[NIMPL];   /* one per queue: a kernel's routing record is its own */
    ka_kernel k[NIMPL][6];    /* heat (heat3), or sw_fx, sw_fy, sw_h, sw_u, sw_v, heat */
    uint32_t wg[3];           /* --wg; 0, 0, 0: libka's choice */
    bench_cu *cu;             /* raw CUDA, NULL elsewhere */
    unsigned raw_wg[3];       /* --raw-wg */
} kaloop;
#define TIMED(L, j) (((L)->timed >> (j)) & 1u)

/* One implementation's state at one size. */
typedef struct impl {
    float *h[MAX_ARRAYS];    /* serial, OpenMP */
    ka_buffer b[MAX_ARRAYS]; /* libka */
    ka_graph g;              /* ka_graph: two steps */
    bench_cu_stencil s;      /* raw CUDA */
} impl;

static int narrays(int kernels) { return kernels == 1 ? 2 : SW_ARRAYS; }

static ka_status launch(const kaloop *L, int j, int kernel, size_t n, const ka_buffer *bufs, const int *idx, uint32_t nb) {
    ka_range r = {.dims = (uint32_t)L->dims,
                  .size = {n, n, L->dims == 3 ? n : 1},
                  .workgroup = {L->wg[0], L->wg[1], L->wg[2]}};
    ka_arg args[5];
    for (uint32_t a = 0; a < nb; a++) args[a] = ka_arg_buffer(bufs[idx[a]]);
    args[nb] = ka_arg_u32((uint32_t)n);
    return ka_launch(L->q[j], L->k[j][kernel], &r, args, nb + 1, NULL);
}

/* The launches of `steps` steps on implementation j's queue from state 0
 * (bufs[0], bufs[1] for the heat equation; SW_* for the multi-kernel step). */
static ka_status ka_steps(const kaloop *L, int j, size_t n, int steps, const ka_buffer *bufs) {
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
    return st;
}

/* `steps` steps (even) of implementation j from its state 0, and its wait:
 * 0, or KA_EXIT_FAIL with the reason printed. */
static int run_steps(const kaloop *L, int j, size_t n, int steps, impl *m) {
    char why[512];
    ka_status st = KA_OK;
    switch (j) {
    case SERIAL:
    case OPENMP:
        if (L->kernels == 1) (j == OPENMP ? timeloop_omp : timeloop_serial)(m->h[0], m->h[1], n, L->dims, steps);
        else (j == OPENMP ? sw_omp : sw_serial)(m->h, n, steps);
        return 0;
    case CUDA:
    case CUDA_GRAPH:
        if (!bench_cu_stencil_steps(L->cu, &m->s, steps, j == CUDA_GRAPH, why, sizeof why)) return 0;
        fprintf(stderr, "ka-bench timeloop: %s: %s\n", keys[j], why);
        return KA_EXIT_FAIL;
    case KA_GRAPH:
        for (int i = 0; i < steps / 2 && st == KA_OK; i++) st = ka_graph_launch(L->q[j], m->g, NULL);
        break;
    default:
        st = ka_steps(L, j, n, steps, m->b);
    }
    if (st == KA_OK) st = ka_queue_finish(L->q[j]);
    if (st == KA_OK) return 0;
    fprintf(stderr, "ka-bench timeloop: %s: %s\n", keys[j], ka_last_error());
    return KA_EXIT_FAIL;
}

/* Cold interior, a hot first row (2-D) or plane (3-D) and a pattern, so every
 * cell changes; the multi-kernel step's u and v other patterns. */
static void init_grid(float *g, size_t n, int dims, int field) {
    size_t planes = dims == 3 ? n : 1, i = 0;
    for (size_t z = 0; z < planes; z++)
        for (size_t y = 0; y < n; y++)
            for (size_t x = 0; x < n; x++, i++)
                g[i] = field == 0 && (dims == 3 ? z : y) == 0
                           ? 100.0f
                           : (float)((x * (7 + field) + y * (13 - field) + z * 5) % 17) * 0.25f;
}

typedef char token[32];
/* arg split at its commas into at most max tokens: their count, or -1 (an
 * empty or long token, or too many). */
static int split(const char *arg, token *tok, int max) {
    for (int k = 0;;) {
        size_t len = strcspn(arg, ",");
        if (k == max || len == 0 || len >= sizeof tok[0]) return -1;
        memcpy(tok[k], arg, len);
        tok[k++][len] = 0;
        if (!arg[len]) return k;
        arg += len + 1;
    }
}

/* Comma-separated sizes into out; their count, or -1. */
static int parse_sizes(const cli *c, const char *arg, uint64_t *out) {
    token tok[MAX_SIZES];
    int k = split(arg, tok, MAX_SIZES);
    if (k < 0) {
        cli_error(c, "--sizes '%s': want 1 to %d sizes, each 3 to 16384, separated by commas", arg, MAX_SIZES);
        return -1;
    }
    for (int i = 0; i < k; i++)
        if (cli_u64(c, tok[i], 3, 16384, &out[i])) return -1;
    return k;
}

/* --wg, --raw-wg: X,Y or X,Y,Z into out (Z 1 when left out); 0, or -1. */
static int parse_wg(const cli *c, const char *opt, const char *arg, unsigned out[3]) {
    token tok[3];
    int k = split(arg, tok, 3);
    uint64_t v[3] = {1, 1, 1};
    if (k < 2) {
        cli_error(c, "%s '%s': want X,Y or X,Y,Z, each 1 to 1024", opt, arg);
        return -1;
    }
    for (int i = 0; i < k; i++)
        if (cli_u64(c, tok[i], 1, 1024, &v[i])) return -1;
    for (int i = 0; i < 3; i++) out[i] = (unsigned)v[i];
    return 0;
}

/* --impl: the implementations named into *mask (bit by index); 0, or -1. */
static int parse_impls(const cli *c, const char *arg, unsigned *mask) {
    token tok[NIMPL];
    int k = split(arg, tok, NIMPL);
    *mask = 0;
    for (int i = 0; i < k; i++) {
        int j = 0;
        while (j < NIMPL && strcmp(tok[i], keys[j])) j++;
        if (j == NIMPL) k = -1;
        else *mask |= 1u << j;
    }
    if (k < 0) {
        cli_error(c, "--impl '%s': want names from serial, openmp, ka, ka_inline, ka_off, ka_graph, cuda, cuda_graph,"
                     " separated by commas", arg);
        return -1;
    }
    return 0;
}

#define CHECK(call) BENCH_CHECK("timeloop", call)

typedef struct row {
    uint64_t n;
    int steps;
    double us[NIMPL];       /* 0 when not timed */
    uint64_t inl[MAX_REPS]; /* the default queue's launches that ran in the calling thread, per repetition */
    int equal;              /* every result equal to the serial loop's bit for bit */
} row;

/* Whether implementation j's state 0 (h, and u, v of the multi-kernel step)
 * equals the serial loop's bit for bit; -1 when it cannot be read. tmp: room
 * for one array of the device's implementations. */
static int same_state(const kaloop *L, int j, const impl *m, size_t bytes, float *tmp) {
    for (int a = 0; a < (L->kernels == 1 ? 1 : 6); a += 2) {
        const float *got = m[j].h[a];
        if (IS_KA(j)) {
            if (ka_buffer_read(L->q[j], tmp, m[j].b[a], 0, bytes) != KA_OK) return -1;
            got = tmp;
        } else if (j >= CUDA) {
            if (bench_cu_read(L->cu, tmp, m[j].s.a, bytes)) return -1;
            got = tmp;
        }
        if (memcmp(m[SERIAL].h[a], got, bytes)) return 0;
    }
    return 1;
}

/* One size: the state of each implementation from the serial loop's first
 * state, the check of two steps, a warm-up, then the interleaved repetitions. */
static int run_size(const kaloop *L, ka_device dev, uint64_t n, int steps, int reps, row *out) {
    size_t cells = (size_t)(L->dims == 3 ? n * n * n : n * n), bytes = cells * sizeof(float);
    int na = narrays(L->kernels);
    impl m[NIMPL];
    float *tmp = NULL;
    char why[512];
    memset(m, 0, sizeof m);
    memset(out, 0, sizeof *out);
    out->n = n;
    out->steps = steps;
    out->equal = 1;
    for (int j = 0; j < NIMPL; j++) {
        if (j != SERIAL && !TIMED(L, j)) continue;
        for (int a = 0; a < na; a++) {
            if (j > OPENMP) {
                if (!tmp && !(tmp = malloc(bytes))) goto oom;
                if (IS_KA(j)) {
                    CHECK(ka_buffer_create(dev, bytes, &m[j].b[a]));
                    CHECK(ka_buffer_write(L->q[j], m[j].b[a], 0, m[SERIAL].h[a], bytes));
                } else if (bench_cu_alloc(L->cu, bytes, a ? &m[j].s.b : &m[j].s.a) ||
                           bench_cu_write(L->cu, a ? m[j].s.b : m[j].s.a, m[SERIAL].h[a], bytes)) {
                    fprintf(stderr, "ka-bench timeloop: %s: device memory for %zu bytes\n", keys[j], bytes);
                    return KA_EXIT_FAIL;
                }
                continue;
            }
            if (!(m[j].h[a] = malloc(bytes))) goto oom;
            /* The heat equation's two arrays start equal; the multi-kernel
             * step's states by field, its temporaries zeroed. */
            int field = L->kernels == 1 ? 0 : a / 2;
            if (j == OPENMP) memcpy(m[j].h[a], m[SERIAL].h[a], bytes);
            else if (field < 3) init_grid(m[j].h[a], n, L->dims, field);
            else memset(m[j].h[a], 0, bytes);
        }
        if (j >= CUDA) {
            m[j].s.n = (int)n, m[j].s.dims = L->dims;
            memcpy(m[j].s.block, L->raw_wg, sizeof m[j].s.block);
        }
    }
    /* Two steps each, recorded or captured once. */
    if (TIMED(L, KA_GRAPH)) {
        CHECK(ka_graph_begin(L->q[KA_GRAPH]));
        CHECK(ka_steps(L, KA_GRAPH, n, 2, m[KA_GRAPH].b));
        CHECK(ka_graph_end(L->q[KA_GRAPH], &m[KA_GRAPH].g));
    }
    if (TIMED(L, CUDA_GRAPH) && bench_cu_stencil_graph(L->cu, &m[CUDA_GRAPH].s, why, sizeof why)) {
        fprintf(stderr, "ka-bench timeloop: cuda_graph: %s\n", why);
        return KA_EXIT_FAIL;
    }
    /* The check: two steps from the first state, every result equal to the
     * serial loop's. */
    for (int j = 0; j < NIMPL; j++) {
        if (j != SERIAL && !TIMED(L, j)) continue;
        int st = run_steps(L, j, (size_t)n, 2, &m[j]), eq = 1;
        if (st) return st;
        if (j != SERIAL && (eq = same_state(L, j, m, bytes, tmp)) < 0) {
            fprintf(stderr, "ka-bench timeloop: %s: reading its result back failed\n", keys[j]);
            return KA_EXIT_FAIL;
        }
        if (!eq) {
            fprintf(stderr, "ka-bench timeloop: %llu^%d: %s: two steps differ from the serial loop's\n",
                    (unsigned long long)n, L->dims, keys[j]);
            out->equal = 0;
        }
    }
    /* Warm-up: PoCL builds a kernel's work-group function at its first launch
     * of a local size; libka's routing measures both paths in its first
     * launches; a CUDA graph's first launch uploads it. */
    int warm = steps < 64 ? 64 : steps;
    for (int j = 0; j < NIMPL; j++) {
        int st = TIMED(L, j) ? run_steps(L, j, (size_t)n, warm, &m[j]) : 0;
        if (st) return st;
    }
    double t[NIMPL][MAX_REPS];
    for (int r = 0; r < reps; r++)
        for (int j = 0; j < NIMPL; j++) {
            if (!TIMED(L, j)) continue;
            ka_queue_stats s0, s1;
            if (j == KA_DEFAULT) ka_queue_get_stats(L->q[j], &s0);
            /* The previous runtime's idle threads spin on for milliseconds
             * (libgomp's GOMP_SPINCOUNT, libka's pool): each run starts once
             * they sleep, not competing with them for cores. */
            bench_quiet();
            int64_t t0 = bench_now_ns();
            int st = run_steps(L, j, (size_t)n, steps, &m[j]);
            if (st) return st;
            t[j][r] = (double)(bench_now_ns() - t0) / steps;
            if (j == KA_DEFAULT) {
                ka_queue_get_stats(L->q[j], &s1);
                out->inl[r] = s1.inline_launches - s0.inline_launches;
            }
        }
    for (int j = 0; j < NIMPL; j++) {
        if (TIMED(L, j)) out->us[j] = bench_median(t[j], reps) / 1e3;
        if (m[j].g.id) ka_graph_release(m[j].g);
        for (int a = 0; a < na; a++) {
            free(m[j].h[a]);
            if (m[j].b[a].id) ka_buffer_release(m[j].b[a]);
        }
        if (m[j].s.a) bench_cu_free(L->cu, m[j].s.a);
        if (m[j].s.b) bench_cu_free(L->cu, m[j].s.b);
    }
    free(tmp);
    return 0;
oom:
    fprintf(stderr, "ka-bench timeloop: out of memory for %llu^%d\n", (unsigned long long)n, L->dims);
    return KA_EXIT_FAIL;
}

/* The faster of the timed all-inline and routing-off queues, 0 when neither is. */
static double best_other(const row *w) {
    double a = w->us[KA_INLINE], b = w->us[KA_OFF];
    return a > 0 && (b <= 0 || a < b) ? a : b;
}
/* The default queue's inline launches per repetition, separated by commas. */
static void print_inline(const row *w, int reps) {
    for (int r = 0; r < reps; r++) printf("%s%llu", r ? "," : "", (unsigned long long)w->inl[r]);
}
static double ratio(double a, double b) { return a > 0 && b > 0 ? a / b : 0; }

/* The ratios of the table and the JSON: name, numerator, denominator. */
static const struct {
    const char *key, *head;
    int num, den; /* den -1: best_other */
} ratios[] = {{"ka_over_openmp", "ka/omp", KA_DEFAULT, OPENMP},
              {"ka_over_serial", NULL, KA_DEFAULT, SERIAL},
              {"default_over_best", "def/best", KA_DEFAULT, -1},
              {"ka_over_cuda", "ka/cuda", KA_DEFAULT, CUDA},
              {"ka_graph_over_cuda_graph", "kg/cg", KA_GRAPH, CUDA_GRAPH},
              {"ka_graph_over_ka", NULL, KA_GRAPH, KA_DEFAULT}};
#define NRATIOS (int)(sizeof ratios / sizeof ratios[0])
static double row_ratio(const row *w, int i) {
    return ratio(w->us[ratios[i].num], ratios[i].den < 0 ? best_other(w) : w->us[ratios[i].den]);
}
static int ratio_shown(const kaloop *L, int i) {
    int den = ratios[i].den;
    return TIMED(L, ratios[i].num) && (den < 0 ? TIMED(L, KA_INLINE) || TIMED(L, KA_OFF) : (int)TIMED(L, den));
}

int bench_timeloop_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"sizes", required_argument, NULL, 'z'}, {"steps", required_argument, NULL, 's'},
                                       {"kernels", required_argument, NULL, 'k'}, {"wg", required_argument, NULL, 'g'},
                                       {"dims", required_argument, NULL, 'D'}, {"impl", required_argument, NULL, 'I'},
                                       {"raw-wg", required_argument, NULL, 'W'},
                                       {"define", required_argument, NULL, 'E'},
                                       {"print-source", required_argument, NULL, 'P'}, BENCH_OPT_END};
    bench_opts o = {.reps = 7};
    uint64_t sizes[MAX_SIZES], steps_opt = 0, kernels = 1, dims = 2;
    unsigned wg[3] = {0, 0, 0}, raw_wg[3] = {32, 8, 1}, impls = 0;
    const char *defines[MAX_DEFINES];
    uint32_t ndefines = 0;
    int nsizes = 0;
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
        case 'D':
            if (cli_u64(&cl, arg, 2, 3, &dims)) return KA_EXIT_USAGE;
            break;
        case 'g':
            if (parse_wg(&cl, "--wg", arg, wg)) return KA_EXIT_USAGE;
            break;
        case 'W':
            if (parse_wg(&cl, "--raw-wg", arg, raw_wg)) return KA_EXIT_USAGE;
            break;
        case 'I':
            if (parse_impls(&cl, arg, &impls)) return KA_EXIT_USAGE;
            break;
        case 'P': /* the kernels' text, for reading their machine code */
            if (!strcmp(arg, "ka")) fputs(ka_src, stdout);
            else if (!strcmp(arg, "cuda")) printf("%s%s", cu_src[0], cu_src[1]);
            else {
                cli_error(&cl, "--print-source '%s': want ka or cuda", arg);
                return KA_EXIT_USAGE;
            }
            return 0;
        case 'E':
            if (ndefines == MAX_DEFINES || !*arg) {
                cli_error(&cl, "--define '%s': want NAME or NAME=VALUE, at most %d of them", arg, MAX_DEFINES);
                return KA_EXIT_USAGE;
            }
            defines[ndefines++] = arg;
            break;
        default:
            if ((st = bench_option(&cl, r, arg, &o)) >= 0) return st;
        }
    }
    if (o.reps > MAX_REPS) {
        cli_error(&cl, "--reps %d: at most %d", o.reps, MAX_REPS);
        return KA_EXIT_USAGE;
    }
    if (dims == 3 && kernels != 1) {
        cli_error(&cl, "--kernels 6 is 2-D only");
        return KA_EXIT_USAGE;
    }
    static const uint64_t defaults[2][5] = {{16, 64, 256, 1024, 4096}, {64, 128, 256, 512}};
    if (!nsizes) {
        nsizes = dims == 3 ? 4 : 5;
        memcpy(sizes, defaults[dims == 3], sizeof defaults[0]);
    }
    for (int i = 0; i < nsizes && dims == 3; i++)
        if (sizes[i] > 1024) {
            cli_error(&cl, "--sizes: %llu: at most 1024 in 3-D", (unsigned long long)sizes[i]);
            return KA_EXIT_USAGE;
        }
    ka_device dev;
    if (cli_device_open(&cl, o.sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    kaloop L = {.kernels = (int)kernels, .dims = (int)dims, .wg = {wg[0], wg[1], wg[2]}};
    memcpy(L.raw_wg, raw_wg, sizeof raw_wg);
    /* Without routing the three queues are the same: the default alone. */
    CHECK(ka_queue_create(dev, NULL, &L.q[KA_DEFAULT]));
    ka_queue_stats qs;
    ka_queue_get_stats(L.q[KA_DEFAULT], &qs);
    int routing = qs.inline_max_items != 0;
    char why[4096] = "";
    if (di->backend == KA_BACKEND_CUDA && kernels == 1 &&
        (!(L.cu = bench_cu_open(dev, why, sizeof why)) || bench_cu_build(L.cu, cu_src[dims == 3], dims == 3 ? "heat3" : "heat", why, sizeof why))) {
        fprintf(stderr, "ka-bench timeloop: no raw CUDA comparison: %s\n", why);
        bench_cu_close(L.cu);
        L.cu = NULL;
    }
    unsigned avail = 1u << SERIAL | 1u << OPENMP | 1u << KA_DEFAULT | 1u << KA_GRAPH |
                     (routing ? 1u << KA_INLINE | 1u << KA_OFF : 0) | (L.cu ? 1u << CUDA | 1u << CUDA_GRAPH : 0);
    if (impls & ~avail) {
        int j = 0;
        while (!((impls & ~avail) >> j & 1)) j++;
        fprintf(stderr, "ka-bench timeloop: --impl %s: not on %s (%s)\n", keys[j], di->selector,
                j >= CUDA ? "needs a CUDA device, --kernels 1 and raw CUDA" : "needs PoCL routing");
        return KA_EXIT_FAIL;
    }
    L.timed = impls ? impls : avail;
    /* inline_max_items past any grid: every launch inline. */
    const ka_queue_config qc[NIMPL] = {[KA_INLINE] = {.inline_max_items = INT64_MAX},
                                       [KA_OFF] = {.inline_max_items = KA_INLINE_OFF}};
    const ka_build_options bo = {.defines = defines, .num_defines = ndefines};
    static const char *names[6] = {"sw_fx", "sw_fy", "sw_h", "sw_u", "sw_v", "heat"};
    for (int j = KA_DEFAULT; j <= KA_GRAPH; j++) {
        if (!TIMED(&L, j)) continue;
        if (j != KA_DEFAULT) CHECK(ka_queue_create(dev, j == KA_GRAPH ? NULL : &qc[j], &L.q[j]));
        CHECK(ka_program_build(dev, ka_src, &bo, &L.prog[j]));
        for (int k = 0; k < L.kernels; k++)
            CHECK(ka_kernel_get(L.prog[j], L.kernels == 1 ? dims == 3 ? "heat3" : "heat" : names[k], NULL, &L.k[j][k]));
    }
    row rows[MAX_SIZES];
    int bad = 0;
    for (int i = 0; i < nsizes; i++) {
        uint64_t n = sizes[i], auto_steps = (4u << 20) / (dims == 3 ? n * n * n : n * n);
        int steps = steps_opt ? (int)steps_opt : auto_steps < 10 ? 10 : auto_steps > 2000 ? 2000 : (int)auto_steps;
        steps += steps & 1; /* the graphs replay two steps */
        int st = run_size(&L, dev, n, steps, o.reps, &rows[i]);
        if (st) return st;
        bad |= !rows[i].equal;
        if (o.json) continue;
        const row *w = &rows[i];
        if (i == 0) {
            printf("ka-bench timeloop --dims %d --kernels %d on %s (%s): OpenMP %d threads%s; libka's default queue "
                   "(routing limit %llu work-items)%s, work-group ",
                   L.dims, L.kernels, di->name, di->selector, bench_omp_threads(),
                   bench_omp_threads() ? "" : " (built without OpenMP: serial)",
                   (unsigned long long)qs.inline_max_items, routing ? ", all inline, routing off" : "");
            if (wg[0]) printf(L.dims == 3 ? "%u,%u,%u" : "%u,%u", wg[0], wg[1], wg[2]);
            else printf("libka's choice");
            if (L.cu) printf("; raw CUDA blocks %u,%u,%u", raw_wg[0], raw_wg[1], L.dims == 3 ? raw_wg[2] : 1);
            for (uint32_t d = 0; d < ndefines; d++) printf("%s-D%s", d ? " " : "; ", defines[d]);
            printf("; %d interleaved reps, medians, us per step\n", o.reps);
            printf("%6s %6s", "N", "steps");
            for (int j = 0; j < NIMPL; j++)
                if (TIMED(&L, j)) printf(" %10s", heads[j]);
            for (int k = 0; k < NRATIOS; k++)
                if (ratios[k].head && ratio_shown(&L, k)) printf(" %8s", ratios[k].head);
            printf(" %6s%s\n", "equal", routing && TIMED(&L, KA_DEFAULT) ? "  default queue's inline launches per rep" : "");
        }
        printf("%6llu %6d", (unsigned long long)w->n, w->steps);
        for (int j = 0; j < NIMPL; j++)
            if (TIMED(&L, j)) printf(" %10.2f", w->us[j]);
        for (int k = 0; k < NRATIOS; k++)
            if (ratios[k].head && ratio_shown(&L, k)) printf(" %8.3f", row_ratio(w, k));
        printf(" %6s", w->equal ? "yes" : "NO");
        if (routing && TIMED(&L, KA_DEFAULT)) {
            printf("  ");
            print_inline(w, o.reps);
            printf(" of %d", w->steps * L.kernels);
        }
        printf("\n");
        fflush(stdout);
    }
    if (o.json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"dims\":%d,\"kernels\":%d,\"omp_threads\":%d,"
               "\"inline_max_items\":%llu,\"routing\":%s,\"reps\":%d,\"workgroup\":[%u,%u,%u],\"raw_workgroup\":[%u,%u,%u],"
               "\"defines\":[",
               di->name, di->selector, L.dims, L.kernels, bench_omp_threads(), (unsigned long long)qs.inline_max_items,
               routing ? "true" : "false", o.reps, wg[0], wg[1], wg[2], raw_wg[0], raw_wg[1], raw_wg[2]);
        for (uint32_t d = 0; d < ndefines; d++) printf("%s\"%s\"", d ? "," : "", defines[d]);
        printf("],\"impls\":[");
        for (int j = 0, first = 1; j < NIMPL; j++)
            if (TIMED(&L, j)) printf("%s\"%s\"", first ? "" : ",", keys[j]), first = 0;
        printf("],\"checked\":%s,\"sizes\":[", bad ? "false" : "true");
        for (int i = 0; i < nsizes; i++) {
            const row *w = &rows[i];
            printf("%s{\"n\":%llu,\"steps\":%d,\"launches\":%d", i ? "," : "", (unsigned long long)w->n, w->steps,
                   w->steps * L.kernels);
            for (int j = 0; j < NIMPL; j++)
                if (TIMED(&L, j)) printf(",\"%s_us\":%.3f", keys[j], w->us[j]);
            for (int k = 0; k < NRATIOS; k++)
                if (ratio_shown(&L, k)) printf(",\"%s\":%.4f", ratios[k].key, row_ratio(w, k));
            if (TIMED(&L, KA_DEFAULT)) {
                uint64_t inl = 0;
                for (int r = 0; r < o.reps; r++) inl += w->inl[r];
                printf(",\"ka_inline_fraction\":%.4f", (double)inl / ((double)o.reps * w->steps * L.kernels));
                if (routing) {
                    printf(",\"ka_inline_launches\":[");
                    print_inline(w, o.reps);
                    printf("]");
                }
            }
            printf(",\"equal\":%s}", w->equal ? "true" : "false");
        }
        printf("]}\n");
    }
    for (int j = KA_DEFAULT; j <= KA_GRAPH; j++) {
        if (TIMED(&L, j)) ka_program_release(L.prog[j]);
        if (L.q[j].id) ka_queue_release(L.q[j]);
    }
    bench_cu_close(L.cu);
    ka_device_close(dev);
    return bad;
}
