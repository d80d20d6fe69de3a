/* A C++ program built against an installed libka through find_package: the
 * installed ka.hpp, a launch through it, its result checked. */
#include <ka.hpp>

#include <cstdio>
#include <vector>

int main() {
    try {
        ka::device dev;
        ka::queue q(dev);
        ka::program prog(dev, "KA_KERNEL(twice, KA_GLOBAL int *p, int n) {\n"
                              "    size_t i = ka_global_id(0);\n"
                              "    if (ka_in_range() && i < (size_t)n) p[i] *= 2;\n"
                              "}\n");
        const int n = 100;
        std::vector<int> h(n);
        for (int i = 0; i < n; i++) h[i] = i;
        ka::buffer<int> b(dev, h);
        prog.kernel("twice").launch(q, ka::range(n), b, n);
        std::vector<int> out = b.read(q);
        for (int i = 0; i < n; i++)
            if (out[i] != 2 * i) {
                std::fprintf(stderr, "consumer_cpp: element %d is %d, not %d\n", i, out[i], 2 * i);
                return 1;
            }
    } catch (const ka::error &e) {
        std::fprintf(stderr, "consumer_cpp: %s\n", e.what());
        return 1;
    }
    return 0;
}
