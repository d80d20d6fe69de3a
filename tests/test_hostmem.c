/* Issue 15: host memory and buffers' starting contents (zeroed, with,
 * wrap, map/unmap, ka_host_alloc/register), dependencies between queues
 * (ka_queue_wait_event with a copy queue and a compute queue), and
 * KA_LAUNCH_ASYNC (a launch that never runs in the calling thread, also when
 * replayed from a graph). On the default device (PoCL in CI), then on the
 * null device. */
#define KA_TEST_FIXTURE
#include "test_util.h"

static const char *own_src =
    "KA_KERNEL(copy0, KA_GLOBAL const uint *src, KA_GLOBAL uint *dst) {\n"
    "    if (ka_global_id(0) == 0) dst[0] = src[0];\n"
    "}\n"
    "KA_KERNEL(scale_add, KA_GLOBAL const float *x, KA_GLOBAL float *y, float a) {\n"
    "    if (ka_in_range()) y[ka_global_id(0)] = a * x[ka_global_id(0)] + 1.0f;\n"
    "}\n"
    "KA_KERNEL(add1, KA_GLOBAL uint *p) {\n"
    "    if (ka_in_range()) p[ka_global_id(0)] += 1u;\n"
    "}\n";
static ka_program own;

static ka_kernel own_kernel(const char *name) {
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(own, name, NULL, &k));
    return k;
}

static bool on_pocl(void) { return strstr(g_info->platform, "Portable Computing Language") != NULL; }

/* ---- zeroed and initial contents ----------------------------------------- */
static void zeroed_and_with(void **state) {
    (void)state;
    enum { N = 1 << 18 };
    uint8_t *h = malloc(N), *src = malloc(N);
    assert_non_null(h);
    assert_non_null(src);
    /* A buffer of the same size filled and released first: a zeroed one
     * that reused its memory without zeroing it would show 0xab. */
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, N, &b));
    uint8_t ab = 0xab;
    KA_OK_OR_FAIL(ka_buffer_fill(g_q, b, 0, &ab, 1, N, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, N, &b));
    memset(h, 0x5a, N);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, h, b, 0, N));
    for (size_t i = 0; i < N; i++)
        if (h[i]) fail_msg("zeroed buffer: byte %zu is 0x%02x", i, h[i]);
    KA_OK_OR_FAIL(ka_buffer_release(b));

    fill_bytes(src, N, 15);
    KA_OK_OR_FAIL(ka_buffer_create_with(g_dev, N, src, &b));
    memset(src + 7, 0, 9); /* the buffer holds a copy, not the pointer */
    KA_OK_OR_FAIL(ka_buffer_read(g_q, h, b, 0, N));
    fill_bytes(src, N, 15);
    assert_memory_equal(h, src, N);
    KA_OK_OR_FAIL(ka_buffer_release(b));

    b.id = 1;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_create_with(g_dev, N, NULL, &b));
    EXPECT_DETAIL("ka_buffer_create_with", "src is NULL");
    assert_int_equal(b.id, 0);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_create_zeroed(g_dev, 0, &b));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_create_zeroed(g_dev, 16, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_create_zeroed(BAD_DEVICE, 16, &b));
    free(h);
    free(src);
}

/* ---- wrapped host memory and maps ----------------------------------------- */
static void wrap_in_place(void **state) {
    (void)state;
    enum { N = 4096 };
    uint32_t *host;
    KA_OK_OR_FAIL(ka_host_alloc(g_dev, N * sizeof(uint32_t), (void **)&host));
    assert_int_equal((uintptr_t)host % KA_HOST_ALIGN, 0);
    for (uint32_t i = 0; i < N; i++) host[i] = 3 * i;
    ka_buffer b, out;
    KA_OK_OR_FAIL(ka_buffer_wrap(g_dev, host, N * sizeof(uint32_t), &b));
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, sizeof(uint32_t), &out));
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_OK_OR_FAIL(ka_launch(g_q, own_kernel("add1"), &(ka_range){.dims = 1, .size = {N}}, a, 1, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(g_q));
    /* Portable: the results through a map. */
    uint32_t *m;
    KA_OK_OR_FAIL(ka_buffer_map(g_q, b, 0, N * sizeof(uint32_t), KA_MAP_READ | KA_MAP_WRITE, (void **)&m));
    for (uint32_t i = 0; i < N; i++)
        if (m[i] != 3 * i + 1) fail_msg("mapped wrapped buffer: [%u] = %u, expected %u", i, m[i], 3 * i + 1);
    m[5] = 1000;
    KA_OK_OR_FAIL(ka_buffer_unmap(g_q, b, m));
    if (on_pocl() || g_info->backend == KA_BACKEND_CUDA || g_info->backend == KA_BACKEND_HOST) {
        /* PoCL, CUDA's mapped page-locked memory, host: no copy either way. The map is the user's memory, the
         * kernel's stores are there without a map, and a store to the host
         * memory is what the next kernel reads. */
        assert_ptr_equal(m, host);
        for (uint32_t i = 0; i < N; i++)
            if (host[i] != (i == 5 ? 1000 : 3 * i + 1)) fail_msg("host[%u] = %u: not in place", i, host[i]);
        host[0] = 777;
        ka_arg c[] = {ka_arg_buffer(b), ka_arg_buffer(out)};
        KA_OK_OR_FAIL(ka_launch(g_q, own_kernel("copy0"), &(ka_range){.dims = 1, .size = {1}}, c, 2, NULL));
        uint32_t v = 0;
        KA_OK_OR_FAIL(ka_buffer_read(g_q, &v, out, 0, sizeof v));
        assert_int_equal(v, 777);
    }
    /* Later maps (on PoCL only a wait for the queue) see a kernel still
     * running on the threaded device when the map was asked for. */
    for (int rep = 0; rep < 3; rep++) {
        KA_OK_OR_FAIL(ka_launch(g_q, own_kernel("add1"), &(ka_range){.dims = 1, .size = {N}, .flags = KA_LAUNCH_ASYNC}, a, 1,
                                NULL));
        KA_OK_OR_FAIL(ka_buffer_map(g_q, b, 4, 8, KA_MAP_READ | KA_MAP_WRITE, (void **)&m));
        assert_int_equal(m[0], 3 * 1 + 1 + 1 + (uint32_t)rep);
        m[1] = 50; /* seen by the next kernel */
        KA_OK_OR_FAIL(ka_buffer_unmap(g_q, b, m));
    }
    KA_OK_OR_FAIL(ka_buffer_map(g_q, b, 8, 4, KA_MAP_READ, (void **)&m));
    assert_int_equal(m[0], 50);
    KA_OK_OR_FAIL(ka_buffer_unmap(g_q, b, m));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_buffer_release(out));
    KA_OK_OR_FAIL(ka_host_free(g_dev, host));
}

/* Unaligned user memory works too, through map and unmap. */
static void wrap_unaligned(void **state) {
    (void)state;
    enum { N = 1000 };
    uint8_t *raw = malloc(N * sizeof(uint32_t) + 68);
    assert_non_null(raw);
    uint32_t *host = (uint32_t *)(raw + (64 - (uintptr_t)raw % 64) % 64 + 4); /* 4 past a 64-byte boundary */
    for (uint32_t i = 0; i < N; i++) host[i] = i;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_wrap(g_dev, host, N * sizeof(uint32_t), &b));
    ka_arg a[] = {ka_arg_buffer(b)};
    for (int r = 0; r < 3; r++)
        KA_OK_OR_FAIL(ka_launch(g_q, own_kernel("add1"), &(ka_range){.dims = 1, .size = {N}}, a, 1, NULL));
    uint32_t *m;
    KA_OK_OR_FAIL(ka_buffer_map(g_q, b, 40, 400, KA_MAP_READ, (void **)&m));
    for (uint32_t i = 0; i < 100; i++) assert_int_equal(m[i], i + 10 + 3);
    KA_OK_OR_FAIL(ka_buffer_unmap(g_q, b, m));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    free(raw);
    ka_buffer x;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_wrap(g_dev, NULL, 16, &x));
    EXPECT_DETAIL("ka_buffer_wrap", "host is NULL");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_wrap(g_dev, &x, 0, &x));
}

/* Maps of a device buffer: write through one, read through another. */
static void map_device_buffer(void **state) {
    (void)state;
    enum { N = 1 << 16 };
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, N * sizeof(uint32_t), &b));
    uint32_t *w;
    KA_OK_OR_FAIL(ka_buffer_map(g_q, b, 0, N * sizeof(uint32_t), KA_MAP_WRITE, (void **)&w));
    for (uint32_t i = 0; i < N; i++) w[i] = i ^ 0x55u;
    KA_OK_OR_FAIL(ka_buffer_unmap(g_q, b, w));
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_OK_OR_FAIL(ka_launch(g_q, own_kernel("add1"), &(ka_range){.dims = 1, .size = {N}}, a, 1, NULL));
    uint32_t *r1, *r2;
    KA_OK_OR_FAIL(ka_buffer_map(g_q, b, 0, 64, KA_MAP_READ, (void **)&r1));
    KA_OK_OR_FAIL(ka_buffer_map(g_q, b, 4 * (N - 16), 64, KA_MAP_READ, (void **)&r2));
    for (uint32_t i = 0; i < 16; i++) {
        assert_int_equal(r1[i], (i ^ 0x55u) + 1);
        assert_int_equal(r2[i], ((N - 16 + i) ^ 0x55u) + 1);
    }
    /* A mapped buffer is not released; a wrong or second unmap is refused. */
    KA_EXPECT(KA_ERR_IN_USE, ka_buffer_release(b));
    EXPECT_DETAIL("mapped");
    int local;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_unmap(g_q, b, &local));
    EXPECT_DETAIL("not a live map");
    KA_OK_OR_FAIL(ka_buffer_unmap(g_q, b, r1));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_unmap(g_q, b, r1));
    KA_OK_OR_FAIL(ka_buffer_unmap(g_q, b, r2));
    /* Bad maps. */
    void *p = &local;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_map(g_q, b, 0, 16, 0, &p));
    assert_null(p);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_map(g_q, b, 0, 16, 4, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_map(g_q, b, 0, 0, KA_MAP_READ, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_map(g_q, b, 4 * N - 8, 16, KA_MAP_READ, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_map(g_q, b, 0, 16, KA_MAP_READ, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_map(g_q, BAD_BUFFER, 0, 16, KA_MAP_READ, &p));
    void *many[KA_MAX_MAPS];
    for (int i = 0; i < KA_MAX_MAPS; i++) KA_OK_OR_FAIL(ka_buffer_map(g_q, b, 64 * (size_t)i, 64, KA_MAP_READ, &many[i]));
    KA_EXPECT(KA_ERR_IN_USE, ka_buffer_map(g_q, b, 0, 16, KA_MAP_READ, &p));
    EXPECT_DETAIL("KA_MAX_MAPS");
    for (int i = 0; i < KA_MAX_MAPS; i++) KA_OK_OR_FAIL(ka_buffer_unmap(g_q, b, many[i]));
    /* Maps are outside graphs, like host transfers. */
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_map(g_q, b, 0, 16, KA_MAP_READ, &p));
    ka_graph g;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_end(g_q, &g)); /* empty */
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* ---- host memory ------------------------------------------------------------ */
static void host_memory(void **state) {
    (void)state;
    void *p;
    KA_OK_OR_FAIL(ka_host_alloc(g_dev, 100000, &p));
    memset(p, 1, 100000);
    /* A device with a block alive does not close. */
    KA_EXPECT(KA_ERR_IN_USE, ka_device_close(g_dev));
    int local;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_free(g_dev, &local));
    EXPECT_DETAIL("ka_host_free", "not memory of ka_host_alloc");
    KA_OK_OR_FAIL(ka_host_free(g_dev, p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_free(g_dev, p)); /* twice */
    KA_OK_OR_FAIL(ka_host_free(g_dev, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_alloc(g_dev, 0, &p));
    assert_null(p);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_alloc(g_dev, 16, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_host_alloc(BAD_DEVICE, 16, &p));

    /* Registered user memory: transfers from and to it, then a wrap of it. */
    enum { N = 8192 };
    uint32_t *mine = aligned_alloc(KA_HOST_ALIGN, N * sizeof(uint32_t));
    assert_non_null(mine);
    KA_OK_OR_FAIL(ka_host_register(g_dev, mine, N * sizeof(uint32_t)));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_register(g_dev, mine + 10, 64));
    EXPECT_DETAIL("overlaps");
    for (uint32_t i = 0; i < N; i++) mine[i] = i;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create_with(g_dev, N * sizeof(uint32_t), mine, &b));
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_OK_OR_FAIL(ka_launch(g_q, own_kernel("add1"), &(ka_range){.dims = 1, .size = {N}}, a, 1, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, mine, b, 0, N * sizeof(uint32_t)));
    for (uint32_t i = 0; i < N; i++) assert_int_equal(mine[i], i + 1);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_buffer_wrap(g_dev, mine, N * sizeof(uint32_t), &b));
    a[0] = ka_arg_buffer(b);
    KA_OK_OR_FAIL(ka_launch(g_q, own_kernel("add1"), &(ka_range){.dims = 1, .size = {N}}, a, 1, NULL));
    uint32_t *m;
    KA_OK_OR_FAIL(ka_buffer_map(g_q, b, 0, N * sizeof(uint32_t), KA_MAP_READ, (void **)&m));
    for (uint32_t i = 0; i < N; i++) assert_int_equal(m[i], i + 2);
    KA_OK_OR_FAIL(ka_buffer_unmap(g_q, b, m));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_host_unregister(g_dev, mine));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_unregister(g_dev, mine));
    EXPECT_DETAIL("not registered");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_register(g_dev, NULL, 16));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_register(g_dev, mine, 0));
    free(mine);
}

/* Ranges that wrap around the end of the address space, and host blocks no
 * allocator can give, are refused before any driver or allocator sees them
 * (ASan's allocator aborts the process on such a request). */
static void impossible_ranges(void **state) {
    (void)state;
    void *top = (void *)(UINTPTR_MAX - 4095);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_register(g_dev, top, 8192));
    EXPECT_DETAIL("ka_host_register", "wraps");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_host_register(g_dev, (char *)top + 64, 4096)); /* inside it: no overlap check wraps */
    EXPECT_DETAIL("wraps");
    ka_buffer b = {99};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_wrap(g_dev, top, 8192, &b));
    EXPECT_DETAIL("ka_buffer_wrap", "wraps");
    assert_true(b.id == 0);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_create_with(g_dev, 8192, top, &b));
    EXPECT_DETAIL("ka_buffer_create_with", "wraps");
    void *p = (void *)1;
    KA_EXPECT(KA_ERR_OUT_OF_MEMORY, ka_host_alloc(g_dev, SIZE_MAX, &p));
    EXPECT_DETAIL("ka_host_alloc", "machine's memory");
    assert_null(p);
    KA_EXPECT(KA_ERR_OUT_OF_MEMORY, ka_host_alloc(g_dev, (size_t)1 << 62, &p));
    /* Nothing was recorded: the device has no block to keep it open. */
    KA_OK_OR_FAIL(ka_host_alloc(g_dev, 64, &p));
    KA_OK_OR_FAIL(ka_host_free(g_dev, p));
}

/* ---- dependencies between queues -------------------------------------------- */
/* The long kernel on one queue, a copy of its result on another that waits
 * for it: without the wait the copy would run at once and find 0. */
static void wait_event_orders_queues(void **state) {
    (void)state;
    ka_queue qb;
    KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &qb));
    ka_buffer x, y;
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, 64, &x));
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, 4, &y));
    for (int async = 0; async < 2; async++) {
        uint32_t zero = 0;
        KA_OK_OR_FAIL(ka_buffer_write(g_qlong, x, 0, &zero, 4));
        ka_event ea = launch_long(g_qlong, x);
        KA_OK_OR_FAIL(ka_queue_wait_event(qb, ea));
        KA_OK_OR_FAIL(ka_event_release(ea)); /* the wait holds on without the handle */
        ka_arg c[] = {ka_arg_buffer(x), ka_arg_buffer(y)};
        /* A routed launch (async = 0) finishes the wait on the host first;
         * an async one is ordered by the device. */
        ka_range r = {.dims = 1, .size = {1}, .flags = async ? KA_LAUNCH_ASYNC : 0};
        KA_OK_OR_FAIL(ka_launch(qb, own_kernel("copy0"), &r, c, 2, NULL));
        uint32_t got = 0, want = 0;
        KA_OK_OR_FAIL(ka_buffer_read(qb, &got, y, 0, 4));
        KA_OK_OR_FAIL(ka_buffer_read(g_qlong, &want, x, 0, 4));
        assert_int_not_equal(want, 0);
        if (got != want) fail_msg("async=%d: the copy ran before the kernel it waited for (got %u, want %u)", async, got, want);
    }
    KA_OK_OR_FAIL(ka_buffer_release(x));
    KA_OK_OR_FAIL(ka_buffer_release(y));
    KA_OK_OR_FAIL(ka_queue_release(qb));
}

/* A copy queue uploads while a compute queue computes the previous step;
 * each waits on the other's event: the results are checked. */
static void copy_and_compute_queues(void **state) {
    (void)state;
    enum { N = 1 << 16, STEPS = 6 };
    ka_queue copyq, compq;
    KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &copyq));
    KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &compq));
    float *in[2], *out = malloc(N * sizeof(float));
    ka_buffer bx[2], by;
    for (int i = 0; i < 2; i++) {
        KA_OK_OR_FAIL(ka_host_alloc(g_dev, N * sizeof(float), (void **)&in[i]));
        KA_OK_OR_FAIL(ka_buffer_create(g_dev, N * sizeof(float), &bx[i]));
    }
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, N * sizeof(float), &by));
    ka_event done[2] = {KA_NULL_EVENT, KA_NULL_EVENT};
    for (int s = 0; s < STEPS; s++) {
        int k = s & 1;
        /* The compute step that last read bx[k] must be over before it is overwritten. */
        if (done[k].id) {
            KA_OK_OR_FAIL(ka_queue_wait_event(copyq, done[k]));
            KA_OK_OR_FAIL(ka_event_release(done[k]));
        }
        for (uint32_t i = 0; i < N; i++) in[k][i] = (float)(i % 1000) + (float)s;
        ka_event up;
        KA_OK_OR_FAIL(ka_buffer_write_async(copyq, bx[k], 0, in[k], N * sizeof(float), &up));
        KA_OK_OR_FAIL(ka_queue_wait_event(compq, up));
        ka_arg a[] = {ka_arg_buffer(bx[k]), ka_arg_buffer(by), ka_arg_f32(2.0f)};
        KA_OK_OR_FAIL(ka_launch(compq, own_kernel("scale_add"), &(ka_range){.dims = 1, .size = {N}}, a, 3, &done[k]));
        KA_OK_OR_FAIL(ka_event_wait(up, KA_WAIT_FOREVER)); /* in[k] is rewritten two steps on */
        KA_OK_OR_FAIL(ka_event_release(up));
        ka_event rd;
        KA_OK_OR_FAIL(ka_queue_wait_event(copyq, done[k]));
        KA_OK_OR_FAIL(ka_buffer_read_async(copyq, out, by, 0, N * sizeof(float), &rd));
        KA_OK_OR_FAIL(ka_event_wait(rd, KA_WAIT_FOREVER));
        KA_OK_OR_FAIL(ka_event_release(rd));
        for (uint32_t i = 0; i < N; i++)
            if (out[i] != 2.0f * ((float)(i % 1000) + (float)s) + 1.0f)
                fail_msg("step %d: y[%u] = %g, expected %g", s, i, (double)out[i], 2.0 * ((i % 1000) + s) + 1.0);
    }
    for (int i = 0; i < 2; i++) {
        if (done[i].id) KA_OK_OR_FAIL(ka_event_release(done[i]));
        KA_OK_OR_FAIL(ka_buffer_release(bx[i]));
        KA_OK_OR_FAIL(ka_host_free(g_dev, in[i]));
    }
    KA_OK_OR_FAIL(ka_buffer_release(by));
    KA_OK_OR_FAIL(ka_queue_release(copyq));
    KA_OK_OR_FAIL(ka_queue_release(compq));
    free(out);
}

static void wait_event_bad(void **state) {
    (void)state;
    ka_event ev;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, 64, &b));
    uint32_t v = 1;
    KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, 0, &v, 4, &ev));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_wait_event(BAD_QUEUE, ev));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_wait_event(g_q, KA_NULL_EVENT));
    KA_OK_OR_FAIL(ka_queue_wait_event(g_q, ev)); /* its own queue: in order already */
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_queue_wait_event(g_qlong, ev)); /* complete: nothing to wait for */
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_queue_wait_event(g_q, ev)); /* released */
    /* Not while recording a graph. */
    KA_OK_OR_FAIL(ka_buffer_write_async(g_qlong, b, 0, &v, 4, &ev));
    KA_OK_OR_FAIL(ka_graph_begin(g_q));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_queue_wait_event(g_q, ev));
    EXPECT_DETAIL("recording a graph");
    ka_graph g;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_graph_end(g_q, &g));
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* An event of another device: refused, even complete (the answer must
     * not depend on timing). */
    ka_device nd;
    ka_queue nq;
    KA_OK_OR_FAIL(ka_device_open("null", &nd));
    KA_OK_OR_FAIL(ka_queue_create(nd, NULL, &nq));
    KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, 0, &v, 4, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_queue_wait_event(nq, ev));
    EXPECT_DETAIL("ka_queue_wait_event", "another device");
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_queue_release(nq));
    KA_OK_OR_FAIL(ka_device_close(nd));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

/* ---- KA_LAUNCH_ASYNC ---------------------------------------------------------- */
static uint64_t inline_launches(ka_queue q) {
    ka_queue_stats s;
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &s));
    return s.inline_launches;
}

static void launch_async_flag(void **state) {
    (void)state;
    /* An explicit limit: the size rule decides, so a small launch runs inline. */
    ka_queue_config cfg = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = 1 << 16};
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(g_dev, &cfg, &q));
    ka_queue_stats st;
    KA_OK_OR_FAIL(ka_queue_get_stats(q, &st));
    bool routes = st.inline_max_items != 0; /* PoCL with its `basic` device */
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(g_dev, 64 * sizeof(uint32_t), &b));
    ka_arg a[] = {ka_arg_buffer(b)};
    ka_kernel k = own_kernel("add1");
    ka_range plain = {.dims = 1, .size = {64}}, async = {.dims = 1, .size = {64}, .flags = KA_LAUNCH_ASYNC};
    uint64_t n0 = inline_launches(q);
    ka_event ev;
    KA_OK_OR_FAIL(ka_launch(q, k, &plain, a, 1, NULL));
    KA_OK_OR_FAIL(ka_launch(q, k, &plain, a, 1, &ev));
    uint64_t n1 = inline_launches(q);
    if (routes) {
        /* A routed launch has run when ka_launch returns: a poll finds it done. */
        assert_int_equal(n1, n0 + 2);
        KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    }
    KA_OK_OR_FAIL(ka_event_release(ev));
    for (int i = 0; i < 5; i++) KA_OK_OR_FAIL(ka_launch(q, k, &async, a, 1, i == 4 ? &ev : NULL));
    assert_int_equal(inline_launches(q), n1); /* none of them ran inline */
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    /* The flag survives recording: a replay runs the node on the threaded
     * device too; the same graph without the flag runs inline. */
    for (int flag = 1; flag >= 0; flag--) {
        ka_graph g;
        KA_OK_OR_FAIL(ka_graph_begin(q));
        KA_OK_OR_FAIL(ka_launch(q, k, flag ? &async : &plain, a, 1, NULL));
        KA_OK_OR_FAIL(ka_graph_end(q, &g));
        uint64_t before = inline_launches(q);
        for (int i = 0; i < 3; i++) KA_OK_OR_FAIL(ka_graph_launch(q, g, NULL));
        KA_OK_OR_FAIL(ka_queue_finish(q));
        if (flag) assert_int_equal(inline_launches(q), before);
        else if (routes) assert_int_equal(inline_launches(q), before + 3);
        KA_OK_OR_FAIL(ka_graph_release(g));
    }
    uint32_t h[64];
    KA_OK_OR_FAIL(ka_buffer_read(q, h, b, 0, sizeof h));
    for (int i = 0; i < 64; i++) assert_int_equal(h[i], 2 + 5 + 3 + 3);
    /* KA_LAUNCH_SPREAD is a valid flag on every back-end: the kernel runs once per item. */
    ka_range spread = {.dims = 1, .size = {64}, .workgroup = {16}, .flags = KA_LAUNCH_SPREAD};
    KA_OK_OR_FAIL(ka_launch(q, k, &spread, a, 1, NULL));
    KA_OK_OR_FAIL(ka_queue_finish(q));
    KA_OK_OR_FAIL(ka_buffer_read(q, h, b, 0, sizeof h));
    for (int i = 0; i < 64; i++) assert_int_equal(h[i], 2 + 5 + 3 + 3 + 1);
    /* Unknown flags are refused. */
    ka_range bad = {.dims = 1, .size = {64}, .flags = 0x80};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_launch(q, k, &bad, a, 1, NULL));
    EXPECT_DETAIL("unknown flags");
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_queue_release(q));
}

/* ---- the null device: the same calls in host memory ------------------------------ */
static void null_device(void **state) {
    (void)state;
    ka_device nd;
    ka_queue nq;
    KA_OK_OR_FAIL(ka_device_open("null", &nd));
    KA_OK_OR_FAIL(ka_queue_create(nd, NULL, &nq));
    uint8_t src[256], h[256];
    fill_bytes(src, sizeof src, 3);
    ka_buffer z, w, u;
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(nd, sizeof h, &z));
    KA_OK_OR_FAIL(ka_buffer_create_with(nd, sizeof src, src, &w));
    KA_OK_OR_FAIL(ka_buffer_read(nq, h, z, 0, sizeof h));
    for (size_t i = 0; i < sizeof h; i++) assert_int_equal(h[i], 0);
    KA_OK_OR_FAIL(ka_buffer_read(nq, h, w, 0, sizeof h));
    assert_memory_equal(h, src, sizeof h);
    void *mem;
    KA_OK_OR_FAIL(ka_host_alloc(nd, 4096, &mem));
    KA_OK_OR_FAIL(ka_buffer_wrap(nd, mem, 4096, &u));
    KA_OK_OR_FAIL(ka_buffer_copy(nq, u, 100, w, 0, sizeof src, NULL)); /* lands in the user's memory */
    assert_memory_equal((uint8_t *)mem + 100, src, sizeof src);
    uint8_t *m;
    KA_OK_OR_FAIL(ka_buffer_map(nq, u, 100, 16, KA_MAP_READ, (void **)&m));
    assert_ptr_equal(m, (uint8_t *)mem + 100);
    KA_OK_OR_FAIL(ka_buffer_unmap(nq, u, m));
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write_async(nq, z, 0, src, 4, &ev));
    KA_OK_OR_FAIL(ka_queue_wait_event(nq, ev));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(u)); /* the user's memory stays */
    memset(mem, 0, 4096);
    KA_EXPECT(KA_ERR_IN_USE, ka_device_close(nd));
    KA_OK_OR_FAIL(ka_host_free(nd, mem));
    KA_OK_OR_FAIL(ka_buffer_release(z));
    KA_OK_OR_FAIL(ka_buffer_release(w));
    KA_OK_OR_FAIL(ka_queue_release(nq));
    KA_OK_OR_FAIL(ka_device_close(nd));
}

static int setup(void **state) {
    if (group_setup(state) != 0) return -1;
    if (ka_program_build(g_dev, own_src, NULL, &own) != KA_OK) {
        fprintf(stderr, "build: %s\n", ka_last_error());
        return -1;
    }
    return 0;
}
static int teardown(void **state) {
    ka_program_release(own);
    return group_teardown(state);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zeroed_and_with),
        cmocka_unit_test(wrap_in_place),
        cmocka_unit_test(wrap_unaligned),
        cmocka_unit_test(map_device_buffer),
        cmocka_unit_test(host_memory),
        cmocka_unit_test(impossible_ranges),
        cmocka_unit_test(wait_event_orders_queues),
        cmocka_unit_test(copy_and_compute_queues),
        cmocka_unit_test(wait_event_bad),
        cmocka_unit_test(launch_async_flag),
        cmocka_unit_test(null_device),
    };
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("host memory, queue dependencies, async launches", tests, setup, teardown);
}
