/* ka bench wait: latency of launch + wait of an almost empty kernel by each
 * wait mode, against raw clWaitForEvents in the same process (interleaved
 * repetitions, medians), and the CPU the waiting thread burns while waiting
 * for a long kernel. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <poll.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_common.h"

static const char *src =
    "KA_KERNEL(k, KA_GLOBAL float *p, float v) { if (ka_global_id(0) == 0) p[0] = v; }\n"
    "KA_KERNEL(spin, KA_GLOBAL float *p, uint iters) {\n"
    "    if (!ka_in_range()) return;\n"
    "    float x = p[ka_global_id(0)];\n"
    "    for (uint i = 0; i < iters; i++) x = x * 0.999f + 0.5f;\n"
    "    p[ka_global_id(0)] = x;\n"
    "}\n";
static const char *raw_src = "__kernel void k(ulong4 nd, __global float *p, float v) { if (get_global_id(0) == 0) p[0] = v; }\n";

/* All modes but the last two run on a queue with routing off (the device's
 * own path, where waiting matters); ROUTED is the default queue (on PoCL a
 * 64-item launch runs inline on `basic`), RAW_BASIC its raw counterpart. */
enum { RAW, KA_DEFAULT, KA_POLL, KA_SLEEP, KA_CALLBACK, KA_EVENTFD, ROUTED, RAW_BASIC, NMODES };
static const char *mode_names[NMODES] = {"raw clWaitForEvents", "ka spin then sleep (default)", "ka poll (timeout 0 loop)",
                                         "ka sleep only (spin 0)", "ka_event_on_complete", "ka eventfd + poll()",
                                         "ka routed queue (default)", "raw basic + clFlush"};
static const char *mode_keys[NMODES] = {"raw", "ka_default", "ka_poll", "ka_sleep", "ka_callback", "ka_eventfd",
                                        "routed", "raw_basic"};

typedef struct ctx {
    ka_queue q, q_nospin, routed;
    ka_kernel k, spin;
    ka_buffer buf;
    int efd;
    cl_command_queue rq, bq;
    cl_kernel rk, bk;
    cl_mem rbuf, bbuf;
    sem_t sem;
} ctx;

static void on_done(ka_status st, void *user) {
    (void)st;
    sem_post(user);
}

__attribute__((noinline)) double bench_wait_loop(ctx *c, int mode, int iters) {
    size_t n = 64, local = 64;
    ka_range r = {.dims = 1, .size = {n}, .workgroup = {64}};
    ka_arg args[2] = {ka_arg_buffer(c->buf), ka_arg_f32(0)};
    int64_t t0 = bench_now_ns();
    int bad = 0; /* any failed call: the loop's time is then meaningless */
    for (int it = 0; it < iters && !bad; it++) {
        float v = (float)it;
        args[1] = ka_arg_f32(v);
        ka_event ev;
        switch (mode) {
        case RAW: {
            cl_event e;
            bad |= clSetKernelArg(c->rk, 1, sizeof(cl_mem), &c->rbuf) | clSetKernelArg(c->rk, 2, sizeof v, &v);
            if (clEnqueueNDRangeKernel(c->rq, c->rk, 1, NULL, &n, &local, 0, NULL, &e)) {
                bad = 1;
                break;
            }
            bad |= clWaitForEvents(1, &e) | clReleaseEvent(e);
            break;
        }
        case RAW_BASIC: {
            cl_event e;
            bad |= clSetKernelArg(c->bk, 1, sizeof(cl_mem), &c->bbuf) | clSetKernelArg(c->bk, 2, sizeof v, &v);
            if (clEnqueueNDRangeKernel(c->bq, c->bk, 1, NULL, &n, &local, 0, NULL, &e)) {
                bad = 1;
                break;
            }
            bad |= clFlush(c->bq) | clWaitForEvents(1, &e) | clReleaseEvent(e);
            break;
        }
        case ROUTED:
            if ((bad = ka_launch(c->routed, c->k, &r, args, 2, &ev) != KA_OK)) break;
            bad = ka_event_wait(ev, KA_WAIT_FOREVER) | ka_event_release(ev);
            break;
        case KA_DEFAULT:
            if ((bad = ka_launch(c->q, c->k, &r, args, 2, &ev) != KA_OK)) break;
            bad = ka_event_wait(ev, KA_WAIT_FOREVER) | ka_event_release(ev);
            break;
        case KA_POLL:
            if ((bad = ka_launch(c->q, c->k, &r, args, 2, &ev) != KA_OK)) break;
            ka_status st;
            ka_queue_flush(c->q);
            while ((st = ka_event_wait(ev, 0)) == KA_ERR_TIMEOUT) {}
            bad = st | ka_event_release(ev);
            break;
        case KA_SLEEP:
            if ((bad = ka_launch(c->q_nospin, c->k, &r, args, 2, &ev) != KA_OK)) break;
            bad = ka_event_wait(ev, KA_WAIT_FOREVER) | ka_event_release(ev);
            break;
        case KA_CALLBACK:
            if ((bad = ka_launch(c->q, c->k, &r, args, 2, &ev) != KA_OK)) break;
            /* a failed registration never runs the callback: no wait then */
            if ((bad = ka_event_on_complete(ev, on_done, &c->sem) != KA_OK)) {
                ka_event_release(ev);
                break;
            }
            bad = ka_event_release(ev);
            while (sem_wait(&c->sem)) {}
            break;
        case KA_EVENTFD: {
            if ((bad = ka_launch(c->q, c->k, &r, args, 2, &ev) != KA_OK)) break;
            if ((bad = ka_event_notify(ev) != KA_OK)) {
                ka_event_release(ev);
                break;
            }
            bad = ka_event_release(ev);
            struct pollfd p = {c->efd, POLLIN, 0};
            while (poll(&p, 1, -1) != 1) {}
            uint64_t cnt;
            if (read(c->efd, &cnt, sizeof cnt) < 0) return -1;
            break;
        }
        }
    }
    if (bad) {
        fprintf(stderr, "ka bench wait: a call failed in mode %d: %s\n", mode, ka_last_error());
        return -1;
    }
    return (double)(bench_now_ns() - t0) / iters;
}

typedef struct raw_side {
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k;
    cl_mem buf;
} raw_side;

/* In libka's own context, as in `ka bench launch`: program, kernel, queue and
 * buffer of its own. */
static int raw_setup(raw_side *r, cl_context kactx, cl_device_id d) {
    cl_int err = clRetainContext(kactx);
    if (err == CL_SUCCESS) r->ctx = kactx;
    if (err == CL_SUCCESS) r->q = clCreateCommandQueue(r->ctx, d, 0, &err);
    if (err == CL_SUCCESS) r->prog = clCreateProgramWithSource(r->ctx, 1, &raw_src, NULL, &err);
    if (err == CL_SUCCESS) err = clBuildProgram(r->prog, 1, &d, bench_cl_options(d), NULL, NULL);
    if (err == CL_SUCCESS) r->k = clCreateKernel(r->prog, "k", &err);
    if (err == CL_SUCCESS) r->buf = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    cl_ulong nd[4] = {64, 1, 1, 1};
    if (err == CL_SUCCESS) err = clSetKernelArg(r->k, 0, sizeof nd, nd);
    if (err != CL_SUCCESS) fprintf(stderr, "ka bench wait: raw OpenCL set-up failed (%d)\n", (int)err);
    return err != CL_SUCCESS;
}

static void raw_teardown(raw_side *r) {
    if (!r->ctx) return;
    clReleaseMemObject(r->buf);
    clReleaseKernel(r->k);
    clReleaseProgram(r->prog);
    clReleaseCommandQueue(r->q);
    clReleaseContext(r->ctx);
}

static double thread_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* Waits for a kernel of about target_ms; returns the waiting thread's CPU share. */
static double long_wait_share(ctx *c, double target_ms, double *wall_ms) {
    ka_range r = {.dims = 1, .size = {256}};
    uint32_t iters = 1u << 14;
    for (;;) {
        ka_arg a[2] = {ka_arg_buffer(c->buf), ka_arg_u32(iters)};
        ka_event ev;
        int64_t t0 = bench_now_ns();
        double cpu0 = thread_cpu_s();
        if (ka_launch(c->q, c->spin, &r, a, 2, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER)) return -1;
        double cpu = thread_cpu_s() - cpu0;
        double ms = (double)(bench_now_ns() - t0) / 1e6;
        ka_event_release(ev);
        if (ms >= target_ms || iters >= (1u << 30)) {
            *wall_ms = ms;
            return cpu / (ms / 1e3);
        }
        iters = ms > 1 ? (uint32_t)((double)iters * target_ms / ms * 1.1) : iters * 8;
    }
}

int bench_wait_main(int argc, char **argv) {
    const char *sel = NULL;
    int iters = 500, reps = 7, json = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) sel = argv[++i];
        else if (!strcmp(argv[i], "--iterations") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--spin") && i + 1 < argc) ka_set_wait_spin(atoll(argv[++i]));
        else {
            fputs("usage: ka bench wait [--device SEL] [--iterations N] [--reps R] [--spin NS] [--json]\n", stderr);
            return 2;
        }
    }
    ka_device dev;
    ctx c;
    memset(&c, 0, sizeof c);
    ka_program prog;
    if (ka_device_open(sel, &dev) || ka_queue_create(dev, NULL, &c.routed) ||
        ka_queue_create(dev, &(ka_queue_config){.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF}, &c.q) ||
        ka_queue_create(dev, &(ka_queue_config){.spin_ns = 0, .inline_max_items = KA_INLINE_OFF}, &c.q_nospin) || ka_program_build(dev, src, NULL, &prog) ||
        ka_kernel_get(prog, "k", NULL, &c.k) || ka_kernel_get(prog, "spin", NULL, &c.spin) ||
        ka_buffer_create(dev, 4096, &c.buf) || ka_queue_fd(c.q, &c.efd)) {
        fprintf(stderr, "ka bench wait: %s\n", ka_last_error());
        return 1;
    }
    sem_init(&c.sem, 0, 0);
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    ka_native_device nat = {0};
    if (di->backend == KA_BACKEND_OPENCL) ka_device_get_native(dev, &nat);
    int have[NMODES];
    for (int m = 0; m < NMODES; m++) have[m] = 1;
    have[RAW] = nat.device != NULL;
    have[RAW_BASIC] = nat.inline_device != NULL;
    raw_side rs = {0}, bs = {0};
    if (have[RAW] && raw_setup(&rs, nat.context, nat.device)) return 1;
    if (have[RAW_BASIC] && raw_setup(&bs, nat.context, nat.inline_device)) return 1;
    c.rq = rs.q, c.rk = rs.k, c.rbuf = rs.buf;
    c.bq = bs.q, c.bk = bs.k, c.bbuf = bs.buf;
    double *v[NMODES];
    for (int m = 0; m < NMODES; m++) v[m] = calloc((size_t)reps, sizeof(double));
    for (int m = 0; m < NMODES; m++)
        if (have[m] && bench_wait_loop(&c, m, 20) < 0) return 1; /* warm-up */
    for (int rep = 0; rep < reps; rep++)
        for (int i = 0; i < NMODES; i++) {
            int m = (i + rep) % NMODES; /* rotate the order */
            if (have[m] && (v[m][rep] = bench_wait_loop(&c, m, iters)) < 0) return 1;
        }
    double med[NMODES], mn[NMODES], mx[NMODES];
    for (int m = 0; m < NMODES; m++) {
        med[m] = bench_median(v[m], reps);
        mn[m] = bench_min(v[m], reps);
        mx[m] = bench_max(v[m], reps);
    }
    double wall_ms = 0, share = long_wait_share(&c, 200, &wall_ms);
    double ratio = have[RAW] && med[RAW] > 0 ? med[KA_DEFAULT] / med[RAW] : 0;
    if (json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"iterations\":%d,\"reps\":%d,\"wait_ratio\":%.4f,"
               "\"long_wait_cpu_share\":%.4f,\"long_wait_ms\":%.1f,\"routed_wait_ns\":%.1f,\"pthread_wait_ns\":%.1f",
               di->name, di->selector, iters, reps, ratio, share, wall_ms, med[ROUTED], med[KA_DEFAULT]);
        for (int m = 0; m < NMODES; m++)
            if (have[m]) printf(",\"%s_ns\":%.1f,\"%s_min\":%.1f,\"%s_max\":%.1f", mode_keys[m], med[m], mode_keys[m], mn[m],
                   mode_keys[m], mx[m]);
        printf("}\n");
    } else {
        printf("ka bench wait on %s (%s): launch + wait of a 64-item kernel, %d iterations x %d interleaved reps;\n"
               "all ka modes but the routed queue run with routing off\n",
               di->name, di->selector, iters, reps);
        printf("%-32s %12s %12s %12s\n", "mode", "median ns", "min", "max");
        for (int m = 0; m < NMODES; m++)
            if (have[m]) printf("%-32s %12.0f %12.0f %12.0f\n", mode_names[m], med[m], mn[m], mx[m]);
        printf("wait_ratio (ka default / raw, routing off): %.3f\n", ratio);
        printf("routed_wait_ns %.0f, pthread_wait_ns %.0f (ka, 64 items)\n", med[ROUTED], med[KA_DEFAULT]);
        printf("long wait: %.0f ms kernel, waiting thread's CPU share %.4f\n", wall_ms, share);
    }
    for (int m = 0; m < NMODES; m++) free(v[m]);
    raw_teardown(&rs);
    raw_teardown(&bs);
    ka_buffer_release(c.buf);
    ka_program_release(prog);
    ka_queue_release(c.q);
    ka_queue_release(c.q_nospin);
    ka_queue_release(c.routed);
    ka_device_close(dev);
    sem_destroy(&c.sem);
    return 0;
}
