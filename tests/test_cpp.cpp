/* Issue 28: the C++ header ka.hpp over the default device. A saxpy runs
 * through the owners and the variadic launch and is checked; failures become
 * ka::error with the call's status and a message naming the call; N launches
 * and waits through the wrappers make no libka allocation (a counting
 * allocator installed through ka_set_allocator). Exit 77: no device. */
#include <ka.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

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
    "}\n";

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
