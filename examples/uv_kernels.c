/* Kernels driven from a libuv event loop: the queue's eventfd is watched by
 * uv_poll, so the loop waits for the device with no extra thread and keeps
 * serving its timer while a long kernel runs. */
#include <ka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <uv.h>

static const char *src =
    "KA_KERNEL(work, KA_GLOBAL float *p, uint iters) {\n"
    "    if (!ka_in_range()) return;\n"
    "    float x = p[ka_global_id(0)];\n"
    "    for (uint i = 0; i < iters; i++) x = x * 0.999f + 0.5f;\n"
    "    p[ka_global_id(0)] = x;\n"
    "}\n";

typedef struct app {
    ka_queue q;
    ka_event ev;
    uv_timer_t timer;
    uv_poll_t poll;
    int timer_fires, fires_during_kernel, done;
    uint64_t t_launch, t_done;
} app;

static void on_timer(uv_timer_t *t) {
    app *a = t->data;
    a->timer_fires++;
    if (!a->done) a->fires_during_kernel++;
}

static void on_readable(uv_poll_t *p, int status, int events) {
    app *a = p->data;
    (void)events;
    uint64_t n;
    if (status < 0 || read(p->io_watcher.fd, &n, sizeof n) != sizeof n) return; /* spurious */
    if (ka_event_wait(a->ev, 0) != KA_OK) return; /* not ours yet */
    a->done = 1;
    a->t_done = uv_now(p->loop);
    ka_event_release(a->ev);
    uv_poll_stop(p);
    uv_timer_stop(&a->timer);
}

/* Runs one kernel of about kernel_ms while a 10 ms timer ticks; returns 0 on
 * success and how often the timer fired while the kernel ran. */
int uv_kernels_run(const char *sel, double kernel_ms, int *fires_during, double *measured_ms);
int uv_kernels_run(const char *sel, double kernel_ms, int *fires_during, double *measured_ms) {
    ka_device dev;
    ka_program prog;
    ka_kernel k;
    ka_buffer buf;
    app a = {0};
    /* Routing off: this kernel has few work-items but runs long. */
    ka_queue_config cfg = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
    if (ka_device_open(sel, &dev) || ka_queue_create(dev, &cfg, &a.q) || ka_program_build(dev, src, NULL, &prog) ||
        ka_kernel_get(prog, "work", NULL, &k) || ka_buffer_create(dev, 256 * sizeof(float), &buf)) {
        fprintf(stderr, "uv_kernels: %s\n", ka_last_error());
        return 1;
    }
    /* Calibrate the loop count to the wanted duration. */
    uint32_t iters = 1u << 14;
    ka_range r = {.dims = 1, .size = {256}};
    for (;;) {
        ka_arg args[] = {ka_arg_buffer(buf), ka_arg_u32(iters)};
        ka_event ev;
        uint64_t t0 = uv_hrtime();
        if (ka_launch(a.q, k, &r, args, 2, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER)) return 1;
        ka_event_release(ev);
        double ms = (double)(uv_hrtime() - t0) / 1e6;
        if (ms >= kernel_ms || iters >= (1u << 30)) break;
        iters = ms > 1 ? (uint32_t)((double)iters * kernel_ms / ms * 1.2) : iters * 8;
    }
    int fd;
    if (ka_queue_fd(a.q, &fd)) return 1;
    uv_loop_t *loop = uv_default_loop();
    uv_timer_init(loop, &a.timer);
    a.timer.data = &a;
    uv_poll_init(loop, &a.poll, fd);
    a.poll.data = &a;
    ka_arg args[] = {ka_arg_buffer(buf), ka_arg_u32(iters)};
    uv_update_time(loop);
    a.t_launch = uv_now(loop);
    if (ka_launch(a.q, k, &r, args, 2, &a.ev) || ka_event_notify(a.ev)) {
        fprintf(stderr, "uv_kernels: %s\n", ka_last_error());
        return 1;
    }
    uv_timer_start(&a.timer, on_timer, 10, 10);
    uv_poll_start(&a.poll, UV_READABLE, on_readable);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&a.timer, NULL);
    uv_close((uv_handle_t *)&a.poll, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    *fires_during = a.fires_during_kernel;
    *measured_ms = (double)(a.t_done - a.t_launch);
    ka_buffer_release(buf);
    ka_program_release(prog);
    ka_queue_release(a.q);
    ka_device_close(dev);
    return a.done ? 0 : 1;
}

#ifndef KA_UV_NO_MAIN
int main(int argc, char **argv) {
    int fires;
    double ms;
    if (uv_kernels_run(argc > 1 ? argv[1] : NULL, 200, &fires, &ms)) return 1;
    printf("kernel ran %.0f ms; the loop's 10 ms timer fired %d times meanwhile\n", ms, fires);
    return fires >= 5 ? 0 : 1;
}
#endif
