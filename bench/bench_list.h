/* The benchmarks of `ka-bench`, one line each: X(NAME, ENTRY, SUMMARY), as in
 * libuv's test/benchmark-list.h. The usage text, `ka-bench list` and the
 * dispatch are all made from this list, so a new benchmark is one line here
 * (and its source file in CMakeLists.txt). ENTRY(argc, argv) gets argv[0] =
 * NAME, then the options; its usage starts "usage: ka-bench NAME". */
#ifndef KA_BENCH_LIST_H
#define KA_BENCH_LIST_H
#define BENCH_LIST(X)                                                                              \
    X(launch, bench_launch_main, "launch and launch + wait cost against raw OpenCL or CUDA")       \
    X(wait, bench_wait_main, "wait latency by mode")                                               \
    X(route, bench_route_main, "PoCL routing: launch + wait by work size, crossover, saxpy")       \
    X(compile, bench_compile_main, "persistent kernel cache: a new process, cold against warm")    \
    X(saxpy, bench_saxpy_main, "saxpy bandwidth against the device's copy bandwidth")              \
    X(graph, bench_graph_main, "recorded graph replay against its launches and the raw driver's") \
    X(primitives, bench_prims_main, "every primitive of ka_prims.h against OpenMP loops and (CUDA) CUB") \
    X(hostmem, bench_hostmem_main, "a time loop reading its field each step: copy against wrap + map") \
    X(timeloop, bench_timeloop_main, "heat-equation time loop (2-D, 3-D): libka against serial C, OpenMP and hand-written CUDA, by grid size") \
    X(barriers, bench_barriers_main, "kernels with barriers and local memory: tiled matmul, histogram, reduction") \
    X(fork, bench_fork_main, "a parallel launch + wait of an empty kernel against an empty OpenMP region")
#endif
