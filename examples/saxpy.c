/* saxpy with libka: y = a*x + y on the default device, result checked. */
#include "saxpy.h"

#include <ka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *src =
    "KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_GLOBAL const float *x, float a, uint n) {\n"
    "    if (!ka_in_range()) return;            /* padded lanes of the last group */\n"
    "    size_t i = ka_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

#define CHECK(call)                                                                        \
    do {                                                                                   \
        ka_status s_ = (call);                                                             \
        if (s_ != KA_OK) {                                                                 \
            fprintf(stderr, "%s failed: %s\n%s\n", #call, ka_strerror(s_), ka_last_error()); \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int ka_run_saxpy(const char *sel, uint32_t n) {
    ka_device dev;
    ka_queue q;
    ka_program prog;
    ka_kernel k;
    ka_buffer x, y;
    CHECK(ka_device_open(sel, &dev));
    const ka_device_info *info;
    CHECK(ka_device_get_info(dev, &info));
    printf("device: %s (%s)\n", info->name, info->selector);
    CHECK(ka_queue_create(dev, NULL, &q));
    CHECK(ka_program_build(dev, src, NULL, &prog));
    CHECK(ka_kernel_get(prog, "saxpy", NULL, &k));
    float *hx = malloc(n * sizeof *hx), *hy = malloc(n * sizeof *hy);
    if (!hx || !hy) return 1;
    for (uint32_t i = 0; i < n; i++) hx[i] = (float)i, hy[i] = 1.0f;
    CHECK(ka_buffer_create(dev, n * sizeof(float), &x));
    CHECK(ka_buffer_create(dev, n * sizeof(float), &y));
    CHECK(ka_buffer_write(q, x, 0, hx, n * sizeof(float)));
    CHECK(ka_buffer_write(q, y, 0, hy, n * sizeof(float)));
    ka_arg args[] = {ka_arg_buffer(y), ka_arg_buffer(x), ka_arg_f32(2.0f), ka_arg_u32(n)};
    ka_event ev;
    CHECK(ka_launch(q, k, &(ka_range){.dims = 1, .size = {n}}, args, 4, &ev));
    CHECK(ka_event_wait(ev, KA_WAIT_FOREVER));
    CHECK(ka_event_release(ev));
    CHECK(ka_buffer_read(q, hy, y, 0, n * sizeof(float)));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++)
        if (fabsf(hy[i] - (2.0f * (float)i + 1.0f)) > 1e-3f * (2.0f * (float)i + 1.0f)) bad++;
    printf("saxpy: n=%u, %u wrong elements: %s\n", n, bad, bad ? "FAIL" : "OK");
    free(hx);
    free(hy);
    ka_buffer_release(x);
    ka_buffer_release(y);
    ka_program_release(prog);
    ka_queue_release(q);
    CHECK(ka_device_close(dev));
    return bad ? 1 : 0;
}

#ifndef KA_SAXPY_NO_MAIN
int main(int argc, char **argv) {
    /* n defaults to a prime: not a multiple of any work-group size */
    return ka_run_saxpy(argc > 1 ? argv[1] : NULL, argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1000003);
}
#endif
