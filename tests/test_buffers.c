/* Buffers on the default device: create and size, writes, reads, copies and
 * fills (blocking and with events), their bounds, and released handles. */
#define KA_TEST_FIXTURE
#include "test_util.h"

static void test_buffer_create_and_size(void **state) {
    (void)state;
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, 1000, &b));
    size_t sz = 0;
    KA_OK_OR_FAIL(ka_buffer_size(b, &sz));
    assert_int_equal(sz, 1000);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_size(b, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_size(b, &sz));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_release(b));
    EXPECT_DETAIL("ka_buffer_release");
}

/* The native memory behind a buffer: the back-end's object, and an address
 * where the memory has one (CUDA's device pointer, the null device's host
 * memory); the memory a write put there. */
static void test_buffer_get_native(void **state) {
    (void)state;
    ka_buffer b;
    ka_native_buffer nb;
    const uint32_t v[4] = {1, 2, 3, 0xdeadbeef};
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, sizeof v, &b));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, v, sizeof v));
    KA_OK_OR_FAIL(ka_buffer_get_native(b, &nb));
    assert_non_null(nb.mem);
    assert_int_equal(nb.bytes, sizeof v);
    switch (g_info->backend) {
    case KA_BACKEND_OPENCL: assert_null(nb.address); break; /* a cl_mem has no address */
    case KA_BACKEND_CUDA: assert_ptr_equal(nb.address, nb.mem); break;
    case KA_BACKEND_NULL:
    case KA_BACKEND_HOST: /* host memory */
        assert_ptr_equal(nb.address, nb.mem);
        assert_memory_equal(nb.address, v, sizeof v);
        break;
    }
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_get_native(b, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_get_native(b, &nb));
    EXPECT_DETAIL("ka_buffer_get_native");
    assert_null(nb.mem);
}

static void test_buffer_create_zero_bytes(void **state) {
    (void)state;
    ka_buffer b = {77};
    ka_status st = ka_buffer_create(g_dev, 0, &b);
    if (st == KA_OK) fail_msg("ka_buffer_create(0 bytes) succeeded");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, st);
    assert_int_equal(b.id, 0);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_create(g_dev, 16, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_create(BAD_DEVICE, 16, &b));
}

static void test_buffer_create_huge(void **state) {
    (void)state;
    ka_buffer b = {77};
    KA_EXPECT(KA_ERR_DEVICE_OUT_OF_MEMORY, ka_buffer_create(g_dev, SIZE_MAX, &b));
    assert_int_equal(b.id, 0);
    EXPECT_DETAIL("ka_buffer_create");
    KA_EXPECT(KA_ERR_DEVICE_OUT_OF_MEMORY, ka_buffer_create(g_dev, (size_t)g_info->max_alloc_size + 1, &b));
    KA_EXPECT(KA_ERR_DEVICE_OUT_OF_MEMORY, ka_buffer_create(g_dev, (size_t)1 << 62, &b));
}

static void test_buffer_write_read_blocking(void **state) {
    (void)state;
    enum { N = 4096 };
    uint8_t in[N], out[N];
    fill_bytes(in, N, 1);
    ka_buffer b = make_buffer(g_dev, N);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, in, N));
    memset(out, 0, N);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, N));
    assert_memory_equal(in, out, N);
    /* Partial write at an offset, partial read at another. */
    uint8_t patch[100];
    fill_bytes(patch, sizeof patch, 2);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 1001, patch, sizeof patch));
    memcpy(in + 1001, patch, sizeof patch);
    uint8_t part[300];
    KA_OK_OR_FAIL(ka_buffer_read(g_q, part, b, 950, sizeof part));
    assert_memory_equal(part, in + 950, sizeof part);
    /* The last byte, exactly at the end. */
    uint8_t last = 0;
    KA_OK_OR_FAIL(ka_buffer_read(g_q, &last, b, N - 1, 1));
    assert_int_equal(last, in[N - 1]);
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_write_read_async(void **state) {
    (void)state;
    enum { N = 1 << 16 };
    static uint8_t in[N], out[N];
    fill_bytes(in, N, 3);
    memset(out, 0, N);
    ka_buffer b = make_buffer(g_dev, N);
    ka_event ev[3];
    KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, 0, in, N / 2, &ev[0]));
    KA_OK_OR_FAIL(ka_buffer_write_async(g_q, b, N / 2, in + N / 2, N / 2, &ev[1]));
    assert_true(ev[0].id != 0 && ev[1].id != 0 && ev[0].id != ev[1].id);
    /* In-order queue: the read sees both writes. */
    KA_OK_OR_FAIL(ka_buffer_read_async(g_q, out, b, 0, N, &ev[2]));
    KA_OK_OR_FAIL(ka_wait_all(ev, 3, KA_WAIT_FOREVER));
    assert_memory_equal(in, out, N);
    for (int i = 0; i < 3; i++) {
        KA_OK_OR_FAIL(ka_event_wait(ev[i], 0)); /* done stays done */
        KA_OK_OR_FAIL(ka_event_release(ev[i]));
    }
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_copy(void **state) {
    (void)state;
    enum { N = 2048 };
    uint8_t in[N], out[N];
    fill_bytes(in, N, 4);
    ka_buffer a = make_buffer(g_dev, N), b = make_buffer(g_dev, N);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, a, 0, in, N));
    uint8_t zero[N];
    memset(zero, 0, N);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, zero, N));
    /* Blocking copy of the whole buffer. */
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, b, 0, a, 0, N, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, N));
    assert_memory_equal(in, out, N);
    /* Async copy of a middle part to another offset. */
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, zero, N));
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, b, 1000, a, 100, 500, &ev));
    KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, N));
    assert_memory_equal(out, zero, 1000);
    assert_memory_equal(out + 1000, in + 100, 500);
    assert_memory_equal(out + 1500, zero, N - 1500);
    /* Within one buffer, ranges that touch but do not overlap. */
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, a, 1024, a, 0, 1024, NULL));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, out, a, 1024, 1024));
    assert_memory_equal(out, in, 1024);
    KA_OK_OR_FAIL(ka_buffer_release(a));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_copy_overlap(void **state) {
    (void)state;
    ka_buffer a = make_buffer(g_dev, 1024);
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 100, a, 0, 200, NULL));
    EXPECT_DETAIL("ka_buffer_copy", "overlap");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 0, a, 100, 200, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 0, a, 0, 1, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 10, a, 10, 1000, NULL));
    ka_event ev = {123};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, a, 511, a, 0, 512, &ev));
    assert_int_equal(ev.id, 0);
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, a, 512, a, 0, 512, NULL));
    KA_OK_OR_FAIL(ka_buffer_release(a));
}

static void test_buffer_out_of_range(void **state) {
    (void)state;
    ka_buffer a = make_buffer(g_dev, 100), b = make_buffer(g_dev, 100);
    uint8_t buf[256] = {0};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 0, buf, 101));
    EXPECT_DETAIL("ka_buffer_write");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 99, buf, 2));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 101, buf, 0));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 8, buf, SIZE_MAX)); /* wraps */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, SIZE_MAX, buf, 2));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_read(g_q, buf, a, 50, 51));
    EXPECT_DETAIL("ka_buffer_read");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_read(g_q, buf, a, 1, SIZE_MAX));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, b, 0, a, 60, 41, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, b, 60, a, 0, 41, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_copy(g_q, b, 0, a, 0, SIZE_MAX, NULL));
    uint32_t pat = 1;
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, a, 0, &pat, 4, 104, NULL));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, a, 100, &pat, 4, 4, NULL));
    /* NULL host pointers. */
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write(g_q, a, 0, NULL, 4));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_read(g_q, NULL, a, 0, 4));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, a, 0, NULL, 4, 4, NULL));
    /* A failed transfer with an event leaves the event null. */
    ka_event ev = {42};
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_write_async(g_q, a, 0, buf, 101, &ev));
    assert_int_equal(ev.id, 0);
    /* Bounds are exact: the whole buffer and an empty range at the end are fine. */
    KA_OK_OR_FAIL(ka_buffer_write(g_q, a, 0, buf, 100));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, buf, a, 100, 0));
    KA_OK_OR_FAIL(ka_buffer_release(a));
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_empty_transfer(void **state) {
    (void)state;
    ka_buffer a = make_buffer(g_dev, 64);
    uint8_t buf[4];
    ka_event ev;
    KA_OK_OR_FAIL(ka_buffer_write_async(g_q, a, 10, buf, 0, &ev));
    assert_true(ev.id != 0);
    KA_OK_OR_FAIL(ka_event_wait(ev, 0)); /* complete already */
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_copy(g_q, a, 0, a, 0, 0, &ev)); /* empty ranges do not overlap */
    KA_OK_OR_FAIL(ka_event_wait(ev, 0));
    KA_OK_OR_FAIL(ka_event_release(ev));
    KA_OK_OR_FAIL(ka_buffer_release(a));
}

static void test_buffer_fill_patterns(void **state) {
    (void)state;
    enum { N = 1024 };
    ka_buffer b = make_buffer(g_dev, N);
    uint8_t pat[128], out[N], zero[N];
    memset(zero, 0, N);
    for (size_t psz = 1; psz <= 128; psz *= 2) {
        fill_bytes(pat, psz, (uint32_t)psz);
        KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, zero, N));
        /* Fill [psz*2, N - psz*2): the edges must stay zero. */
        size_t off = psz * 2, n = N - psz * 4;
        ka_event ev;
        KA_OK_OR_FAIL(ka_buffer_fill(g_q, b, off, pat, psz, n, psz % 4 ? NULL : &ev));
        if (psz % 4 == 0) {
            KA_OK_OR_FAIL(ka_event_wait(ev, KA_WAIT_FOREVER));
            KA_OK_OR_FAIL(ka_event_release(ev));
        }
        KA_OK_OR_FAIL(ka_buffer_read(g_q, out, b, 0, N));
        assert_memory_equal(out, zero, off);
        for (size_t i = off; i < off + n; i++)
            if (out[i] != pat[(i - off) % psz]) fail_msg("pattern %zu: byte %zu is %u, expected %u", psz, i, out[i], pat[(i - off) % psz]);
        assert_memory_equal(out + off + n, zero, N - off - n);
    }
    const size_t bad[] = {0, 3, 5, 6, 12, 24, 256};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ka_status st = ka_buffer_fill(g_q, b, 0, pat, bad[i], 768, NULL);
        if (st != KA_ERR_INVALID_ARGUMENT) fail_msg("pattern size %zu -> %s", bad[i], ka_status_name(st));
    }
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, b, 2, pat, 4, 8, NULL)); /* offset */
    EXPECT_DETAIL("ka_buffer_fill");
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_buffer_fill(g_q, b, 0, pat, 4, 10, NULL)); /* size */
    KA_OK_OR_FAIL(ka_buffer_release(b));
}

static void test_buffer_released_handle(void **state) {
    (void)state;
    ka_buffer b = make_buffer(g_dev, 64), c = make_buffer(g_dev, 64);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    uint8_t buf[8] = {0};
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_write(g_q, b, 0, buf, 8));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_read(g_q, buf, b, 0, 8));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_copy(g_q, c, 0, b, 0, 8, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_copy(g_q, b, 0, c, 0, 8, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_fill(g_q, b, 0, buf, 4, 8, NULL));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_release(b));
    /* The slot is reused by the next buffer: the old handle stays stale. */
    ka_buffer d = make_buffer(g_dev, 64);
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_buffer_release(b));
    size_t sz;
    KA_OK_OR_FAIL(ka_buffer_size(d, &sz));
    KA_OK_OR_FAIL(ka_buffer_release(d));
    KA_OK_OR_FAIL(ka_buffer_release(c));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffer_create_and_size),
        cmocka_unit_test(test_buffer_get_native),
        cmocka_unit_test(test_buffer_create_zero_bytes),
        cmocka_unit_test(test_buffer_create_huge),
        cmocka_unit_test(test_buffer_write_read_blocking),
        cmocka_unit_test(test_buffer_write_read_async),
        cmocka_unit_test(test_buffer_copy),
        cmocka_unit_test(test_buffer_copy_overlap),
        cmocka_unit_test(test_buffer_out_of_range),
        cmocka_unit_test(test_buffer_empty_transfer),
        cmocka_unit_test(test_buffer_fill_patterns),
        cmocka_unit_test(test_buffer_released_handle),
    };
    /* The group needs a device that runs kernels. */
    int dev = default_device_runs_kernels();
    if (dev <= 0) return dev < 0 ? 1 : 77;
    return cmocka_run_group_tests_name("buffers: default device", tests, group_setup, group_teardown);
}
