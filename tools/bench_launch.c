/* ka bench launch: libka's launch (and launch + wait) against the same loop
 * written with raw OpenCL calls, in one process, interleaved repetitions. */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

typedef struct raw raw;
typedef struct kactx kactx;
double bench_raw_loop(raw *r, int nargs, int iters, int wait, size_t n, size_t local);
double bench_ka_loop(kactx *c, int nargs, int iters, int wait);

struct raw {
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k;
    cl_mem buf;
};

/* Kernel with nargs user arguments: a buffer, then floats. */
static char *kernel_source(int nargs, int raw_form) {
    size_t cap = 256 + (size_t)nargs * 32;
    char *s = malloc(cap);
    int n = snprintf(s, cap, raw_form ? "__kernel void k(ulong4 nd, __global float *p0" : "KA_KERNEL(k, KA_GLOBAL float *p0");
    for (int i = 1; i < nargs; i++) n += snprintf(s + n, cap - (size_t)n, ", float s%d", i);
    snprintf(s + n, cap - (size_t)n, raw_form ? ") { if (get_global_id(0) == 0) p0[0] = 1.0f; }\n"
                                              : ") { if (ka_global_id(0) == 0) p0[0] = 1.0f; }\n");
    return s;
}

static int raw_init(raw *r, cl_device_id dev, int nargs, size_t n) {
    cl_int err;
    r->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err) return err;
    r->q = clCreateCommandQueue(r->ctx, dev, 0, &err);
    if (err) return err;
    char *src = kernel_source(nargs, 1);
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

/* ns per iteration of the raw loop. */
__attribute__((noinline)) double bench_raw_loop(raw *r, int nargs, int iters, int wait, size_t n, size_t local) {
    float vals[64];
    for (int i = 0; i < 64; i++) vals[i] = (float)i;
    int64_t t0 = bench_now_ns();
    for (int it = 0; it < iters; it++) {
        vals[1] = (float)it; /* one argument changes every launch, like a time step */
        clSetKernelArg(r->k, 1, sizeof(cl_mem), &r->buf);
        for (int a = 1; a < nargs; a++) clSetKernelArg(r->k, (cl_uint)a + 1, sizeof(float), &vals[a & 63]);
        if (wait) {
            cl_event e;
            clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &n, &local, 0, NULL, &e);
            clWaitForEvents(1, &e);
            clReleaseEvent(e);
        } else {
            clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &n, &local, 0, NULL, NULL);
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
    double raw_launch[3], ka_launch[3], raw_wait[3], ka_wait[3]; /* median, min, max */
    double allocs_per_launch;
} result;

static void stats(double *v, int n, double out[3]) {
    out[0] = bench_median(v, n);
    out[1] = bench_min(v, n);
    out[2] = bench_max(v, n);
}

static void usage(void) {
    fputs("usage: ka bench launch [--device SEL] [--args N[,N...]] [--iterations N] [--reps R]\n"
          "                       [--impl ka|raw|both] [--wait | --no-wait] [--json]\n"
          "  Launches an almost empty kernel of 64 work-items with N arguments (a buffer, then floats).\n"
          "  Default: --args 2,40 --iterations 2000 --reps 7, launch and launch+wait.\n",
          stderr);
}

int bench_launch_main(int argc, char **argv) {
    const char *sel = NULL, *impl = "both";
    char argspec[256] = "2,40";
    int iters = 2000, reps = 7, json = 0, do_launch = 1, do_wait = 1;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) sel = argv[++i];
        else if (!strcmp(argv[i], "--args") && i + 1 < argc) snprintf(argspec, sizeof argspec, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--iterations") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--impl") && i + 1 < argc) impl = argv[++i];
        else if (!strcmp(argv[i], "--wait")) do_launch = 0, do_wait = 1;
        else if (!strcmp(argv[i], "--no-wait")) do_launch = 1, do_wait = 0;
        else if (!strcmp(argv[i], "--json")) json = 1;
        else {
            usage();
            return 2;
        }
    }
    int run_ka = strcmp(impl, "raw") != 0, run_raw = strcmp(impl, "ka") != 0;
    if (iters < 1 || reps < 1 || (!run_ka && !run_raw)) {
        usage();
        return 2;
    }
    ka_device dev;
    if (ka_device_open(sel, &dev) != KA_OK) {
        fprintf(stderr, "ka bench launch: %s\n", ka_last_error());
        return 1;
    }
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    cl_device_id cldev = di->backend == KA_BACKEND_OPENCL ? bench_cl_device(di->selector) : NULL;
    if (run_raw && !cldev) {
        fprintf(stderr, "ka bench launch: raw comparison needs an OpenCL device (got %s); use --impl ka\n", di->selector);
        ka_device_close(dev);
        return 1;
    }
    result res[16];
    int nres = 0;
    const size_t n = 64, local = 64;
    for (char *tok = strtok(argspec, ","); tok && nres < 16; tok = strtok(NULL, ",")) {
        int nargs = atoi(tok);
        if (nargs < 1 || nargs > 64) {
            fprintf(stderr, "ka bench launch: --args must be 1..64\n");
            return 2;
        }
        result *r = &res[nres++];
        memset(r, 0, sizeof *r);
        r->nargs = nargs;
        kactx c;
        ka_program prog;
        ka_buffer buf;
        char *src = kernel_source(nargs, 0);
        if (ka_queue_create(dev, NULL, &c.q) || ka_program_build(dev, src, NULL, &prog) ||
            ka_kernel_get(prog, "k", NULL, &c.k) || ka_buffer_create(dev, 64 * sizeof(float), &buf)) {
            fprintf(stderr, "ka bench launch: %s\n", ka_last_error());
            return 1;
        }
        free(src);
        c.args[0] = ka_arg_buffer(buf);
        for (int a = 1; a < nargs; a++) c.args[a] = ka_arg_f32((float)a);
        c.range = (ka_range){.dims = 1, .size = {n}, .workgroup = {(uint32_t)local}};
        raw rw;
        memset(&rw, 0, sizeof rw);
        if (run_raw) {
            int err = raw_init(&rw, cldev, nargs, n);
            if (err) {
                fprintf(stderr, "ka bench launch: raw OpenCL set-up failed (%d)\n", err);
                return 1;
            }
        }
        /* Warm up: the first launch of a local size compiles the work-group function. */
        if (run_ka) bench_ka_loop(&c, nargs, 50, 1);
        if (run_raw) bench_raw_loop(&rw, nargs, 50, 1, n, local);
        double *rl = calloc((size_t)reps, sizeof(double)), *kl = calloc((size_t)reps, sizeof(double));
        double *rwv = calloc((size_t)reps, sizeof(double)), *kw = calloc((size_t)reps, sizeof(double));
        uint64_t allocs = 0, launches = 0;
        for (int rep = 0; rep < reps; rep++) {
            /* Alternate which goes first, so drift favours neither. */
            for (int turn = 0; turn < 2; turn++) {
                int ka_turn = (turn + rep) % 2 == 0;
                if (ka_turn && run_ka) {
                    bench_count_allocs(1);
                    uint64_t a0 = bench_allocs();
                    if (do_launch) kl[rep] = bench_ka_loop(&c, nargs, iters, 0);
                    if (do_wait) kw[rep] = bench_ka_loop(&c, nargs, iters, 1);
                    allocs += bench_allocs() - a0;
                    launches += (uint64_t)iters * (uint64_t)(do_launch + do_wait);
                    bench_count_allocs(0);
                } else if (!ka_turn && run_raw) {
                    if (do_launch) rl[rep] = bench_raw_loop(&rw, nargs, iters, 0, n, local);
                    if (do_wait) rwv[rep] = bench_raw_loop(&rw, nargs, iters, 1, n, local);
                }
            }
        }
        stats(rl, reps, r->raw_launch);
        stats(kl, reps, r->ka_launch);
        stats(rwv, reps, r->raw_wait);
        stats(kw, reps, r->ka_wait);
        r->allocs_per_launch = launches ? (double)allocs / (double)launches : 0;
        free(rl), free(kl), free(rwv), free(kw);
        if (run_raw) raw_fini(&rw);
        ka_buffer_release(buf);
        ka_program_release(prog);
        ka_queue_release(c.q);
    }
    ka_device_close(dev);
    if (json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"iterations\":%d,\"reps\":%d,\"work_items\":%zu", di->name,
               di->selector, iters, reps, n);
        for (int i = 0; i <= nres; i++) {
            const result *r = &res[i == 0 ? 0 : i - 1];
            if (i == 1) printf(",\"by_args\":[");
            printf(i == 0 ? "," : i == 1 ? "{" : ",{");
            printf("\"args\":%d,\"raw_ns_per_launch\":%.1f,\"ka_ns_per_launch\":%.1f,\"ratio\":%.4f,"
                   "\"raw_wait_ns\":%.1f,\"ka_wait_ns\":%.1f,\"wait_ratio\":%.4f,\"ka_allocs_per_launch\":%.4f,"
                   "\"raw_launch_min\":%.1f,\"raw_launch_max\":%.1f,\"ka_launch_min\":%.1f,\"ka_launch_max\":%.1f,"
                   "\"raw_wait_min\":%.1f,\"raw_wait_max\":%.1f,\"ka_wait_min\":%.1f,\"ka_wait_max\":%.1f",
                   r->nargs, r->raw_launch[0], r->ka_launch[0],
                   r->raw_launch[0] > 0 ? r->ka_launch[0] / r->raw_launch[0] : 0, r->raw_wait[0], r->ka_wait[0],
                   r->raw_wait[0] > 0 ? r->ka_wait[0] / r->raw_wait[0] : 0, r->allocs_per_launch, r->raw_launch[1],
                   r->raw_launch[2], r->ka_launch[1], r->ka_launch[2], r->raw_wait[1], r->raw_wait[2], r->ka_wait[1],
                   r->ka_wait[2]);
            if (i > 0) printf("}");
        }
        printf("]}\n");
    } else {
        printf("ka bench launch on %s (%s): %d work-items, %d iterations x %d interleaved reps, ns per iteration "
               "(median [min, max])\n", di->name, di->selector, (int)n, iters, reps);
        printf("%5s  %-30s %-30s %7s  %-30s %-30s %7s  %s\n", "args", "raw launch", "ka launch", "ratio",
               "raw launch+wait", "ka launch+wait", "ratio", "ka allocs/launch");
        for (int i = 0; i < nres; i++) {
            const result *r = &res[i];
            char a[4][64];
            const double *v[4] = {r->raw_launch, r->ka_launch, r->raw_wait, r->ka_wait};
            for (int j = 0; j < 4; j++) snprintf(a[j], 64, "%9.0f [%.0f, %.0f]", v[j][0], v[j][1], v[j][2]);
            printf("%5d  %-30s %-30s %7.3f  %-30s %-30s %7.3f  %.4f\n", r->nargs, a[0], a[1],
                   r->raw_launch[0] > 0 ? r->ka_launch[0] / r->raw_launch[0] : 0, a[2], a[3],
                   r->raw_wait[0] > 0 ? r->ka_wait[0] / r->raw_wait[0] : 0, r->allocs_per_launch);
        }
    }
    return 0;
}
