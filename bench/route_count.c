/* The loop bench/callgrind_route.sh counts: ka-bench launch's ka loop
 * (64 work-items, a buffer then floats, one float changing every launch) on
 * the default queue, with adaptive routing's measured times replaced by fixed
 * ones (the link replaces libka's internal ka__pocl_route_sample with
 * __wrap_ka__pocl_route_sample below: this program links libka's objects),
 * so the path does not depend on how slow valgrind makes each launch.
 * Usage: ka-route-count ITERATIONS ARGS [launch|wait] [inline|threaded] */
#include "bench_launch_src.h"
#include "pocl/pocl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned faster; /* the path the injected times favour */

void __real_ka__pocl_route_sample(ka__pocl_bucket *b, unsigned path, uint64_t items, int64_t ns);
void __wrap_ka__pocl_route_sample(ka__pocl_bucket *b, unsigned path, uint64_t items, int64_t ns);
void __wrap_ka__pocl_route_sample(ka__pocl_bucket *b, unsigned path, uint64_t items, int64_t ns) {
    (void)ns;
    __real_ka__pocl_route_sample(b, path, items, path == faster ? 1000 : 100000);
}

static ka_queue q;
static ka_kernel k;
static ka_arg args[64];

/* The counted loop (callgrind --toggle-collect=route_count_loop). */
__attribute__((noinline)) void route_count_loop(int iters, int nargs, int wait) {
    ka_range r = {.dims = 1, .size = {64}};
    for (int it = 0; it < iters; it++) {
        if (nargs > 1) args[1] = ka_arg_f32((float)it);
        if (wait) {
            ka_event ev;
            ka_launch(q, k, &r, args, (uint32_t)nargs, &ev);
            ka_event_wait(ev, KA_WAIT_FOREVER);
            ka_event_release(ev);
        } else {
            ka_launch(q, k, &r, args, (uint32_t)nargs, NULL);
        }
    }
}

int main(int argc, char **argv) {
    int iters = argc > 2 ? atoi(argv[1]) : 0, nargs = argc > 2 ? atoi(argv[2]) : 0;
    if (iters < 1 || nargs < 1 || nargs > 64) {
        fprintf(stderr, "usage: ka-route-count ITERATIONS ARGS(1-64) [launch|wait] [inline|threaded]\n");
        return 2;
    }
    int wait = argc > 3 && !strcmp(argv[3], "wait");
    faster = argc > 4 && !strcmp(argv[4], "threaded") ? KA__PATH_THREADED : KA__PATH_INLINE;
    char *src = bench_launch_source(nargs, SRC_KA);
    ka_device d;
    ka_program p;
    ka_buffer b;
    if (ka_device_open(NULL, &d) || ka_program_build(d, src, NULL, &p) || ka_kernel_get(p, "k", NULL, &k) ||
        ka_buffer_create(d, 4096, &b) || ka_queue_create(d, NULL, &q)) {
        fprintf(stderr, "ka-route-count: %s\n", ka_last_error());
        free(src);
        return 1;
    }
    free(src);
    args[0] = ka_arg_buffer(b);
    for (int i = 1; i < nargs; i++) args[i] = ka_arg_f32((float)i);
    route_count_loop(50, nargs, 1); /* warm-up: builds, the first local size, routing's first samples */
    route_count_loop(iters, nargs, wait);
    ka_queue_finish(q);
    ka_queue_stats s;
    ka_queue_get_stats(q, &s);
    printf("%llu inline launches of %d\n", (unsigned long long)s.inline_launches, iters + 50);
    ka_queue_release(q);
    ka_buffer_release(b);
    ka_program_release(p);
    ka_device_close(d);
    return 0;
}
