/* ka-bench launch: libka's launch (and launch + wait) against the same loop
 * written with raw OpenCL calls (OpenCL devices) or raw driver-API calls
 * (CUDA devices: cuLaunchKernel, bench_cuda.c) or a direct call of the loop
 * in C (the host device), in one process, interleaved repetitions. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cuda.h"
#include "bench_launch_src.h"

typedef struct raw raw;
typedef struct kactx kactx;
double bench_raw_loop(raw *r, int nargs, int iters, int wait, size_t n, size_t local);
double bench_ka_loop(kactx *c, int nargs, int iters, int wait);

struct raw {
    int flush; /* on PoCL's basic device a command runs at clFlush, as libka's inline launch does */
    float *host; /* the host device: the raw launch is a direct call of the same loop in C, on this buffer */
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k;
    cl_mem buf;
};

/* The raw loop runs in libka's own context (ctx), so both loops see the same
 * devices, buffers and PoCL state; only its program, kernel and queue are its
 * own. */
static int raw_init(raw *r, cl_context ctx, cl_device_id dev, int nargs, size_t n) {
    cl_int err;
    if ((err = clRetainContext(ctx))) return err;
    r->ctx = ctx;
    r->q = clCreateCommandQueue(r->ctx, dev, 0, &err);
    if (err) return err;
    char *src = bench_launch_source(nargs, SRC_OPENCL);
    const char *s = src;
    r->prog = clCreateProgramWithSource(r->ctx, 1, &s, NULL, &err);
    free(src);
    if (err) return err;
    if ((err = clBuildProgram(r->prog, 1, &dev, bench_cl_options(dev), NULL, NULL))) return err;
    r->k = clCreateKernel(r->prog, "k", &err);
    if (err) return err;
    r->buf = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, 64 * sizeof(float), NULL, &err);
    if (err) return err;
    cl_ulong nd[4] = {n, 1, 1, 1};
    return clSetKernelArg(r->k, 0, sizeof nd, nd);
}

static void raw_fini(raw *r) {
    clReleaseMemObject(r->buf);
    clReleaseKernel(r->k);
    clReleaseProgram(r->prog);
    clReleaseCommandQueue(r->q);
    clReleaseContext(r->ctx);
}

/* What a C user writes instead of a launch on the CPU: the kernel's loop
 * over the work-items as a function, called. Its arguments are read as the
 * kernel's are; a call is complete on return (no wait). */
__attribute__((noinline)) static void host_kernel(float *p0, const float *vals, int nargs, size_t n) {
    __asm__ __volatile__("" : : "r"(vals), "r"(nargs) : "memory"); /* the arguments are used */
    for (size_t i = 0; i < n; i++)
        if (i == 0) p0[0] = 1.0f;
}

/* ns per iteration of the raw loop. */
__attribute__((noinline)) double bench_raw_loop(raw *r, int nargs, int iters, int wait, size_t n, size_t local) {
    float vals[64];
    for (int i = 0; i < 64; i++) vals[i] = (float)i;
    int64_t t0 = bench_now_ns();
    if (r->host) {
        for (int it = 0; it < iters; it++) {
            vals[1] = (float)it;
            host_kernel(r->host, vals, nargs, n);
        }
        (void)wait, (void)local;
        return (double)(bench_now_ns() - t0) / iters;
    }
    for (int it = 0; it < iters; it++) {
        vals[1] = (float)it; /* one argument changes every launch, like a time step */
        clSetKernelArg(r->k, 1, sizeof(cl_mem), &r->buf);
        for (int a = 1; a < nargs; a++) clSetKernelArg(r->k, (cl_uint)a + 1, sizeof(float), &vals[a & 63]);
        if (wait) {
            cl_event e;
            clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &n, &local, 0, NULL, &e);
            if (r->flush) clFlush(r->q);
            clWaitForEvents(1, &e);
            clReleaseEvent(e);
        } else {
            clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &n, &local, 0, NULL, NULL);
            if (r->flush) clFlush(r->q);
        }
    }
    int64_t t1 = bench_now_ns();
    clFinish(r->q);
    return (double)(t1 - t0) / iters;
}

struct kactx {
    ka_queue q;
    ka_kernel k;
    ka_arg args[64];
    ka_range range;
};

__attribute__((noinline)) double bench_ka_loop(kactx *c, int nargs, int iters, int wait) {
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters; it++) {
        if (nargs > 1) c->args[1] = ka_arg_f32((float)it); /* as in the raw loop */
        if (wait) {
            ka_event ev;
            ka_launch(c->q, c->k, &c->range, c->args, (uint32_t)nargs, &ev);
            ka_event_wait(ev, KA_WAIT_FOREVER);
            ka_event_release(ev);
        } else {
            ka_launch(c->q, c->k, &c->range, c->args, (uint32_t)nargs, NULL);
        }
    }
    int64_t t1 = bench_now_ns();
    ka_queue_finish(c->q);
    return (double)(t1 - t0) / iters;
}

typedef struct result {
    int nargs;
    const char *path; /* "routed" (the default queue) or "threaded" (routing off) */
    double raw_launch[3], ka_launch[3], raw_wait[3], ka_wait[3]; /* median, min, max */
    double raw_sync[3]; /* CUDA: launch + cuStreamSynchronize (raw_wait: + cuEventRecord + cuEventSynchronize) */
    /* CUDA diagnostics, launch + cuEventRecord + (bench_cuda.h): cuEventQuery polls on raw_wait's event and on
     * one with libka's pool flags (blocking sync), cuEventSynchronize on the latter */
    double raw_poll_default[3], raw_poll_blocking[3], raw_sync_blocking[3];
    double allocs_per_launch;
    uint64_t waits_polled, waits_slept; /* how libka's waits in the launch+wait loops ended */
} result;

static void stats(double *v, int n, double out[3]) {
    out[0] = bench_median(v, n);
    out[1] = bench_min(v, n);
    out[2] = bench_max(v, n);
}

static const char usage[] =
    "usage: ka-bench launch [--device SEL] [--args N[,N...]] [--iterations N] [--reps R]\n"
    "                       [--impl ka|raw|both] [--wait | --no-wait] [--path routed|threaded|both] [--json]\n"
    "  Launches an almost empty kernel of 64 work-items with N arguments (a buffer, then floats;\n"
    "  one float changes every launch). The raw loop runs in libka's context, on the device\n"
    "  libka's launch runs on:\n"
    "  with PoCL routing, `basic` for the routed queue and the threaded device with routing off;\n"
    "  on CUDA, cuLaunchKernel on libka's context (NVRTC-built kernel of the same parameters),\n"
    "  waiting with cuEventRecord + cuEventSynchronize (and, also shown, cuStreamSynchronize;\n"
    "  diagnostics: cuEventQuery polls on that event and on one with libka's pool flags, and\n"
    "  cuEventSynchronize on the latter); on the host device, a direct call of the same loop over\n"
    "  the 64 items written in C (complete on return: its wait is nothing).\n"
    "  --args: up to 15 counts, each 1 to 64; --iterations: at least 1; --reps: 1 to 100000.\n"
    "  Default: --args 2,40 --iterations 2000 --reps 7 --path both, launch and launch+wait.\n";

typedef struct opts {
    int iters, reps, run_ka, run_raw, do_launch, do_wait;
} opts;

/* One (args, path) measurement: ka on queue q against raw on rawdev. */
static int measure(ka_device dev, ka_queue q, cl_context rawctx, cl_device_id rawdev, bench_cu *cu, int flush, int nargs,
                   const opts *o, result *r) {
    const size_t n = 64, local = 64;
    kactx c;
    ka_program prog;
    ka_buffer buf;
    char *src = bench_launch_source(nargs, SRC_KA);
    c.q = q;
    if (ka_program_build(dev, src, NULL, &prog) || ka_kernel_get(prog, "k", NULL, &c.k) ||
        ka_buffer_create(dev, 64 * sizeof(float), &buf)) {
        fprintf(stderr, "ka-bench launch: %s\n", ka_last_error());
        free(src);
        return 1;
    }
    free(src);
    c.args[0] = ka_arg_buffer(buf);
    for (int a = 1; a < nargs; a++) c.args[a] = ka_arg_f32((float)a);
    c.range = (ka_range){.dims = 1, .size = {n}, .workgroup = {(uint32_t)local}};
    raw rw;
    memset(&rw, 0, sizeof rw);
    rw.flush = flush;
    uint64_t cubuf = 0;
    if (o->run_raw && cu) {
        char why[4096];
        char *rsrc = bench_launch_source(nargs, SRC_CUDA);
        int bad = bench_cu_build(cu, rsrc, "k", why, sizeof why) || bench_cu_alloc(cu, 64 * sizeof(float), &cubuf);
        free(rsrc);
        if (bad) {
            fprintf(stderr, "ka-bench launch: raw CUDA set-up failed: %s\n", why);
            return 1;
        }
    } else if (o->run_raw && !rawctx) { /* the host device */
        static float hbuf[64];
        rw.host = hbuf;
    } else if (o->run_raw && raw_init(&rw, rawctx, rawdev, nargs, n)) {
        fprintf(stderr, "ka-bench launch: raw OpenCL set-up failed\n");
        return 1;
    }
    /* Warm up: the first launch of a local size compiles the work-group function. */
    if (o->run_ka) bench_ka_loop(&c, nargs, 50, 1);
    static const int diag_mode[3] = {BENCH_CU_SYNC_BLOCKING, BENCH_CU_POLL_BLOCKING, BENCH_CU_POLL_DEFAULT};
    char diag_why[256];
    if (o->run_raw && cu) {
        bench_cu_launch_loop(cu, cubuf, nargs, 50, BENCH_CU_EVENT_SYNC, (unsigned)n, (unsigned)local);
        for (int d = 0; d < 3 && o->do_wait; d++)
            if (bench_cu_launch_diag(cu, cubuf, nargs, 50, diag_mode[d], (unsigned)n, (unsigned)local, diag_why,
                                     sizeof diag_why) < 0) {
                fprintf(stderr, "ka-bench launch: raw CUDA diagnostic wait: %s\n", diag_why);
                return 1;
            }
    } else if (o->run_raw) bench_raw_loop(&rw, nargs, 50, 1, n, local);
    int reps = o->reps, iters = o->iters;
    double *rl = calloc((size_t)reps, sizeof(double)), *kl = calloc((size_t)reps, sizeof(double));
    double *rwv = calloc((size_t)reps, sizeof(double)), *kw = calloc((size_t)reps, sizeof(double));
    double *rs = calloc((size_t)reps, sizeof(double));
    double *diag[3]; /* in diag_mode's order */
    for (int d = 0; d < 3; d++) diag[d] = calloc((size_t)reps, sizeof(double));
    int failed = 0;
    uint64_t allocs = 0, launches = 0;
    for (int rep = 0; rep < reps && !failed; rep++) {
        /* Alternate which goes first, so drift favours neither. */
        for (int turn = 0; turn < 2; turn++) {
            int ka_turn = (turn + rep) % 2 == 0;
            if (ka_turn && o->run_ka) {
                bench_count_allocs(1);
                uint64_t a0 = bench_allocs();
                ka_queue_stats s0, s1;
                if (o->do_launch) kl[rep] = bench_ka_loop(&c, nargs, iters, 0);
                ka_queue_get_stats(q, &s0);
                if (o->do_wait) kw[rep] = bench_ka_loop(&c, nargs, iters, 1);
                ka_queue_get_stats(q, &s1);
                r->waits_polled += s1.waits_polled - s0.waits_polled;
                r->waits_slept += s1.waits_slept - s0.waits_slept;
                allocs += bench_allocs() - a0;
                launches += (uint64_t)iters * (uint64_t)(o->do_launch + o->do_wait);
                bench_count_allocs(0);
            } else if (!ka_turn && o->run_raw && cu) {
                const unsigned un = (unsigned)n, ul = (unsigned)local;
                if (o->do_launch) rl[rep] = bench_cu_launch_loop(cu, cubuf, nargs, iters, BENCH_CU_NO_WAIT, un, ul);
                if (o->do_wait) rwv[rep] = bench_cu_launch_loop(cu, cubuf, nargs, iters, BENCH_CU_EVENT_SYNC, un, ul);
                if (o->do_wait) rs[rep] = bench_cu_launch_loop(cu, cubuf, nargs, iters, BENCH_CU_STREAM_SYNC, un, ul);
                /* The sleeping one first: a polling loop runs last before libka's turn, as before. */
                for (int d = 0; d < 3 && o->do_wait && !failed; d++)
                    if ((diag[d][rep] = bench_cu_launch_diag(cu, cubuf, nargs, iters, diag_mode[d], un, ul, diag_why,
                                                             sizeof diag_why)) < 0) {
                        fprintf(stderr, "ka-bench launch: raw CUDA diagnostic wait: %s\n", diag_why);
                        failed = 1;
                    }
            } else if (!ka_turn && o->run_raw) {
                if (o->do_launch) rl[rep] = bench_raw_loop(&rw, nargs, iters, 0, n, local);
                if (o->do_wait) rwv[rep] = bench_raw_loop(&rw, nargs, iters, 1, n, local);
            }
        }
    }
    r->nargs = nargs;
    stats(rl, reps, r->raw_launch);
    stats(kl, reps, r->ka_launch);
    stats(rwv, reps, r->raw_wait);
    stats(kw, reps, r->ka_wait);
    stats(rs, reps, r->raw_sync);
    stats(diag[0], reps, r->raw_sync_blocking);
    stats(diag[1], reps, r->raw_poll_blocking);
    stats(diag[2], reps, r->raw_poll_default);
    r->allocs_per_launch = launches ? (double)allocs / (double)launches : 0;
    free(rl), free(kl), free(rwv), free(kw), free(rs);
    for (int d = 0; d < 3; d++) free(diag[d]);
    if (o->run_raw && cu) bench_cu_free(cu, cubuf);
    else if (o->run_raw && !rw.host) raw_fini(&rw);
    ka_buffer_release(buf);
    ka_program_release(prog);
    return failed;
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

static int is_cuda;

static void json_result(const result *r) {
    printf("\"args\":%d,\"path\":\"%s\",\"raw_ns_per_launch\":%.1f,\"ka_ns_per_launch\":%.1f,\"ratio\":%.4f,"
           "\"raw_wait_ns\":%.1f,\"ka_wait_ns\":%.1f,\"wait_ratio\":%.4f,\"ka_allocs_per_launch\":%.4f,"
           "\"raw_launch_min\":%.1f,\"raw_launch_max\":%.1f,\"ka_launch_min\":%.1f,\"ka_launch_max\":%.1f,"
           "\"raw_wait_min\":%.1f,\"raw_wait_max\":%.1f,\"ka_wait_min\":%.1f,\"ka_wait_max\":%.1f",
           r->nargs, r->path, r->raw_launch[0], r->ka_launch[0], ratio(r->ka_launch[0], r->raw_launch[0]), r->raw_wait[0],
           r->ka_wait[0], ratio(r->ka_wait[0], r->raw_wait[0]), r->allocs_per_launch, r->raw_launch[1], r->raw_launch[2],
           r->ka_launch[1], r->ka_launch[2], r->raw_wait[1], r->raw_wait[2], r->ka_wait[1], r->ka_wait[2]);
    printf(",\"ka_waits_polled\":%llu,\"ka_waits_slept\":%llu", (unsigned long long)r->waits_polled,
           (unsigned long long)r->waits_slept);
    if (is_cuda)
        printf(",\"raw_wait_kind\":\"cuEventRecord+cuEventSynchronize\",\"raw_stream_sync_ns\":%.1f,"
               "\"raw_stream_sync_min\":%.1f,\"raw_stream_sync_max\":%.1f,\"stream_sync_ratio\":%.4f",
               r->raw_sync[0], r->raw_sync[1], r->raw_sync[2], ratio(r->ka_wait[0], r->raw_sync[0]));
    if (is_cuda)
        printf(",\"raw_poll_default_ns\":%.1f,\"raw_poll_blocking_ns\":%.1f,\"raw_sync_blocking_ns\":%.1f",
               r->raw_poll_default[0], r->raw_poll_blocking[0], r->raw_sync_blocking[0]);
}

/* --args: a comma-separated list of argument counts. */
static int parse_args_list(const cli *c, const char *spec, int *nargs, int *count) {
    char tok[32];
    int n = 0;
    for (const char *p = spec;; p++) {
        size_t len = strcspn(p, ",");
        if (n == 15) {
            cli_error(c, "%s '%s': more than 15 counts", c->name, spec);
            return -1;
        }
        snprintf(tok, sizeof tok, "%.*s", len < sizeof tok ? (int)len : (int)sizeof tok - 1, p);
        if (cli_int(c, tok, 1, 64, &nargs[n])) return -1;
        n++;
        p += len;
        if (!*p) break;
    }
    *count = n;
    return 0;
}

int bench_launch_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_ITERATIONS, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"args", required_argument, NULL, 'a'}, {"impl", required_argument, NULL, 'm'},
                                       {"path", required_argument, NULL, 'p'}, {"wait", no_argument, NULL, 'w'},
                                       {"no-wait", no_argument, NULL, 'W'}, BENCH_OPT_END};
    const char *impl = "both", *path = "both";
    int nargs_list[15] = {2, 40}, nlist = 2;
    bench_opts bo = {.iters = 2000, .reps = 7};
    opts o = {2000, 7, 1, 1, 1, 1};
    cli c;
    cli_init(&c, "ka-bench launch", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&c, &arg)) != CLI_END;) {
        int st;
        switch (r) {
        case 'a':
            if (parse_args_list(&c, arg, nargs_list, &nlist)) return KA_EXIT_USAGE;
            break;
        case 'm':
            if (strcmp(arg, "ka") && strcmp(arg, "raw") && strcmp(arg, "both"))
                return cli_error(&c, "%s: '%s' is not ka, raw or both", c.name, arg);
            impl = arg;
            break;
        case 'p':
            if (strcmp(arg, "routed") && strcmp(arg, "threaded") && strcmp(arg, "both"))
                return cli_error(&c, "%s: '%s' is not routed, threaded or both", c.name, arg);
            path = arg;
            break;
        case 'w': o.do_launch = 0, o.do_wait = 1; break;
        case 'W': o.do_launch = 1, o.do_wait = 0; break;
        default:
            if ((st = bench_option(&c, r, arg, &bo)) >= 0) return st;
        }
    }
    const char *sel = bo.sel;
    int json = bo.json;
    o.iters = bo.iters;
    o.reps = bo.reps;
    o.run_ka = strcmp(impl, "raw") != 0;
    o.run_raw = strcmp(impl, "ka") != 0;
    ka_device dev;
    ka_queue routed, threaded;
    if (cli_device_open(&c, sel, &dev)) return KA_EXIT_FAIL;
    if (ka_queue_create(dev, NULL, &routed) ||
        ka_queue_create(dev, &(ka_queue_config){.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF}, &threaded)) {
        fprintf(stderr, "ka-bench launch: %s\n", ka_last_error());
        return 1;
    }
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    ka_native_device nat = {0};
    if (di->backend == KA_BACKEND_OPENCL) ka_device_get_native(dev, &nat);
    ka_queue_stats qs;
    ka_queue_get_stats(routed, &qs);
    int routing = nat.inline_device && qs.inline_max_items >= 64;
    bench_cu *cu = NULL;
    is_cuda = di->backend == KA_BACKEND_CUDA;
    if (o.run_raw && is_cuda) {
        char why[256];
        if (!(cu = bench_cu_open(dev, why, sizeof why))) {
            fprintf(stderr, "ka-bench launch: raw CUDA unavailable on %s: %s; use --impl ka\n", di->selector, why);
            return 1;
        }
    } else if (o.run_raw && !nat.device && di->backend != KA_BACKEND_HOST) {
        fprintf(stderr, "ka-bench launch: the raw comparison needs an OpenCL, CUDA or host device (got %s); use --impl ka\n",
                di->selector);
        return 1;
    }
    int want_routed = strcmp(path, "threaded") != 0, want_threaded = routing && strcmp(path, "routed") != 0;
    result res[32];
    memset(res, 0, sizeof res);
    int nres = 0;
    for (int t = 0; t < nlist; t++) {
        int nargs = nargs_list[t];
        if (want_routed) {
            res[nres].path = routing ? "routed" : "direct";
            if (measure(dev, routed, nat.context, routing ? nat.inline_device : nat.device, cu, routing, nargs, &o,
                        &res[nres]))
                return 1;
            nres++;
        }
        if (want_threaded) {
            res[nres].path = "threaded";
            if (measure(dev, threaded, nat.context, nat.device, cu, 0, nargs, &o, &res[nres])) return 1;
            nres++;
        }
    }
    if (nres == 0) {
        fprintf(stderr, "ka-bench launch: nothing to measure (--path threaded needs PoCL routing)\n");
        return 1;
    }
    if (json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"iterations\":%d,\"reps\":%d,\"work_items\":64,"
               "\"inline_max_items\":%llu,",
               di->name, di->selector, o.iters, o.reps, (unsigned long long)(routing ? qs.inline_max_items : 0));
        json_result(&res[0]); /* the first args count on the default queue */
        for (int i = 0; i < nres; i++)
            if (!strcmp(res[i].path, "threaded") && res[i].nargs == res[0].nargs)
                printf(",\"routed_wait_ns\":%.1f,\"pthread_wait_ns\":%.1f", res[0].ka_wait[0], res[i].ka_wait[0]);
        printf(",\"results\":[");
        for (int i = 0; i < nres; i++) {
            printf(i ? ",{" : "{");
            json_result(&res[i]);
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("ka-bench launch on %s (%s): 64 work-items, %d iterations x %d interleaved reps, ns per iteration "
               "(median [min, max]); raw runs on the device libka's launch runs on\n",
               di->name, di->selector, o.iters, o.reps);
        printf("%5s %-9s %-24s %-24s %6s  %-24s %-24s %6s  %s\n", "args", "path", "raw launch", "ka launch", "ratio",
               "raw launch+wait", "ka launch+wait", "ratio", "ka allocs/launch");
        for (int i = 0; i < nres; i++) {
            const result *r = &res[i];
            char a[4][64];
            const double *v[4] = {r->raw_launch, r->ka_launch, r->raw_wait, r->ka_wait};
            for (int j = 0; j < 4; j++) snprintf(a[j], 64, "%7.0f [%.0f, %.0f]", v[j][0], v[j][1], v[j][2]);
            printf("%5d %-9s %-24s %-24s %6.3f  %-24s %-24s %6.3f  %.4f\n", r->nargs, r->path, a[0], a[1],
                   ratio(r->ka_launch[0], r->raw_launch[0]), a[2], a[3], ratio(r->ka_wait[0], r->raw_wait[0]),
                   r->allocs_per_launch);
        }
        if (is_cuda && o.run_raw && o.do_wait) {
            printf("raw launch+wait = cuLaunchKernel + cuEventRecord + cuEventSynchronize (libka records a pooled event "
                   "per launch and polls it); with cuStreamSynchronize instead:\n");
            for (int i = 0; i < nres; i++)
                printf("%5d %-9s raw launch+stream sync %7.0f [%.0f, %.0f], ka/that %.3f; ka waits polled %llu, slept %llu\n",
                       res[i].nargs, res[i].path, res[i].raw_sync[0], res[i].raw_sync[1], res[i].raw_sync[2],
                       ratio(res[i].ka_wait[0], res[i].raw_sync[0]), (unsigned long long)res[i].waits_polled,
                       (unsigned long long)res[i].waits_slept);
            printf("diagnostic raw waits, launch + cuEventRecord + the wait below; ratio to raw launch+wait above:\n"
                   "  poll default = while (cuEventQuery == NOT_READY) on raw launch+wait's event (DISABLE_TIMING)\n"
                   "  poll blocking = the same on an event with libka's pool flags (DISABLE_TIMING | BLOCKING_SYNC)\n"
                   "  sync blocking = cuEventSynchronize on that event (sleeps in the driver)\n");
            printf("%5s %-9s %-24s %6s  %-24s %6s  %-24s %6s\n", "args", "path", "raw poll default", "ratio",
                   "raw poll blocking", "ratio", "raw sync blocking", "ratio");
            for (int i = 0; i < nres; i++) {
                const result *r = &res[i];
                char a[3][64];
                const double *v[3] = {r->raw_poll_default, r->raw_poll_blocking, r->raw_sync_blocking};
                for (int j = 0; j < 3; j++) snprintf(a[j], 64, "%7.0f [%.0f, %.0f]", v[j][0], v[j][1], v[j][2]);
                printf("%5d %-9s %-24s %6.3f  %-24s %6.3f  %-24s %6.3f\n", r->nargs, r->path, a[0],
                       ratio(v[0][0], r->raw_wait[0]), a[1], ratio(v[1][0], r->raw_wait[0]), a[2],
                       ratio(v[2][0], r->raw_wait[0]));
            }
        }
    }
    bench_cu_close(cu);
    ka_queue_release(routed);
    ka_queue_release(threaded);
    ka_device_close(dev);
    return 0;
}
