/* ka-bench wait: latency of launch + wait of an almost empty kernel by each
 * wait mode, against raw clWaitForEvents in the same process (interleaved
 * repetitions, medians), and the CPU the waiting thread burns while waiting
 * for a long kernel. */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <limits.h>
#include <poll.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_cuda.h"

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
        fprintf(stderr, "ka-bench wait: a call failed in mode %d: %s\n", mode, ka_last_error());
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

/* In libka's own context, as in `ka-bench launch`: program, kernel, queue and
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
    if (err != CL_SUCCESS) fprintf(stderr, "ka-bench wait: raw OpenCL set-up failed (%d)\n", (int)err);
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

/* Waits for a kernel of about target_ms; returns the waiting thread's CPU
 * share. The kernel found, it waits for it twice more and reports the last
 * wait: the steady state of a thread that waits on such kernels (a GPU's
 * default spin adapts to the thread's last two waits on the queue, and the
 * first long waits follow short ones); *first_share is the first one's. */
static double long_wait_share(ctx *c, double target_ms, double *wall_ms, double *first_share) {
    ka_range r = {.dims = 1, .size = {256}};
    uint32_t iters = 1u << 14;
    int found = 0;
    for (;;) {
        ka_arg a[2] = {ka_arg_buffer(c->buf), ka_arg_u32(iters)};
        ka_event ev;
        int64_t t0 = bench_now_ns();
        double cpu0 = thread_cpu_s();
        if (ka_launch(c->q, c->spin, &r, a, 2, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER)) return -1;
        double cpu = thread_cpu_s() - cpu0;
        double ms = (double)(bench_now_ns() - t0) / 1e6;
        ka_event_release(ev);
        if (found && ++found == 3) {
            *wall_ms = ms;
            return cpu / (ms / 1e3);
        }
        if (found) continue;
        if (ms >= target_ms || iters >= (1u << 30)) {
            *first_share = cpu / (ms / 1e3);
            found = 1;
            continue;
        }
        iters = ms > 1 ? (uint32_t)((double)iters * target_ms / ms * 1.1) : iters * 8;
    }
}

/* ---- waits on a kernel of about 1 ms ---------------------------------------
 * The same kernel through libka and, on CUDA, raw: it reads its loop count
 * from p[0] (a float, exact below 2^24), so the raw loop of bench_cuda.c,
 * which passes (range, p, one float that changes per launch), runs it. */
static const char *ms_src =
    "KA_KERNEL(spinf, KA_GLOBAL float *p, float v) {\n"
    "    if (!ka_in_range()) return;\n"
    "    uint iters = (uint)p[0];\n"
    "    float x = v;\n"
    "    for (uint i = 0; i < iters; i++) x = x * 0.999f + 0.5f;\n"
    "    p[1 + ka_global_id(0)] = x;\n"
    "}\n";
static const char *ms_cu_src =
    "struct nd_t { unsigned long long x, y, z, w; };\n"
    "extern \"C\" __global__ void spinf(const nd_t nd, float *p, float v) {\n"
    "    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= nd.x) return;\n"
    "    unsigned iters = (unsigned)p[0];\n"
    "    float x = v;\n"
    "    for (unsigned k = 0; k < iters; k++) x = x * 0.999f + 0.5f;\n"
    "    p[1 + i] = x;\n"
    "}\n";

/* RAW_STREAM: cuLaunchKernel + cuStreamSynchronize; RAW_EVENT: + cuEventRecord
 * + cuEventSynchronize (a spinning event); KA_MS: the default queue, unbounded
 * wait; KA_MS_BLOCK: spin 0, unbounded wait (on CUDA: blocks in the driver);
 * KA_MS_TIMED: spin 0, a 10 s timeout (the completion callback path). */
/* KA_FINISH: libka's launch (no event) + ka_queue_finish (cuStreamSynchronize):
 * the raw wait after libka's launch and kernel, so the kernel's and the wait's
 * shares of a difference to raw show apart. */
enum { MS_RAW_STREAM, MS_RAW_EVENT, MS_KA, MS_KA_BLOCK, MS_KA_TIMED, MS_KA_FINISH, NMS };
static const char *ms_names[NMS] = {"raw launch + cuStreamSynchronize", "raw launch + event record + sync",
                                    "ka default queue, wait forever", "ka spin 0, wait forever",
                                    "ka spin 0, wait with a timeout", "ka launch + ka_queue_finish"};
static const char *ms_keys[NMS] = {"raw_stream", "raw_event", "ka", "ka_spin0", "ka_spin0_timed", "ka_finish"};

typedef struct ms_side {
    ka_kernel k;
    ka_buffer buf;
    bench_cu *cu;
    uint64_t rbuf;
} ms_side;

/* ns per launch + wait of the 1 ms kernel through libka; *cpu: the waiting
 * thread's CPU share meanwhile. timeout MS_FINISH: no event, ka_queue_finish. */
#define MS_FINISH (-2)
static double ms_loop_ka(ms_side *m, ka_queue q, int64_t timeout, int n, double *cpu) {
    ka_range r = {.dims = 1, .size = {64}, .workgroup = {64}};
    int64_t t0 = bench_now_ns();
    double c0 = thread_cpu_s();
    for (int i = 0; i < n; i++) {
        ka_arg a[2] = {ka_arg_buffer(m->buf), ka_arg_f32((float)i)};
        if (timeout == MS_FINISH) {
            if (ka_launch(q, m->k, &r, a, 2, NULL) != KA_OK || ka_queue_finish(q) != KA_OK) return -1;
            continue;
        }
        ka_event ev;
        if (ka_launch(q, m->k, &r, a, 2, &ev) != KA_OK) return -1;
        ka_status st = ka_event_wait(ev, timeout);
        if (ka_event_release(ev) != KA_OK || st != KA_OK) return -1;
    }
    double ns = (double)(bench_now_ns() - t0);
    if (cpu) *cpu = (thread_cpu_s() - c0) / (ns / 1e9);
    return ns / n;
}

static int ms_set_iters(ms_side *m, ka_queue q, uint32_t iters) {
    float f = (float)iters;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (ka_buffer_write(q, m->buf, 0, &f, sizeof f) != KA_OK) return -1;
    return m->cu && bench_cu_fill32(m->cu, m->rbuf, bits, 1) ? -1 : 0;
}

/* Finds the loop count of a kernel of about target_ns on q's waits. 0 on failure. */
static uint32_t ms_calibrate(ms_side *m, ka_queue q, double target_ns) {
    uint32_t iters = 1024;
    for (int step = 0; step < 40; step++) {
        double t;
        if (ms_set_iters(m, q, iters) || (t = ms_loop_ka(m, q, KA_WAIT_FOREVER, 3, NULL)) < 0) return 0;
        if ((t > 0.95 * target_ns && t < 1.05 * target_ns) || iters >= (1u << 24)) return iters;
        double f = target_ns / (t > 1 ? t : 1);
        f = f > 8 ? 8 : f < 0.125 ? 0.125 : f;
        iters = (uint32_t)((double)iters * (step < 8 ? f : 1 + (f - 1) / 2)); /* damped once close */
        if (iters < 1) iters = 1;
        if (iters > (1u << 24)) iters = 1u << 24;
    }
    return iters;
}

typedef struct ms_result {
    int have[NMS];
    double med[NMS], mn[NMS], mx[NMS], cpu[NMS];
    uint32_t iters;
    const char *why; /* no raw rows: why */
} ms_result;

/* The 1 ms rows, interleaved repetitions of n launches each. */
static int ms_rows(ka_device dev, ctx *c, int reps, ms_result *res) {
    static char why[4096];
    const ka_device_info *di;
    ms_side m = {0};
    ka_program p;
    memset(res, 0, sizeof *res);
    if (ka_device_get_info(dev, &di) || ka_program_build(dev, ms_src, NULL, &p) || ka_kernel_get(p, "spinf", NULL, &m.k) ||
        ka_buffer_create(dev, 4096, &m.buf)) {
        fprintf(stderr, "ka-bench wait: 1 ms kernel: %s\n", ka_last_error());
        return -1;
    }
    snprintf(why, sizeof why, "not a CUDA device");
    if (di->backend == KA_BACKEND_CUDA) {
        m.cu = bench_cu_open(dev, why, sizeof why);
        if (m.cu && (bench_cu_build(m.cu, ms_cu_src, "spinf", why, sizeof why) || bench_cu_alloc(m.cu, 4096, &m.rbuf))) {
            fprintf(stderr, "ka-bench wait: raw CUDA set-up failed: %s\n", why);
            return -1;
        }
        if (!m.cu) fprintf(stderr, "ka-bench wait: no raw CUDA comparison: %s\n", why);
    }
    res->why = why;
    for (int j = 0; j < NMS; j++) res->have[j] = j >= MS_KA || m.cu != NULL;
    res->iters = ms_calibrate(&m, c->q, 1e6);
    if (!res->iters) {
        fprintf(stderr, "ka-bench wait: 1 ms kernel: %s\n", ka_last_error());
        return -1;
    }
    const int n = 50;
    double *v[NMS], *cpu[NMS];
    for (int j = 0; j < NMS; j++) v[j] = calloc((size_t)reps + 1, sizeof(double)), cpu[j] = calloc((size_t)reps + 1, sizeof(double));
    int rc = 0;
    for (int rep = -1; rep < reps && !rc; rep++) /* rep -1 warms up (and teaches the adaptive spin) */
        for (int i = 0; i < NMS && !rc; i++) {
            int j = (i + (rep < 0 ? 0 : rep)) % NMS, k = rep < 0 ? reps : rep;
            if (!res->have[j]) continue;
            double t, share = 0;
            if (j == MS_RAW_STREAM || j == MS_RAW_EVENT) {
                double c0 = thread_cpu_s();
                int64_t t0 = bench_now_ns();
                t = bench_cu_launch_loop(m.cu, m.rbuf, 2, n, j == MS_RAW_STREAM ? BENCH_CU_STREAM_SYNC : BENCH_CU_EVENT_SYNC,
                                         64, 64);
                share = (thread_cpu_s() - c0) / ((double)(bench_now_ns() - t0) / 1e9);
            } else {
                t = ms_loop_ka(&m, j == MS_KA || j == MS_KA_FINISH ? c->q : c->q_nospin,
                               j == MS_KA_TIMED ? 10000000000LL : j == MS_KA_FINISH ? MS_FINISH : KA_WAIT_FOREVER, n, &share);
            }
            if (t <= 0) {
                fprintf(stderr, "ka-bench wait: 1 ms kernel, %s: a call failed: %s\n", ms_names[j], ka_last_error());
                rc = -1;
            }
            v[j][k] = t, cpu[j][k] = share;
        }
    for (int j = 0; j < NMS; j++) {
        if (res->have[j] && !rc) {
            res->med[j] = bench_median(v[j], reps);
            res->mn[j] = bench_min(v[j], reps);
            res->mx[j] = bench_max(v[j], reps);
            res->cpu[j] = bench_median(cpu[j], reps);
        }
        free(v[j]), free(cpu[j]);
    }
    if (m.cu) {
        bench_cu_free(m.cu, m.rbuf);
        bench_cu_close(m.cu);
    }
    ka_buffer_release(m.buf);
    ka_program_release(p);
    return rc;
}

static const char usage[] =
    "usage: ka-bench wait [--device SEL] [--iterations N] [--reps R] [--spin NS] [--json]\n"
    "  Launch + wait of a 64-item kernel by each wait mode against raw waits, in one process\n"
    "  (interleaved repetitions, medians), and the CPU the waiting thread burns on a long kernel.\n"
    "  --iterations N   launches per repetition, at least 1 (default 500)\n"
    "  --reps R         repetitions, 1 to 100000 (default 7)\n"
    "  --spin NS        process-wide spin before sleeping in waits, 0 to 60000000000 ns\n"
    "                   (default: each device's own)\n";

int bench_wait_main(int argc, char **argv) {
    static const struct option lo[] = {BENCH_OPT_DEVICE, BENCH_OPT_ITERATIONS, BENCH_OPT_REPS, BENCH_OPT_JSON,
                                       {"spin", required_argument, NULL, 's'}, BENCH_OPT_END};
    bench_opts o = {.iters = 500, .reps = 7};
    uint64_t spin;
    cli cl;
    cli_init(&cl, "ka-bench wait", usage, argc, argv, "h", lo);
    const char *arg;
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        int st;
        if (r == 's') {
            if (cli_u64(&cl, arg, 0, 60000000000ull, &spin)) return KA_EXIT_USAGE;
            ka_set_wait_spin((int64_t)spin);
        } else if ((st = bench_option(&cl, r, arg, &o)) >= 0) {
            return st;
        }
    }
    const char *sel = o.sel;
    int iters = o.iters, reps = o.reps, json = o.json;
    ka_device dev;
    ctx c;
    memset(&c, 0, sizeof c);
    ka_program prog;
    if (cli_device_open(&cl, sel, &dev)) return KA_EXIT_FAIL;
    if (ka_queue_create(dev, NULL, &c.routed) ||
        ka_queue_create(dev, &(ka_queue_config){.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF}, &c.q) ||
        ka_queue_create(dev, &(ka_queue_config){.spin_ns = 0, .inline_max_items = KA_INLINE_OFF}, &c.q_nospin) || ka_program_build(dev, src, NULL, &prog) ||
        ka_kernel_get(prog, "k", NULL, &c.k) || ka_kernel_get(prog, "spin", NULL, &c.spin) ||
        ka_buffer_create(dev, 4096, &c.buf) || ka_queue_fd(c.q, &c.efd)) {
        fprintf(stderr, "ka-bench wait: %s\n", ka_last_error());
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
    ms_result ms;
    if (ms_rows(dev, &c, reps, &ms)) return 1;
    double wall_ms = 0, first_share = 0, share = long_wait_share(&c, 200, &wall_ms, &first_share);
    double ratio = have[RAW] && med[RAW] > 0 ? med[KA_DEFAULT] / med[RAW] : 0;
    double ms_extra = ms.have[MS_RAW_STREAM] ? ms.med[MS_KA] - ms.med[MS_RAW_STREAM] : 0;
    if (json) {
        printf("{\"device\":\"%s\",\"selector\":\"%s\",\"iterations\":%d,\"reps\":%d,\"wait_ratio\":%.4f,"
               "\"long_wait_cpu_share\":%.4f,\"long_wait_first_cpu_share\":%.4f,\"long_wait_ms\":%.1f,"
               "\"routed_wait_ns\":%.1f,\"pthread_wait_ns\":%.1f",
               di->name, di->selector, iters, reps, ratio, share, first_share, wall_ms, med[ROUTED], med[KA_DEFAULT]);
        for (int m = 0; m < NMODES; m++)
            if (have[m]) printf(",\"%s_ns\":%.1f,\"%s_min\":%.1f,\"%s_max\":%.1f", mode_keys[m], med[m], mode_keys[m], mn[m],
                   mode_keys[m], mx[m]);
        printf(",\"ms_kernel_iters\":%u", ms.iters);
        for (int j = 0; j < NMS; j++)
            if (ms.have[j])
                printf(",\"ms_%s_ns\":%.1f,\"ms_%s_min\":%.1f,\"ms_%s_max\":%.1f,\"ms_%s_cpu_share\":%.4f", ms_keys[j],
                       ms.med[j], ms_keys[j], ms.mn[j], ms_keys[j], ms.mx[j], ms_keys[j], ms.cpu[j]);
        if (ms.have[MS_RAW_STREAM]) printf(",\"ms_ka_extra_ns\":%.1f", ms_extra);
        printf("}\n");
    } else {
        printf("ka-bench wait on %s (%s): launch + wait of a 64-item kernel, %d iterations x %d interleaved reps;\n"
               "all ka modes but the routed queue run with routing off\n",
               di->name, di->selector, iters, reps);
        printf("%-32s %12s %12s %12s\n", "mode", "median ns", "min", "max");
        for (int m = 0; m < NMODES; m++)
            if (have[m]) printf("%-32s %12.0f %12.0f %12.0f\n", mode_names[m], med[m], mn[m], mx[m]);
        printf("wait_ratio (ka default / raw, routing off): %.3f\n", ratio);
        printf("routed_wait_ns %.0f, pthread_wait_ns %.0f (ka, 64 items)\n", med[ROUTED], med[KA_DEFAULT]);
        printf("long wait: %.0f ms kernel, waiting thread's CPU share %.4f (the first such wait: %.4f)\n", wall_ms, share,
               first_share);
        printf("kernel of about 1 ms (64 items, %u loop iterations), launch + wait, %d launches x %d interleaved reps%s%s\n",
               ms.iters, 50, reps, ms.have[MS_RAW_STREAM] ? "" : "; no raw rows: ", ms.have[MS_RAW_STREAM] ? "" : ms.why);
        printf("%-36s %12s %12s %12s %10s\n", "mode", "median ns", "min", "max", "CPU share");
        for (int j = 0; j < NMS; j++)
            if (ms.have[j]) printf("%-36s %12.0f %12.0f %12.0f %10.3f\n", ms_names[j], ms.med[j], ms.mn[j], ms.mx[j], ms.cpu[j]);
        if (ms.have[MS_RAW_STREAM]) printf("ka default wait over raw stream sync, 1 ms kernel: %+.0f ns\n", ms_extra);
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
