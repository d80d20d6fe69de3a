/* The KernelAbstractions.jl test suite, ported to libka: the semantics of its
 * tests, not its Julia code. One program, ka_testsuite, in four groups (files):
 * index, memory, atomics, misc. Indices are 0-based here where KA's are
 * 1-based; a Julia `Int` is an int64 (`long` in the dialect); KA's
 * column-major CartesianIndex order is libka's "dimension 0 fastest" linear
 * order. KA_TS_FILTER=pattern runs some tests only; KA_TS_TIMES=1 prints
 * each test's time.
 *
 * Where each KernelAbstractions testset went (KA file: testset -> group: test):
 *
 * test.jl ("Unittests")
 *   partition ..................................... index: partition_static_sizes
 *   indextest: Linear/Cartesian x Global/Local/Group, 16x16, 8, 16, 8x2 with
 *     8; non-multiples 7x7 and 5 with 8 .......... index: indextest_linear, indextest_cartesian,
 *                                                   indextest_not_multiple, indextest_static
 *   Const (@Const arguments) ...................... misc:  const_arguments
 *   kernel_val! (a Val{m} argument) ............... misc:  compile_time_values
 *   Zero iteration space .......................... index: zero_iteration_space
 *   GPU kernel return statement ................... index: early_return
 *   No CPU kernel (@context in a helper) .......... index: context_in_helper
 *   CPU synchronization ........................... misc:  events_and_ordering
 * launch.jl
 *   index layout (shapes x work-group sizes) ...... index: index_layout_dynamic
 *   static workgroupsize, static ndrange .......... index: index_layout_static
 *   empty ndrange ................................. index: zero_iteration_space
 *   unsafe_indices ................................ index: unsafe_indices
 *   many arguments ................................ index: many_arguments
 *   custom iteration space ........................ index: custom_iteration_space
 *   synchronize with padding lanes ................ index: sync_with_padding_lanes
 * intrinsics.jl; interface.jl launch parameters (1-3-D, 4-D errors)
 *                                                   index: index_layout_dynamic, dims_errors
 * nditeration.jl (blocks x work-items expand to the global index)
 *                                                   index: nditeration_expand
 * barriers.jl (trailing @uniform, branches, qualified @synchronize)
 *                                                   index: barriers_uniform_loops
 * localmem.jl (localmem, localmem2, unsafe indices: reversal in local memory)
 *                                                   memory: localmem_static, localmem_dynamic,
 *                                                   localmem_multiple
 * private.jl (stmt_form, private, forloop, reduce_private)
 *                                                   memory: private_across_barrier, private_forloop,
 *                                                   private_reduce
 * unroll.jl ....................................... memory: unroll
 * atomics.jl (Atomix and UnsafeAtomics: add, max/min, load/store, swap,
 *   replace, orderings, store/modify/cas/xchg/load, fences)
 *                                                   atomics: atomic_add_ints, atomic_add_float,
 *                                                   atomic_minmax, atomic_bitwise,
 *                                                   atomic_sub_and_returns, atomic_load_store_swap,
 *                                                   atomic_sequence, atomic_fence_message, atomic_local
 * groupreduce.jl, reduce.jl (@groupreduce) ........ atomics: groupreduce_local
 * interface.jl Sub-groups and shfl_down; tiles.jl tile operations
 *                                                   atomics: subgroup_ids, subgroup_ops,
 *                                                   subgroup_shuffle_reduce (skipped where the device
 *                                                   has no sub-groups, as on PoCL 3.1),
 *                                                   subgroup_config_validation (runs everywhere)
 * hostinterface.jl capability queries ............. atomics: device_caps
 * convert.jl (ceil/floor/round to each integer type)
 *                                                   misc:  convert_rounding, convert_saturation
 * specialfunctions.jl (gamma, erf, erfc) ........... misc:  special_functions
 * compiler.jl (literal_pow, square, pow with float and integer exponents), and
 *   the usual float functions ..................... misc:  math_functions
 * copyto.jl, async_copy.jl ........................ misc:  copies
 * print_test.jl ................................... misc:  printf_from_kernels (the output is captured
 *                                                   and checked, a TODO in KA)
 * events.jl ....................................... misc:  events_and_ordering
 * reflection.jl (@ka_code_typed of mul2, add3, addi) misc:  reflection_kernel_info
 * examples.jl: histogram, matmul, performant_matmul, naive_transpose, memcopy,
 *   memcopy_static ................................ atomics: example_histogram; misc: example_matmul,
 *                                                   example_tiled_matmul, example_transpose,
 *                                                   example_memcopy
 * Asked of libka beyond KA's suite: static and dynamic variants side by side
 * (misc: static_dynamic_coexist), the compiled-kernel cache's build counts
 * (misc: build_cache_counts), one kernel launched from 8 threads, on a shared
 * queue and on their own, every result checked (misc: concurrent_launches).
 *
 * KA testsets without a counterpart, and why:
 *   get_backend, sparse, adapt, functional, priority, empty arrays, Malformed
 *     allocations, @kernel as a closure, fallback callable types, return
 *     statement (a macro-expansion error), CPU default workgroupsize,
 *     devices.jl, hostinterface.jl device management and allocation: Julia's
 *     array and back-end types and host API, not the kernel language
 *     (libka's host API has tests of its own: test_errors, test_devices and the
 *     other API tests).
 *   Const's IR check (ldg / noalias in LLVM IR), compiler.jl's overdub checks,
 *     reflection.jl's typed code, private.jl's typetest and codegen (no
 *     gcframe), checked_add: properties of Julia's compiler; C states types
 *     statically. The behaviour is checked instead (KA_CONST compiles as
 *     const restrict and copies correctly; kernel info is reported).
 *   launch.jl's 0-dimensional ndrange (), 4-D shapes and offsets (0:8, -2:2):
 *     libka launches 1 to 3 dimensions from 0 (4-D is checked to be an
 *     error); kernels add their own offsets.
 *   atomics.jl orderings and syncscopes: OpenCL C 1.2 atomics are relaxed,
 *     with work-group fences (ka_fence, ka_barrier); the ordered sequence is
 *     checked for its values (atomic_sequence).
 *   tiles.jl ballot and tiles narrower than a sub-group: the dialect has no
 *     ballot (OpenCL 1.2 has none); its tiles are whole sub-groups.
 *   enzyme.jl, extensions/, quality_assurance.jl, linenumbers.jl, macros.jl,
 *     codegen*.jl, coverage.jl, profiling.jl, random.jl, spawn.jl,
 *     pocl_session.jl, foreach_index.jl, colon.jl, indexmap.jl,
 *     unsafe_getindex.jl, atomix_test.jl, the MPI and NUMA examples: Julia
 *     tooling and packages, or host-side iteration helpers, without a
 *     kernel-language meaning in C.
 */
#include "ka_testsuite.h"

#include <stdio.h>
#include <stdlib.h>

ts_env ts;

#define TS_MAX_BUFFERS 64
#define TS_MAX_ALLOCS 64
static ka_buffer bufs[TS_MAX_BUFFERS];
static unsigned nbufs;
static void *allocs[TS_MAX_ALLOCS];
static unsigned nallocs;

ka_program ts_build(const char *src) {
    ka_program p = {0};
    ka_status s = ka_program_build(ts.dev, src, NULL, &p);
    if (s != KA_OK) fail_msg("ka_program_build -> %s\n%s", ka_status_name(s), ka_last_error());
    return p;
}

ka_kernel ts_kernel(ka_program p, const char *name, const ka_kernel_config *cfg) {
    ka_kernel k = {0};
    ka_status s = ka_kernel_get(p, name, cfg, &k);
    if (s != KA_OK) fail_msg("ka_kernel_get(%s) -> %s\n%s", name, ka_status_name(s), ka_last_error());
    return k;
}

ka_buffer ts_buffer(size_t bytes, const void *init) {
    ka_buffer b = {0};
    if (nbufs == TS_MAX_BUFFERS) fail_msg("ts_buffer: more than %d buffers in one test", TS_MAX_BUFFERS);
    KA_OK_OR_FAIL(ka_buffer_create(ts.dev, bytes, &b));
    bufs[nbufs++] = b;
    if (init) {
        KA_OK_OR_FAIL(ka_buffer_write(ts.q, b, 0, init, bytes));
    } else {
        uint8_t zero = 0;
        KA_OK_OR_FAIL(ka_buffer_fill(ts.q, b, 0, &zero, 1, bytes, NULL));
    }
    return b;
}

ka_buffer ts_buffer_fill(size_t bytes, const void *pattern, size_t psize) {
    ka_buffer b = {0};
    if (nbufs == TS_MAX_BUFFERS) fail_msg("ts_buffer: more than %d buffers in one test", TS_MAX_BUFFERS);
    KA_OK_OR_FAIL(ka_buffer_create(ts.dev, bytes, &b));
    bufs[nbufs++] = b;
    KA_OK_OR_FAIL(ka_buffer_fill(ts.q, b, 0, pattern, psize, bytes, NULL));
    return b;
}

void ts_read(ka_buffer b, void *dst, size_t bytes) { KA_OK_OR_FAIL(ka_buffer_read(ts.q, dst, b, 0, bytes)); }

void ts_run(ka_kernel k, const ka_range *r, const ka_arg *args, uint32_t nargs) {
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(ts.q, k, r, args, nargs, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
}

void *ts_alloc(size_t bytes) {
    if (nallocs == TS_MAX_ALLOCS) fail_msg("ts_alloc: more than %d blocks in one test", TS_MAX_ALLOCS);
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) fail_msg("ts_alloc: out of memory");
    allocs[nallocs++] = p;
    return p;
}

int ts_pocl_major(void) {
    if (!strstr(ts.info->platform, "Portable Computing Language")) return 0;
    return atoi(ts.info->driver_version);
}

void ts_check_local_mem(ka_kernel k, uint64_t declared, const char *what) {
    ka_kernel_info info;
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &info));
    if (info.local_mem_bytes == 0 && ts_pocl_major() >= 5) {
        print_message("[   INFO   ] %s: PoCL %d reports no local memory for the kernel's %llu declared bytes\n", what,
                      ts_pocl_major(), (unsigned long long)declared);
        return;
    }
    if (info.local_mem_bytes < declared)
        fail_msg("%s: kernel info reports %llu bytes of local memory, it declares %llu", what,
                 (unsigned long long)info.local_mem_bytes, (unsigned long long)declared);
}

static double now_s(void) { return 1e-9 * (double)now_ns(); }
static double test_start;

int ts_setup(void **state) {
    (void)state;
    test_start = now_s();
    return 0;
}

int ts_teardown(void **state) {
    (void)state;
    if (getenv("KA_TS_TIMES")) print_message("[   TIME   ] %.3f s\n", now_s() - test_start);
    ka_queue_finish(ts.q);
    for (unsigned i = 0; i < nbufs; i++) ka_buffer_release(bufs[i]);
    nbufs = 0;
    for (unsigned i = 0; i < nallocs; i++) free(allocs[i]);
    nallocs = 0;
    return 0;
}

int main(void) {
    ka_status s = ka_device_open(NULL, &ts.dev);
    if (s != KA_OK) {
        printf("ka_testsuite: no device (%s: %s), skipped\n", ka_status_name(s), ka_last_error());
        return 77;
    }
    if (ka_device_get_info(ts.dev, &ts.info) != KA_OK || ka_queue_create(ts.dev, NULL, &ts.q) != KA_OK) {
        printf("ka_testsuite: %s\n", ka_last_error());
        return 1;
    }
    printf("ka_testsuite on %s (%s, %s)\n", ts.info->name, ts.info->selector, ts.info->version);
    /* KA_TS_FILTER=pattern runs the matching tests only (cmocka's * and ? wildcards) */
    if (getenv("KA_TS_FILTER")) cmocka_set_test_filter(getenv("KA_TS_FILTER"));
    int failed = 0;
    failed += ts_group_index();
    failed += ts_group_memory();
    failed += ts_group_atomics();
    failed += ts_group_misc();
    ka_queue_release(ts.q);
    ka_device_close(ts.dev);
    return failed;
}
