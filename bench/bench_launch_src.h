/* The kernel `ka-bench launch` times (and bench/route_count.c counts): nargs
 * user arguments, a buffer then floats, in libka's dialect or, taking the
 * same parameters after the 32-byte range, raw OpenCL C or CUDA C++. */
#ifndef KA_BENCH_LAUNCH_SRC_H
#define KA_BENCH_LAUNCH_SRC_H
#include <stdio.h>
#include <stdlib.h>

enum { SRC_KA, SRC_OPENCL, SRC_CUDA };

/* malloc'd source: free it. */
static inline char *bench_launch_source(int nargs, int form) {
    static const char cuda_head[] = "struct nd_t { unsigned long long x, y, z, w; };\n"
                                    "extern \"C\" __global__ void k(const nd_t nd, float *p0";
    static const char *head[] = {"KA_KERNEL(k, KA_GLOBAL float *p0", "__kernel void k(ulong4 nd, __global float *p0",
                                 cuda_head};
    static const char *body[] = {") { if (ka_global_id(0) == 0) p0[0] = 1.0f; }\n",
                                 ") { if (get_global_id(0) == 0) p0[0] = 1.0f; }\n",
                                 ") { if (blockIdx.x * blockDim.x + threadIdx.x == 0) p0[0] = 1.0f; }\n"};
    size_t cap = 256 + (size_t)nargs * 32;
    char *s = malloc(cap);
    int n = snprintf(s, cap, "%s", head[form]);
    for (int i = 1; i < nargs; i++) n += snprintf(s + n, cap - (size_t)n, ", float s%d", i);
    snprintf(s + n, cap - (size_t)n, "%s", body[form]);
    return s;
}
#endif
