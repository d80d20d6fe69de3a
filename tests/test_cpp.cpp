/* Issue 28: the C++ header ka.hpp over the default device. A saxpy runs
 * through the owners and the variadic launch and is checked; failures become
 * ka::error with the call's status and a message naming the call; N launches
 * and waits through the wrappers make no libka allocation (a counting
 * allocator installed through ka_set_allocator). Issue 38: element counts
 * and offsets whose byte count does not fit size_t are refused before the C
 * call; every member of the class templates is compiled (explicit
 * instantiations below) and every wrapper called. Exit 77: no device. */
#include <ka.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

/* Every member of the class templates, used by a test or not, compiles. */
struct pair16 {
    double a, b;
};
template class ka::buffer<float>;
template class ka::buffer<double>;
template class ka::buffer<uint8_t>;
template class ka::buffer<pair16>;
template class ka::detail::owner<ka_device, ka_device_close>;
template class ka::detail::owner<ka_queue, ka_queue_release>;
template class ka::detail::owner<ka_buffer, ka_buffer_release>;
template class ka::detail::owner<ka_program, ka_program_release>;
template class ka::detail::owner<ka_event, ka_event_release>;

static std::atomic<uint64_t> g_allocs{0}, g_frees{0};
static std::atomic<int> g_on{0};
static void *count_alloc(size_t n, void *) {
    if (g_on.load()) g_allocs++;
    return std::malloc(n);
}
static void count_free(void *p, size_t, void *) {
    if (g_on.load()) g_frees++;
    std::free(p);
}

static int failures = 0;
#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                       \
        }                                                                     \
    } while (0)

static const char *src =
    "KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_GLOBAL const float *x, float a, int n) {\n"
    "    size_t i = ka_global_id(0);\n"
    "    if (ka_in_range() && i < (size_t)n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "KA_KERNEL(mix, KA_GLOBAL double *out, double d, long l, uint u, short s, uchar c) {\n"
    "    if (ka_global_id(0) == 0) out[0] = d + (double)l + (double)u + (double)s + (double)c;\n"
    "}\n"
    "KA_KERNEL(rev, KA_GLOBAL int *A, KA_LOCAL_ARG(int) l) {\n"
    "    ka_size_t N = ka_group_linear_size(), I = ka_global_linear_id(), i = ka_local_linear_id();\n"
    "    l[i] = (int)I;\n"
    "    ka_barrier();\n"
    "    if (ka_in_range()) A[I] = l[N - 1 - i];\n"
    "}\n"
    "KA_KERNEL(grid, KA_GLOBAL int *A, int nx) {\n"
    "    if (ka_in_range()) A[ka_global_id(1) * nx + ka_global_id(0)] = (int)(ka_global_id(0) + 1000 * ka_global_id(1));\n"
    "}\n"
    "KA_KERNEL(ints, KA_GLOBAL long *out, char a, ushort b, int c, ulong d, uint e, short f, uchar g, long h) {\n"
    "    if (ka_global_id(0) == 0) {\n"
    "        out[0] = a; out[1] = b; out[2] = c; out[3] = (long)d; out[4] = e; out[5] = f; out[6] = g; out[7] = h;\n"
    "    }\n"
    "}\n";

/* The byte-count checks: each count or offset past SIZE_MAX / sizeof(T) is
 * refused before the C call, and nothing is written. */
static void byte_counts(const ka::device &dev, const ka::queue &q);
/* Each wrapper a saxpy does not reach: fill, the pointer transfers, every
 * integer width, program from a std::string and a file, build_log, info,
 * flush, queue::wait, wait_all, elapsed_ns, release and reset. */
static void other_wrappers(const ka::device &dev, const ka::queue &q, const ka::program &prog);

/* Runs f, which must throw ka::error with status s and a what() starting with call. */
template <class F>
static void expect_error(F f, ka_status s, const char *call) {
    try {
        f();
        std::fprintf(stderr, "no exception from %s\n", call);
        failures++;
    } catch (const ka::error &e) {
        if (e.status() != s || std::strncmp(e.what(), call, std::strlen(call)) != 0) {
            std::fprintf(stderr, "%s: got %s \"%s\", wanted %s\n", call, ka_status_name(e.status()), e.what(),
                         ka_status_name(s));
            failures++;
        }
    }
}

int main() {
    static const ka_allocator counting = {count_alloc, count_free, nullptr};
    ka_set_allocator(&counting);
    try {
        ka::device dev;
        ka::queue q(dev);
        ka::program prog(dev, src);
        ka::kernel saxpy = prog.kernel("saxpy");

        const int n = 1000;
        std::vector<float> hx(n), hy(n);
        for (int i = 0; i < n; i++) {
            hx[i] = (float)i;
            hy[i] = 1.0f;
        }
        ka::buffer<float> x(dev, hx), y(dev, n);
        y.write(q, hy);
        saxpy.launch(q, ka::range(n), y, x, 2.0f, n);
        ka::event ev = saxpy.launch(q, ka::range(n).flags(KA_LAUNCH_ASYNC), ka::with_event, y, x, 0.5f, n);
        ev.wait();
        std::vector<float> out = y.read(q);
        for (int i = 0; i < n; i++) CHECK(out[i] == 2.0f * (float)i + 1.0f + 0.5f * (float)i);

        /* Each scalar type reaches its kernel type. */
        ka::buffer<double> d(dev, 1);
        prog.kernel("mix").launch(q, ka::range(1), d, 0.25, (long)1000, 7u, (short)-3, (unsigned char)200);
        double got = 0;
        d.read(q, &got, 1);
        CHECK(got == 0.25 + 1000 + 7 - 3 + 200);

        /* Dynamic local memory (ka::local) with a chosen work-group, and a 2-D range. */
        ka::buffer<int> r(dev, 64);
        prog.kernel("rev").launch(q, ka::range(64).workgroup(16), r, ka::local(16 * sizeof(int)));
        std::vector<int> hr = r.read(q);
        for (int i = 0; i < 64; i++) CHECK(hr[i] == (i / 16) * 16 + 15 - i % 16);
        const int nx = 7, ny = 5;
        ka::buffer<int> g(dev, nx * ny);
        prog.kernel("grid").launch(q, ka::range(nx, ny), g, nx);
        std::vector<int> hg = g.read(q);
        for (int iy = 0; iy < ny; iy++)
            for (int ix = 0; ix < nx; ix++) CHECK(hg[iy * nx + ix] == ix + 1000 * iy);

        /* Moves leave an empty owner; the moved-to one releases. */
        ka::buffer<float> moved = std::move(x);
        CHECK(!x && moved && moved.size() == (size_t)n);

        /* Failures as exceptions. */
        expect_error([&] { (void)prog.kernel("no_such_kernel"); }, KA_ERR_KERNEL_NOT_FOUND, "ka_kernel_get");
        expect_error([&] { ka::program bad(dev, "KA_KERNEL(k, int x) { undeclared = 1; }"); }, KA_ERR_BUILD_FAILED,
                     "ka_program_build");
        expect_error([&] { saxpy.launch(q, ka::range(n), y, moved, 1.0f); }, KA_ERR_ARG_COUNT, "ka_launch");
        expect_error([&] { saxpy.launch(q, ka::range(n), y, moved, 1.0, n); }, KA_ERR_ARG_TYPE, "ka_launch");
        expect_error([&] { ka::device none("no device has this name"); }, KA_ERR_NO_DEVICE, "ka_device_open");

        byte_counts(dev, q);
        other_wrappers(dev, q, prog);

        /* No libka allocation per launch + wait once warm. */
        for (int i = 0; i < 10; i++) saxpy.launch(q, ka::range(n), ka::with_event, y, moved, 1.0f, n).wait();
        const int N = 2000;
        g_allocs = 0;
        g_frees = 0;
        g_on = 1;
        for (int i = 0; i < N; i++) {
            ka::event e = saxpy.launch(q, ka::range(n), ka::with_event, y, moved, 1.0f, n);
            e.wait();
            saxpy.launch(q, ka::range(n), y, moved, 1.0f, n);
        }
        q.finish();
        g_on = 0;
        if (g_allocs || g_frees) {
            std::fprintf(stderr, "%llu allocations and %llu frees in libka over %d launches\n",
                         (unsigned long long)g_allocs.load(), (unsigned long long)g_frees.load(), 2 * N);
            failures++;
        }
    } catch (const ka::error &e) {
        if (e.status() == KA_ERR_NO_DEVICE && std::strncmp(e.what(), "ka_device_open", 14) == 0) {
            std::printf("skipped: %s\n", e.what());
            return 77;
        }
        std::fprintf(stderr, "unexpected ka::error %s: %s\n", ka_status_name(e.status()), e.what());
        return 1;
    }
    std::printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

static void byte_counts(const ka::device &dev, const ka::queue &q) {
    const size_t over = SIZE_MAX / sizeof(float) + 1; /* times 4: 2^64, wraps to 0 */
    float one = 1.0f;
    std::vector<float> four(4, 2.0f);
    expect_error([&] { ka::buffer<float> b(dev, over + 1); }, KA_ERR_INVALID_ARGUMENT, "ka_buffer_create");
    expect_error([&] { ka::buffer<float> b(dev, &one, over); }, KA_ERR_INVALID_ARGUMENT, "ka_buffer_create_with");
    expect_error([&] { ka::buffer<double> b(dev, SIZE_MAX / 8 + 1); }, KA_ERR_INVALID_ARGUMENT, "ka_buffer_create");
    expect_error([&] { ka::buffer<pair16> b(dev, SIZE_MAX / 16 + 2); }, KA_ERR_INVALID_ARGUMENT, "ka_buffer_create");
    ka::buffer<float> b(dev, four);
    expect_error([&] { b.write(q, &one, 1, over); }, KA_ERR_INVALID_ARGUMENT, "ka_buffer_write");
    expect_error([&] { b.write(q, &one, over); }, KA_ERR_INVALID_ARGUMENT, "ka_buffer_write");
    expect_error([&] { b.read(q, &one, 1, over); }, KA_ERR_INVALID_ARGUMENT, "ka_buffer_read");
    expect_error([&] { b.read(q, &one, over + 3); }, KA_ERR_INVALID_ARGUMENT, "ka_buffer_read");
    CHECK(one == 1.0f);
    std::vector<float> now = b.read(q);
    for (float v : now) CHECK(v == 2.0f); /* element 0 not overwritten */
    try {
        ka::buffer<float> c(dev, over);
    } catch (const ka::error &e) {
        CHECK(std::strstr(e.what(), std::to_string(over).c_str()) != nullptr); /* the count is named */
        CHECK(std::strstr(e.what(), "SIZE_MAX") != nullptr);
    }
    /* The largest counts that fit reach the C call, which judges them. */
    try {
        ka::buffer<float> c(dev, SIZE_MAX / sizeof(float));
        std::fprintf(stderr, "a buffer of SIZE_MAX - 3 bytes was made\n");
        failures++;
    } catch (const ka::error &e) {
        CHECK(std::strstr(e.what(), "over SIZE_MAX") == nullptr);
    }
    expect_error([&] { b.write(q, &one, 1, SIZE_MAX / sizeof(float)); }, KA_ERR_INVALID_ARGUMENT, "ka_buffer_write");
}

static void other_wrappers(const ka::device &dev, const ka::queue &q, const ka::program &prog) {
    /* fill, for patterns of 4, 8, 1 and 16 bytes; enqueued, then finished. */
    ka::buffer<int> bi(dev, 100);
    ka::buffer<double> bd(dev, 33);
    ka::buffer<uint8_t> b8(dev, 7);
    ka::buffer<pair16> bp(dev, 5);
    bi.fill(q, -7);
    bd.fill(q, 0.5);
    b8.fill(q, uint8_t{200});
    bp.fill(q, pair16{1.5, -2.5});
    q.finish();
    for (int v : bi.read(q)) CHECK(v == -7);
    for (double v : bd.read(q)) CHECK(v == 0.5);
    for (uint8_t v : b8.read(q)) CHECK(v == 200);
    for (const pair16 &v : bp.read(q)) CHECK(v.a == 1.5 && v.b == -2.5);
    /* Pointer transfers at an element offset. */
    const int three[3] = {4, 5, 6};
    bi.write(q, three, 3, 10);
    int back[4] = {0, 0, 0, 0};
    bi.read(q, back, 4, 9);
    CHECK(back[0] == -7 && back[1] == 4 && back[2] == 5 && back[3] == 6);
    CHECK(bi.size() == 100 && bi.bytes() == 400);

    /* Every integer width through detail::arg, a ka_buffer and a ka_arg. */
    ka::buffer<long> out(dev, 8);
    ka::kernel ints = prog.kernel("ints");
    CHECK(ints.info().num_args == 9);
    ints.launch(q, ka::range(1), out.get(), int8_t{-5}, uint16_t{60000}, int32_t{-70000}, uint64_t{1} << 40,
                uint32_t{4000000000u}, int16_t{-300}, uint8_t{250}, ka_arg_i64(-(int64_t{1} << 35)));
    std::vector<long> got = out.read(q);
    const long want[8] = {-5, 60000, -70000, 1L << 40, 4000000000L, -300, 250, -(1L << 35)};
    for (size_t i = 0; i < 8; i++) CHECK(got[i] == want[i]);

    /* A program from a std::string and from a file; its (empty) build log. */
    const std::string twice_src = "KA_KERNEL(twice, KA_GLOBAL int *p) { if (ka_in_range()) p[ka_global_id(0)] *= 2; }\n";
    ka::program ps(dev, twice_src);
    CHECK(ps.build_log() != nullptr);
    char path[] = "/tmp/ka_test_cpp_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, twice_src.data(), twice_src.size()) == (ssize_t)twice_src.size());
        close(fd);
        ka::program pf = ka::program::from_file(dev, path);
        unlink(path);
        pf.kernel("twice").launch(q, ka::range(13), bi);
        bi.read(q, back, 4, 9);
        CHECK(back[0] == -14 && back[1] == 8 && back[2] == 10 && back[3] == 12);
    }
    expect_error([&] { (void)ka::program::from_file(dev, "/nonexistent/libka/kernel.cl"); }, KA_ERR_IO,
                 "ka_program_build_file");
    CHECK(std::strlen(dev.info().name) > 0);

    /* Events: a profiling queue's elapsed time, queue::wait, wait_all, flush. */
    ka_queue_config pc{};
    pc.profiling = 1;
    ka::queue qp(dev, &pc);
    ka::kernel twice = ps.kernel("twice");
    ka::event e1 = twice.launch(qp, ka::range(100), ka::with_event, bi);
    qp.flush();
    q.wait(e1);
    ka::event e2 = twice.launch(q, ka::range(100), ka::with_event, bi);
    ka::wait_all(e1, e2);
    (void)e1.elapsed_ns(); /* any value: only that the call succeeds */
    bi.read(q, back, 1, 0);
    CHECK(back[0] == -56);

    /* Owners: release hands the handle over, reset releases now. */
    ka::buffer<int> r(dev, 4);
    ka_buffer raw = r.release();
    CHECK(!r && raw.id != 0);
    CHECK(ka_buffer_release(raw) == KA_OK);
    ka::buffer<int> s(dev, 4);
    s.reset();
    CHECK(!s);
    s = ka::buffer<int>(dev, 2);
    CHECK(s && s.size() == 2);
}
