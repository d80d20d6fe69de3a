/* The CUDA back-end on a real GPU: device info, transfers and every fill
 * pattern, build errors, argument checks, dynamic shared memory beyond 48 KiB,
 * events (many in flight, callbacks, eventfd), recorded graphs as CUDA
 * graphs, and, with --fault, a kernel that faults (run in its own process: a
 * fault poisons the CUDA context).
 * Skips (77) where no CUDA device is present. */
#include "test_util.h"

#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static const char *src =
    "KA_KERNEL(inc, KA_GLOBAL int *p, int by) { if (ka_in_range()) p[ka_global_id(0)] += by; }\n"
    KA_TEST_SPIN_KERNEL("spin")
    /* Sums a group's slice through a large dynamic local array. */
    "KA_KERNEL(bigsmem, KA_GLOBAL long *o, KA_LOCAL_ARG(int) a, uint n) {\n"
    "    for (uint i = (uint)ka_local_id(0); i < n; i += (uint)ka_group_size(0)) a[i] = (int)i;\n"
    "    ka_barrier();\n"
    "    if (ka_local_id(0) == 0) { long s = 0; for (uint i = 0; i < n; i++) s += a[i]; o[ka_group_id(0)] = s; }\n"
    "}\n"
    "KA_KERNEL(values, KA_GLOBAL ulong *o, char c, short s, int i, long l, float f, double d) {\n"
    "    o[0] = (ulong)(long)c; o[1] = (ulong)(long)s; o[2] = (ulong)(long)i; o[3] = (ulong)l;\n"
    "    o[4] = (ulong)as_uint(f); o[5] = as_ulong(d);\n"
    "}\n"
    "KA_KERNEL(fault, KA_GLOBAL int *p) { p[ka_global_id(0) * 1000000007ul] = 1; }\n";

static struct {
    ka_device dev;
    const ka_device_info *info;
    ka_queue q;
    ka_program prog;
} F;

static int setup(void **state) {
    (void)state;
    if (ka_device_get_info(F.dev, &F.info) || ka_queue_create(F.dev, NULL, &F.q) ||
        ka_program_build(F.dev, src, NULL, &F.prog)) {
        fprintf(stderr, "setup: %s\n", ka_last_error());
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ka_program_release(F.prog);
    ka_queue_release(F.q);
    return 0;
}

static double now_s(void) { return 1e-9 * (double)now_ns(); }

static void info(void **state) {
    (void)state;
    const ka_device_info *i = F.info;
    print_message("%s: %s, cc %d, %s, driver %s, %u SMs, local %llu KiB, global %llu MiB, args %u bytes\n", i->selector,
                  i->name, i->compute_capability, i->version, i->driver_version, i->compute_units,
                  (unsigned long long)i->local_mem_size / 1024, (unsigned long long)i->global_mem_size >> 20,
                  i->max_arg_bytes);
    assert_int_equal(i->backend, KA_BACKEND_CUDA);
    assert_string_equal(i->selector, "cuda:0");
    assert_true(i->compute_capability >= 30);
    assert_int_equal(i->num_subgroup_sizes, 1);
    assert_int_equal(i->subgroup_sizes[0], 32);
    assert_int_equal(i->subgroup_width, 32);
    assert_int_equal(i->preferred_workgroup_multiple, 32);
    assert_true(i->max_workgroup_size >= 512 && i->max_workgroup[0] >= 512 && i->max_workgroup[2] >= 1);
    assert_true(i->local_mem_size >= 48 * 1024);
    assert_true(i->has_double && i->has_atomic64 && i->has_atomic_float_add && i->has_subgroup_shuffle && i->has_printf);
    assert_true(strncmp(i->version, "CUDA ", 5) == 0);
    ka_native_device nd;
    KA_OK_OR_FAIL(ka_device_get_native(F.dev, &nd));
    assert_int_equal((intptr_t)nd.device, 0); /* CUdevice of ordinal 0 */
    assert_non_null(nd.context);
    /* describe() lists the same device without opening it */
    uint32_t n;
    KA_OK_OR_FAIL(ka_device_count(&n));
    int seen = 0;
    for (uint32_t d = 0; d < n; d++) {
        ka_device_info di;
        KA_OK_OR_FAIL(ka_device_describe(d, &di));
        if (di.backend == KA_BACKEND_CUDA && !strcmp(di.selector, "cuda:0")) {
            seen = 1;
            assert_string_equal(di.name, i->name);
        }
    }
    assert_true(seen);
}

static void transfers(void **state) {
    (void)state;
    enum { N = 1 << 20 };
    unsigned char *a = malloc(N), *b = malloc(N);
    for (int i = 0; i < N; i++) a[i] = (unsigned char)(i * 7 + 3);
    ka_buffer x, y;
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, N, &x));
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, N, &y));
    KA_OK_OR_FAIL(ka_buffer_write(F.q, x, 0, a, N));
    KA_OK_OR_FAIL(ka_buffer_read(F.q, b, x, 0, N));
    assert_memory_equal(a, b, N);
    /* offsets, async with events */
    ka_event e1, e2, e3;
    KA_OK_OR_FAIL(ka_buffer_write_async(F.q, x, 101, a + 7, 5000, &e1));
    KA_OK_OR_FAIL(ka_buffer_copy(F.q, y, 3, x, 100, 6000, &e2));
    memset(b, 0, N);
    KA_OK_OR_FAIL(ka_buffer_read_async(F.q, b, y, 3, 6000, &e3));
    KA_OK_OR_FAIL(ka_event_wait(e3, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_wait(e1, 0));
    KA_OK_OR_FAIL(ka_event_wait(e2, 0));
    assert_int_equal(b[0], a[100]);
    assert_memory_equal(b + 1, a + 7, 5000);
    assert_memory_equal(b + 5001, a + 5101, 999);
    ka_event_release(e1);
    ka_event_release(e2);
    ka_event_release(e3);
    ka_buffer_release(x);
    ka_buffer_release(y);
    free(a);
    free(b);
}

/* Every pattern size, periodic patterns (the memset paths) and not, at
 * offsets, in sizes around the 4 KiB tile; bytes outside stay untouched. */
static void fills(void **state) {
    (void)state;
    enum { N = (1 << 20) + 4096 };
    unsigned char *h = malloc(N), *want = malloc(N);
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, N, &b));
    int checks = 0;
    for (size_t psz = 1; psz <= 128; psz *= 2)
        for (int periodic = 0; periodic < 2; periodic++) {
            unsigned char pat[128];
            for (size_t i = 0; i < psz; i++) pat[i] = periodic ? (unsigned char)(0xa0 + i % 4) : (unsigned char)(i * 13 + psz);
            if (periodic && psz < 4) continue;
            const size_t counts[] = {1, 3, 4096 / psz + 5, (1 << 20) / psz + 3};
            for (size_t c = 0; c < 4; c++) {
                size_t off = psz * 3, n = psz * counts[c];
                if (off + n > N) n = (N - off) / psz * psz;
                unsigned char bg = 0x5c;
                KA_OK_OR_FAIL(ka_buffer_fill(F.q, b, 0, &bg, 1, N, NULL));
                ka_event ev;
                KA_OK_OR_FAIL(ka_buffer_fill(F.q, b, off, pat, psz, n, c == 2 ? &ev : NULL));
                if (c == 2) {
                    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
                    ka_event_release(ev);
                }
                KA_OK_OR_FAIL(ka_buffer_read(F.q, h, b, 0, N));
                memset(want, bg, N);
                for (size_t i = 0; i < n; i++) want[off + i] = pat[i % psz];
                if (memcmp(h, want, N)) {
                    size_t i = 0;
                    while (h[i] == want[i]) i++;
                    fail_msg("fill psz %zu periodic %d count %zu: byte %zu is 0x%02x, expected 0x%02x", psz, periodic,
                             counts[c], i, h[i], want[i]);
                }
                checks++;
            }
        }
    print_message("%d fills checked\n", checks);
    ka_buffer_release(b);
    free(h);
    free(want);
}

static void build_errors(void **state) {
    (void)state;
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(F.dev, "KA_KERNEL(k, KA_GLOBAL int *p) {\n  p[0] = nope;\n}\n", NULL, &p));
    const char *log = ka_last_error();
    print_message("build log: %.300s\n", log);
    assert_non_null(strstr(log, "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION"));
    assert_non_null(strstr(log, "program(2)")); /* the program's default name, the user's source's line numbers */
    assert_non_null(strstr(log, "nope"));
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(F.dev, "KA_KERNEL_NOARGS(k) {}\n",
                                                    &(ka_build_options){.options = "--no-such-option"}, &p));
    /* OpenCL options are translated or dropped; defines reach the code */
    const char *defs[] = {"VAL=41"};
    KA_OK_OR_FAIL(ka_program_build(F.dev, "KA_KERNEL(k, KA_GLOBAL int *p) { p[0] = VAL + ADD; }\n",
                                   &(ka_build_options){.options = "-cl-fast-relaxed-math -cl-mad-enable -D ADD=1",
                                                       .defines = defs, .num_defines = 1},
                                   &p));
    ka_kernel k;
    ka_buffer b;
    int v = 0;
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", NULL, &k));
    KA_EXPECT(KA_ERR_KERNEL_NOT_FOUND, ka_kernel_get(p, "missing", NULL, &k));
    KA_OK_OR_FAIL(ka_kernel_get(p, "k", NULL, &k));
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, 4, &b));
    ka_arg a = ka_arg_buffer(b);
    KA_OK_OR_FAIL(ka_launch(F.q, k, &(ka_range){.dims = 1, .size = {1}}, &a, 1, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(F.q, &v, b, 0, 4));
    assert_int_equal(v, 42);
    ka_buffer_release(b);
    ka_program_release(p);
}

static void arguments(void **state) {
    (void)state;
    ka_kernel k, kv;
    ka_kernel_info ki;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "inc", NULL, &k));
    KA_OK_OR_FAIL(ka_kernel_get_info(k, &ki));
    assert_int_equal(ki.num_args, 2);
    assert_int_equal(ki.preferred_workgroup_multiple, 32);
    assert_true(ki.max_workgroup_size >= 256);
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, 1024, &b));
    ka_range r = {.dims = 1, .size = {256}};
    ka_arg good[] = {ka_arg_buffer(b), ka_arg_i32(1)};
    ka_arg wrong_size[] = {ka_arg_buffer(b), ka_arg_i64(1)};
    ka_arg buf_for_int[] = {ka_arg_buffer(b), ka_arg_buffer(b)};
    ka_arg local_for_int[] = {ka_arg_buffer(b), ka_arg_local(64)};
    KA_OK_OR_FAIL(ka_launch(F.q, k, &r, good, 2, NULL));
    KA_EXPECT(KA_ERR_ARG_COUNT, ka_launch(F.q, k, &r, good, 1, NULL));
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(F.q, k, &r, wrong_size, 2, NULL));
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(F.q, k, &r, buf_for_int, 2, NULL));
    KA_EXPECT(KA_ERR_ARG_TYPE, ka_launch(F.q, k, &r, local_for_int, 2, NULL));
    ka_buffer gone;
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, 16, &gone));
    ka_buffer_release(gone);
    ka_arg stale[] = {ka_arg_buffer(gone), ka_arg_i32(1)};
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_launch(F.q, k, &r, stale, 2, NULL));
    KA_EXPECT(KA_ERR_INVALID_WORKGROUP,
              ka_launch(F.q, k, &(ka_range){.dims = 1, .size = {4096}, .workgroup = {4096}}, good, 2, NULL));
    KA_EXPECT(KA_ERR_INVALID_RANGE,
              ka_launch(F.q, k, &(ka_range){.dims = 2, .size = {1, 1u << 20}, .workgroup = {1, 1}}, good, 2, NULL));
    /* The 2- and 3-D entry points index dimension 0 in 32 bits. */
    KA_EXPECT(KA_ERR_INVALID_RANGE,
              ka_launch(F.q, k, &(ka_range){.dims = 2, .size = {(1ull << 32) + 1, 2}}, good, 2, NULL));
    EXPECT_DETAIL("dimension 0 is at most 2^32 - 1 items on CUDA");
    KA_EXPECT(KA_ERR_INVALID_RANGE,
              ka_launch(F.q, k, &(ka_range){.dims = 3, .size = {1ull << 32, 1, 1}, .workgroup = {64, 1, 1}}, good, 2, NULL));
    /* every scalar width reaches the kernel intact */
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "values", NULL, &kv));
    ka_arg vals[] = {ka_arg_buffer(b), ka_arg_i8(-5), ka_arg_i16(-30000), ka_arg_i32(-2000000000),
                     ka_arg_i64(-5000000000000LL), ka_arg_f32(1.5f), ka_arg_f64(-2.25)};
    uint64_t o[6];
    KA_OK_OR_FAIL(ka_launch(F.q, kv, &(ka_range){.dims = 1, .size = {1}}, vals, 7, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(F.q, o, b, 0, sizeof o));
    float f = 1.5f;
    double d = -2.25;
    uint32_t fb;
    uint64_t db;
    memcpy(&fb, &f, 4);
    memcpy(&db, &d, 8);
    assert_true(o[0] == (uint64_t)-5 && o[1] == (uint64_t)-30000 && o[2] == (uint64_t)-2000000000LL &&
                o[3] == (uint64_t)-5000000000000LL && o[4] == fb && o[5] == db);
    ka_buffer_release(b);
}

/* Dynamic local memory past CUDA's default 48 KiB: the launch raises the
 * kernel's limit; past the device's opt-in limit it is refused. */
static void big_local_memory(void **state) {
    (void)state;
    ka_kernel k;
    ka_buffer o;
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "bigsmem", NULL, &k));
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, 8 * 4, &o));
    uint32_t sizes[] = {1000, 20000, (uint32_t)(F.info->local_mem_size / 4) - 64};
    for (int t = 0; t < 3; t++) {
        uint32_t n = sizes[t];
        ka_arg args[] = {ka_arg_buffer(o), ka_arg_local((size_t)n * 4), ka_arg_u32(n)};
        KA_OK_OR_FAIL(ka_launch(F.q, k, &(ka_range){.dims = 1, .size = {4 * 128}, .workgroup = {128}}, args, 3, NULL));
        int64_t h[4];
        KA_OK_OR_FAIL(ka_buffer_read(F.q, h, o, 0, sizeof h));
        for (int g = 0; g < 4; g++) assert_true(h[g] == (int64_t)n * (n - 1) / 2);
    }
    ka_arg too_big[] = {ka_arg_buffer(o), ka_arg_local(F.info->local_mem_size + 16), ka_arg_u32(1)};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(F.q, k, &(ka_range){.dims = 1, .size = {128}}, too_big, 3, NULL));
    ka_buffer_release(o);
}

/* Every int of b[first, first + n) is want. */
static void expect_ints(ka_buffer b, size_t first, size_t n, int32_t want) {
    int32_t *h = malloc(n * sizeof *h);
    KA_OK_OR_FAIL(ka_buffer_read(F.q, h, b, first * 4, n * 4));
    for (size_t i = 0; i < n; i++)
        if (h[i] != want) fail_msg("int %zu: %d, want %d", first + i, h[i], want);
    free(h);
}

static ka_graph graph_end(uint32_t nodes, uint32_t launches, uint32_t native) {
    ka_graph g;
    ka_graph_info gi;
    KA_OK_OR_FAIL(ka_graph_end(F.q, &g));
    KA_OK_OR_FAIL(ka_graph_get_info(g, &gi));
    assert_int_equal(gi.nodes, nodes);
    assert_int_equal(gi.launches, launches);
    assert_int_equal(gi.native, native);
    return g;
}

/* Recorded graphs are CUDA graphs (native = 1): launches, a copy and fills,
 * replayed with set_arg between replays, also between replays not waited
 * for (those keep the values they were enqueued with). A fill that is no
 * repeated 1-, 2- or 4-byte element falls back to node-by-node replay, with
 * the same results. Local memory past 48 KiB set by set_arg. */
static void graphs(void **state) {
    (void)state;
    enum { N = 1000 }; /* not a multiple of the work-group: a partial last group */
    ka_kernel inc, big;
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "inc", NULL, &inc));
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "bigsmem", NULL, &big));
    ka_buffer a = make_buffer(F.dev, N * 4), b = make_buffer(F.dev, N * 4), c = make_buffer(F.dev, N * 4);
    const int32_t zero = 0, five = 5;
    KA_OK_OR_FAIL(ka_buffer_fill(F.q, a, 0, &zero, 4, N * 4, NULL));
    KA_OK_OR_FAIL(ka_buffer_fill(F.q, c, 0, &zero, 4, N * 4, NULL));
    const ka_range r = {.dims = 1, .size = {N}};

    KA_OK_OR_FAIL(ka_graph_begin(F.q));
    KA_OK_OR_FAIL(ka_buffer_fill(F.q, a, 0, &five, 4, N * 4, NULL)); /* node 0: a = 5 */
    ka_arg ia[] = {ka_arg_buffer(a), ka_arg_i32(1)};
    KA_OK_OR_FAIL(ka_launch(F.q, inc, &r, ia, 2, NULL));               /* node 1: a += 1 */
    KA_OK_OR_FAIL(ka_buffer_copy(F.q, b, 0, a, 0, N * 4, NULL));      /* node 2: b = a */
    ka_arg ib[] = {ka_arg_buffer(b), ka_arg_i32(10)};
    KA_OK_OR_FAIL(ka_launch(F.q, inc, &r, ib, 2, NULL));               /* node 3: b += 10 */
    ka_graph g = graph_end(4, 2, 1);
    expect_ints(a, 0, N, 0); /* nothing recorded has run */
    KA_OK_OR_FAIL(ka_graph_launch(F.q, g, NULL));
    expect_ints(a, 0, N, 6);
    expect_ints(b, 0, N, 16);
    KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){1}, 1, ka_arg_i32(2)));
    ka_event ev;
    KA_OK_OR_FAIL(ka_graph_launch(F.q, g, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    expect_ints(a, 0, N, 7);
    expect_ints(b, 0, N, 17);
    /* node 3 now adds to c; two replays, then two more with the amount
     * changed between them, none waited for */
    KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){3}, 0, ka_arg_buffer(c)));
    KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){3}, 1, ka_arg_i32(-3)));
    KA_OK_OR_FAIL(ka_graph_launch(F.q, g, NULL));
    KA_OK_OR_FAIL(ka_graph_launch(F.q, g, NULL));
    KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){3}, 1, ka_arg_i32(100)));
    KA_OK_OR_FAIL(ka_graph_launch(F.q, g, NULL));
    KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){3}, 1, ka_arg_i32(1000)));
    KA_OK_OR_FAIL(ka_graph_launch(F.q, g, NULL));
    expect_ints(a, 0, N, 7);
    expect_ints(b, 0, N, 7);
    expect_ints(c, 0, N, -6 + 100 + 1000);
    KA_OK_OR_FAIL(ka_graph_release(g));

    /* 8-byte patterns at an offset: one 4-byte word repeated (a memset
     * node), and two different words (node by node) */
    const uint32_t same[2] = {0x11223344u, 0x11223344u}, two[2] = {7, 9};
    for (int t = 0; t < 2; t++) {
        const uint32_t *pat = t ? two : same;
        KA_OK_OR_FAIL(ka_buffer_fill(F.q, a, 0, &zero, 4, N * 4, NULL));
        KA_OK_OR_FAIL(ka_graph_begin(F.q));
        KA_OK_OR_FAIL(ka_buffer_fill(F.q, a, 8, pat, 8, N * 4 - 16, NULL));
        KA_OK_OR_FAIL(ka_launch(F.q, inc, &r, ia, 2, NULL));
        g = graph_end(2, 1, t ? 0 : 1);
        for (int rep = 0; rep < 2; rep++) KA_OK_OR_FAIL(ka_graph_launch(F.q, g, NULL));
        int32_t h[N];
        KA_OK_OR_FAIL(ka_buffer_read(F.q, h, a, 0, sizeof h));
        for (int i = 0; i < N; i++) {
            int32_t want = i < 2 || i >= N - 2 ? 2 : (int32_t)(pat[i & 1] + 1);
            if (h[i] != want) fail_msg("pattern %d, int %d: %d, want %d", t, i, h[i], want);
        }
        KA_OK_OR_FAIL(ka_graph_release(g));
    }

    /* Local memory: past 48 KiB by set_arg (the function's limit raised),
     * then over the device's limit (refused; the graph keeps its values). */
    ka_buffer o = make_buffer(F.dev, 4 * 8);
    const ka_range rb = {.dims = 1, .size = {4 * 128}, .workgroup = {128}};
    ka_arg args[] = {ka_arg_buffer(o), ka_arg_local(1000 * 4), ka_arg_u32(1000)};
    KA_OK_OR_FAIL(ka_graph_begin(F.q));
    KA_OK_OR_FAIL(ka_launch(F.q, big, &rb, args, 3, NULL));
    g = graph_end(1, 1, 1);
    uint32_t sizes[] = {1000, (uint32_t)(F.info->local_mem_size / 4) - 64};
    for (int t = 0; t < 2; t++) {
        uint32_t n = sizes[t];
        KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){0}, 1, ka_arg_local((size_t)n * 4)));
        KA_OK_OR_FAIL(ka_graph_set_arg(g, (ka_graph_node){0}, 2, ka_arg_u32(n)));
        KA_OK_OR_FAIL(ka_graph_launch(F.q, g, NULL));
        int64_t h[4];
        KA_OK_OR_FAIL(ka_buffer_read(F.q, h, o, 0, sizeof h));
        for (int i = 0; i < 4; i++) assert_true(h[i] == (int64_t)n * (n - 1) / 2);
    }
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_set_arg(g, (ka_graph_node){0}, 1, ka_arg_local(F.info->local_mem_size + 16)));
    KA_OK_OR_FAIL(ka_buffer_fill(F.q, o, 0, &zero, 4, 4 * 8, NULL));
    KA_OK_OR_FAIL(ka_graph_launch(F.q, g, NULL));
    int64_t h[4];
    KA_OK_OR_FAIL(ka_buffer_read(F.q, h, o, 0, sizeof h));
    uint32_t n = sizes[1];
    for (int i = 0; i < 4; i++) assert_true(h[i] == (int64_t)n * (n - 1) / 2);
    KA_OK_OR_FAIL(ka_graph_release(g));
    ka_buffer_release(o);
    ka_buffer_release(a), ka_buffer_release(b), ka_buffer_release(c);
}

static void many_events(void **state) {
    (void)state;
    /* more events in flight than the default pool, on a queue asked for them */
    enum { N = 3000 };
    ka_queue q;
    double t0 = now_s();
    KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.event_capacity = N + 10}, &q));
    double t1 = now_s();
    ka_kernel k;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "inc", NULL, &k));
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, 256 * 4, &b));
    int z = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(q, b, 0, &z, 4, 256 * 4, NULL));
    ka_event *ev = malloc(N * sizeof *ev);
    ka_arg args[] = {ka_arg_buffer(b), ka_arg_i32(1)};
    for (int i = 0; i < N; i++)
        if (ka_launch(q, k, &(ka_range){.dims = 1, .size = {256}}, args, 2, &ev[i]))
            fail_msg("launch %d: %s", i, ka_last_error());
    KA_OK_OR_FAIL(ka_wait_all(ev, N, KA_WAIT_FOREVER));
    for (int i = 0; i < N; i++) KA_OK_OR_FAIL(ka_event_release(ev[i]));
    int h[256];
    KA_OK_OR_FAIL(ka_buffer_read(q, h, b, 0, sizeof h));
    for (int i = 0; i < 256; i++) assert_int_equal(h[i], N);
    print_message("queue with %d event slots made in %.2f ms\n", N + 10, (t1 - t0) * 1e3);
    free(ev);
    ka_buffer_release(b);
    KA_OK_OR_FAIL(ka_queue_release(q));
}

static _Atomic int cb_count;
static _Atomic int cb_status = 1;
static void on_done(ka_status st, void *user) {
    *(double *)user = now_s();
    atomic_store(&cb_status, (int)st);
    atomic_fetch_add(&cb_count, 1);
}

/* A 30 ms kernel: the callback runs after it, once; an already-complete event
 * runs its callback at once; the eventfd becomes readable. Also measures the
 * callback's latency (completion seen by polling vs callback time). */
static void callbacks(void **state) {
    (void)state;
    ka_kernel k;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "spin", NULL, &k));
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, 1024 * 4, &b));
    float zero = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(F.q, b, 0, &zero, 4, 1024 * 4, NULL));
    uint32_t iters = 1u << 12;
    ka_range r = {.dims = 1, .size = {1024}};
    double dt = 0;
    for (; iters < (1u << 30); iters *= 2) { /* calibrate to >= 30 ms */
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_u32(iters)};
        double t0 = now_s();
        KA_OK_OR_FAIL(ka_launch(F.q, k, &r, args, 2, NULL));
        KA_OK_OR_FAIL(ka_queue_finish(F.q));
        dt = now_s() - t0;
        if (dt > 0.03) break;
    }
    print_message("spin kernel: %u iterations, %.1f ms\n", iters, dt * 1e3);
    int fd;
    KA_OK_OR_FAIL(ka_queue_fd(F.q, &fd));
    double lat_sum = 0;
    for (int rep = 0; rep < 5; rep++) {
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_u32(iters)};
        ka_event ev;
        double fired = 0;
        atomic_store(&cb_count, 0);
        KA_OK_OR_FAIL(ka_launch(F.q, k, &r, args, 2, &ev));
        KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &fired));
        KA_OK_OR_FAIL(ka_event_notify(ev));
        assert_int_equal(atomic_load(&cb_count), 0);
        /* poll the native event ourselves to see completion as early as possible */
        while (ka_event_wait(ev, 0) == KA_ERR_TIMEOUT) {
        }
        double seen = now_s();
        while (atomic_load(&cb_count) == 0) {
        }
        lat_sum += fired - seen;
        assert_int_equal(atomic_load(&cb_status), KA_OK);
        struct pollfd pfd = {fd, POLLIN, 0};
        assert_int_equal(poll(&pfd, 1, 1000), 1);
        uint64_t cnt;
        assert_int_equal(read(fd, &cnt, 8), 8);
        KA_OK_OR_FAIL(ka_event_release(ev));
        assert_int_equal(atomic_load(&cb_count), 1);
    }
    print_message("callback after completion seen by polling: %.1f us (mean of 5; negative = callback first)\n",
                  lat_sum / 5 * 1e6);
    /* complete already: runs in the call */
    ka_event ev;
    double fired = 0;
    atomic_store(&cb_count, 0);
    KA_OK_OR_FAIL(ka_buffer_fill(F.q, b, 0, &zero, 4, 16, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_on_complete(ev, on_done, &fired));
    assert_int_equal(atomic_load(&cb_count), 1);
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* an unbounded wait that outlasts the spin blocks in the driver (no
     * callback); one with a timeout sleeps on the callback */
    ka_queue_stats s0, s1;
    KA_OK_OR_FAIL(ka_queue_get_stats(F.q, &s0));
    ka_arg args[] = {ka_arg_buffer(b), ka_arg_u32(iters)};
    KA_OK_OR_FAIL(ka_launch(F.q, k, &r, args, 2, &ev));
    double t0 = now_s();
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    double waited = now_s() - t0;
    KA_OK_OR_FAIL(ka_queue_get_stats(F.q, &s1));
    assert_true(s1.waits_slept == s0.waits_slept + 1 && s1.callbacks == s0.callbacks);
    KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_launch(F.q, k, &r, args, 2, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, 60 * 1000000000LL));
    KA_OK_OR_FAIL(ka_queue_get_stats(F.q, &s0));
    assert_true(s0.waits_slept == s1.waits_slept + 1 && s0.callbacks == s1.callbacks + 1);
    KA_OK_OR_FAIL(ka_event_release(ev));
    print_message("sleeping wait on a %.1f ms kernel returned after %.1f ms\n", dt * 1e3, waited * 1e3);
    /* Wake-up cost of a sleeping wait by kernel length: a queue that does not
     * spin (every wait sleeps on the callback) against one that spins for the
     * whole kernel, median of 7. */
    ka_queue qs, qp;
    KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.spin_ns = 0}, &qs));
    KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.spin_ns = 1000000000}, &qp));
    for (uint32_t it = iters >> 12; it <= iters; it <<= 2) {
        double med[2];
        for (int v = 0; v < 2; v++) {
            double ts[7];
            for (int rep = 0; rep < 7; rep++) {
                ka_arg a2[] = {ka_arg_buffer(b), ka_arg_u32(it)};
                double t_start = now_s();
                KA_OK_OR_FAIL(ka_launch(v ? qp : qs, k, &r, a2, 2, &ev));
                KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
                ts[rep] = now_s() - t_start;
                KA_OK_OR_FAIL(ka_event_release(ev));
            }
            for (int i = 0; i < 7; i++)
                for (int j = i + 1; j < 7; j++)
                    if (ts[j] < ts[i]) {
                        double x = ts[i];
                        ts[i] = ts[j];
                        ts[j] = x;
                    }
            med[v] = ts[3];
        }
        print_message("kernel %8.3f ms: sleeping wait %8.3f ms, spinning wait %8.3f ms, wake cost %6.1f us\n",
                      med[1] * 1e3, med[0] * 1e3, med[1] * 1e3, (med[0] - med[1]) * 1e6);
    }
    ka_queue_release(qs);
    ka_queue_release(qp);
    ka_buffer_release(b);
}

/* Wait latency on a trivial kernel: spin path and sleep (callback) path. */
static void wait_latency(void **state) {
    (void)state;
    ka_kernel k;
    ka_buffer b;
    ka_queue qs;
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "inc", NULL, &k));
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, 64 * 4, &b));
    KA_OK_OR_FAIL(ka_queue_create(F.dev, &(ka_queue_config){.spin_ns = 0}, &qs));
    ka_arg args[] = {ka_arg_buffer(b), ka_arg_i32(1)};
    ka_range r = {.dims = 1, .size = {64}};
    ka_queue qq[2] = {F.q, qs};
    const char *names[2] = {"spin (default)", "no spin (callback)"};
    for (int v = 0; v < 2; v++) {
        double best = 1e9, sum = 0;
        for (int i = 0; i < 2000; i++) {
            ka_event ev;
            double t0 = now_s();
            if (ka_launch(qq[v], k, &r, args, 2, &ev) || ka_event_wait(ev, KA_WAIT_FOREVER) || ka_event_release(ev))
                fail_msg("%s", ka_last_error());
            double t = now_s() - t0;
            if (i >= 100) {
                sum += t;
                best = t < best ? t : best;
            }
        }
        print_message("launch + wait, %s: mean %.1f us, best %.1f us\n", names[v], sum / 1900 * 1e6, best * 1e6);
    }
    double t0 = now_s();
    for (int i = 0; i < 10000; i++)
        if (ka_launch(F.q, k, &r, args, 2, NULL)) fail_msg("%s", ka_last_error());
    double t1 = now_s();
    KA_OK_OR_FAIL(ka_queue_finish(F.q));
    print_message("ka_launch enqueue only: %.2f us per launch\n", (t1 - t0) / 10000 * 1e6);
    ka_queue_release(qs);
    ka_buffer_release(b);
}

/* Launches from 4 threads on one kernel and queue. */
#include <pthread.h>
static ka_kernel thr_k;
static ka_buffer thr_b;
static void *thr_main(void *arg) {
    int slot = (int)(intptr_t)arg;
    for (int i = 0; i < 2000; i++) {
        ka_arg args[] = {ka_arg_buffer(thr_b), ka_arg_i32(slot + 1)};
        ka_event ev;
        if (ka_launch(F.q, thr_k, &(ka_range){.dims = 1, .size = {64}}, args, 2, &ev)) return (void *)1;
        if (i % 7 == 0 && ka_event_wait(ev, KA_WAIT_FOREVER)) return (void *)2;
        if (ka_event_release(ev)) return (void *)3;
    }
    return NULL;
}
/* A thread that never touched CUDA waits on, queries and releases an event. */
static void *waiter_main(void *arg) {
    ka_event ev = *(ka_event *)arg;
    if (ka_event_wait(ev, KA_WAIT_FOREVER) != KA_OK) return (void *)1;
    if (ka_event_release(ev) != KA_OK) return (void *)2;
    return NULL;
}
static void threads(void **state) {
    (void)state;
    {
        ka_kernel k;
        ka_buffer b;
        KA_OK_OR_FAIL(ka_kernel_get(F.prog, "spin", NULL, &k));
        KA_OK_OR_FAIL(ka_buffer_create(F.dev, 1024 * 4, &b));
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_u32(1u << 20)};
        ka_event ev;
        KA_OK_OR_FAIL(ka_launch(F.q, k, &(ka_range){.dims = 1, .size = {1024}}, args, 2, &ev));
        pthread_t w;
        void *rv;
        pthread_create(&w, NULL, waiter_main, &ev);
        pthread_join(w, &rv);
        assert_null(rv);
        ka_buffer_release(b);
    }
    KA_OK_OR_FAIL(ka_kernel_get(F.prog, "inc", NULL, &thr_k));
    KA_OK_OR_FAIL(ka_buffer_create(F.dev, 64 * 4, &thr_b));
    int z = 0;
    KA_OK_OR_FAIL(ka_buffer_fill(F.q, thr_b, 0, &z, 4, 256, NULL));
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, thr_main, (void *)(intptr_t)i);
    for (int i = 0; i < 4; i++) {
        void *rv;
        pthread_join(t[i], &rv);
        if (rv) fail_msg("thread %d failed (%d): %s", i, (int)(intptr_t)rv, ka_last_error());
    }
    KA_OK_OR_FAIL(ka_queue_finish(F.q));
    int h[64];
    KA_OK_OR_FAIL(ka_buffer_read(F.q, h, thr_b, 0, sizeof h));
    for (int i = 0; i < 64; i++) assert_int_equal(h[i], 2000 * (1 + 2 + 3 + 4));
    ka_buffer_release(thr_b);
}

/* A faulting kernel: its event and the queue report KA_ERR_KERNEL_FAILED with
 * the CUDA error named; no abort. */
static int fault_main(void) {
    ka_queue q;
    ka_program p;
    ka_kernel k;
    ka_buffer b;
    if (ka_queue_create(F.dev, NULL, &q) || ka_program_build(F.dev, src, NULL, &p) || ka_kernel_get(p, "fault", NULL, &k) ||
        ka_buffer_create(F.dev, 16, &b)) {
        fprintf(stderr, "fault setup: %s\n", ka_last_error());
        return 1;
    }
    ka_arg a = ka_arg_buffer(b);
    ka_event ev;
    ka_status st = ka_launch(q, k, &(ka_range){.dims = 1, .size = {1024}}, &a, 1, &ev);
    if (st != KA_OK) {
        fprintf(stderr, "fault: launch %s: %s\n", ka_status_name(st), ka_last_error());
        return 1;
    }
    st = ka_event_wait(ev, KA_WAIT_FOREVER);
    printf("fault: wait -> %s: %s\n", ka_status_name(st), ka_last_error());
    ka_status fin = ka_queue_finish(q);
    printf("fault: finish -> %s: %s\n", ka_status_name(fin), ka_last_error());
    ka_event_release(ev);
    ka_queue_release(q);
    return st == KA_ERR_KERNEL_FAILED && fin == KA_ERR_KERNEL_FAILED ? 0 : 1;
}

int main(int argc, char **argv) {
    ka_status st = ka_device_open("cuda:0", &F.dev);
    if (st != KA_OK) {
        printf("no CUDA device (%s): skipped\n", ka_last_error());
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--fault")) return fault_main();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(info),          cmocka_unit_test(transfers),   cmocka_unit_test(fills),
        cmocka_unit_test(build_errors),  cmocka_unit_test(arguments),   cmocka_unit_test(big_local_memory),
        cmocka_unit_test(many_events),   cmocka_unit_test(callbacks),   cmocka_unit_test(wait_latency),
        cmocka_unit_test(threads),       cmocka_unit_test(graphs),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    ka_device_close(F.dev);
    return rc;
}
