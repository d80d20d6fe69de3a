/* C against C++ (ka.hpp) launches, for bench/callgrind_cpp.sh: the same saxpy
 * launched `it` times by a loop of ka_launch (c_loop) or of ka::kernel::launch
 * (cpp_loop); callgrind counts the chosen loop alone. Usage: callgrind_cpp c|cpp it */
#include <ka.hpp>
#include <cstdio>
#include <cstdlib>
static const char *kSrc =
    "KA_KERNEL(saxpy, KA_GLOBAL float *y, KA_GLOBAL const float *x, float a, int n) {\n"
    "    size_t i = ka_global_id(0);\n"
    "    if (ka_in_range() && i < (size_t)n) y[i] = a * x[i] + y[i];\n"
    "}\n";
extern "C" __attribute__((noinline)) void c_loop(ka_queue q, ka_kernel k, ka_buffer y, ka_buffer x, int n, int it) {
    ka_range r = {1, {(uint64_t)n, 0, 0}, {0, 0, 0}, 0};
    for (int i = 0; i < it; i++) {
        ka_arg a[4] = {ka_arg_buffer(y), ka_arg_buffer(x), ka_arg_f32(1.0f), ka_arg_i32(n)};
        if (ka_launch(q, k, &r, a, 4, NULL) != KA_OK) { std::fprintf(stderr, "%s\n", ka_last_error()); std::exit(1); }
    }
}
extern "C" __attribute__((noinline)) void cpp_loop(const ka::queue &q, const ka::kernel &k, const ka::buffer<float> &y,
                                                   const ka::buffer<float> &x, int n, int it) {
    for (int i = 0; i < it; i++) k.launch(q, ka::range(n), y, x, 1.0f, n);
}
int main(int, char **argv) {
    int it = atoi(argv[2]); bool cpp = argv[1][1] == 'p';
    ka::device dev; ka::queue q(dev); ka::program p(dev, kSrc); ka::kernel k = p.kernel("saxpy");
    int n = 1;
    ka::buffer<float> x(dev, 64), y(dev, 64);
    c_loop(q.get(), k.get(), y.get(), x.get(), n, 10); cpp_loop(q, k, y, x, n, 10); q.finish();
    if (cpp) cpp_loop(q, k, y, x, n, it); else c_loop(q.get(), k.get(), y.get(), x.get(), n, it);
    q.finish();
}
