/* fortran-heat-bench: the Fortran heat loop (examples/heat.f90's, through the
 * `libka` module: bench/fortran_heat_loop.f90) against the same loop written in
 * C, on one queue, kernel and pair of buffers, interleaved in one run.
 *
 *   fortran-heat-bench [--device SEL] [--sizes N,N,...] [--steps S] [--reps R] [--json]
 *
 * A run of either loop is S launches of the heat kernel on N x N, then a
 * ka_queue_finish; each repetition runs both, in alternating order. Prints, per
 * size, the median microseconds per step of each and Fortran's over C's (the
 * goal: at most 1.02). Exit status: 0 ran, 1 a libka call failed, 2 usage. */
#include <errno.h>
#include <ka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* bench/fortran_heat_loop.f90 */
int fortran_heat_steps(ka_queue q, ka_kernel k, ka_buffer b1, ka_buffer b2, int nx, int ny, int steps);

/* examples/heat.f90's kernel: dimension 0 runs down a Fortran column. */
static const char heat_src[] =
    "KA_KERNEL(heat, KA_GLOBAL float *dst, KA_GLOBAL const float *src, int nx, int ny) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0), j = ka_global_id(1), k = j * (size_t)nx + i;\n"
    "    if (i == 0 || j == 0 || i == (size_t)nx - 1 || j == (size_t)ny - 1) { dst[k] = src[k]; return; }\n"
    "    dst[k] = ((((src[k] + src[k - 1]) + src[k + 1]) + src[k - nx]) + src[k + nx]) * 0.2f;\n"
    "}\n";

enum { MAX_SIZES = 16, MAX_REPS = 1000 };

/* The loop a C user writes: the arguments built once, a launch per step. */
static ka_status c_heat_steps(ka_queue q, ka_kernel k, ka_buffer b1, ka_buffer b2, int nx, int ny, int steps) {
    const ka_range r = {2, {(uint64_t)nx, (uint64_t)ny, 1}, {0, 0, 0}, 0};
    const ka_arg args[2][4] = {{ka_arg_buffer(b2), ka_arg_buffer(b1), ka_arg_i32(nx), ka_arg_i32(ny)},
                               {ka_arg_buffer(b1), ka_arg_buffer(b2), ka_arg_i32(nx), ka_arg_i32(ny)}};
    for (int s = 0; s < steps; s++) {
        ka_status st = ka_launch(q, k, &r, args[s & 1], 4, NULL);
        if (st != KA_OK) return st;
    }
    return ka_queue_finish(q);
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A positive int from arg, or 0. */
static int positive(const char *arg, long max) {
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    return errno || end == arg || *end || v < 1 || v > max ? 0 : (int)v;
}

static int usage(const char *why) {
    fprintf(stderr, "fortran-heat-bench: %s\n"
                    "usage: fortran-heat-bench [--device SEL] [--sizes N,N,...] [--steps S] [--reps R] [--json]\n", why);
    return 2;
}

#define CHECK(call)                                                                          \
    do {                                                                                     \
        ka_status st_ = (call);                                                              \
        if (st_ != KA_OK) {                                                                  \
            fprintf(stderr, "fortran-heat-bench: %s: %s\n", #call, ka_last_error());         \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

int main(int argc, char **argv) {
    const char *sel = "";
    int sizes[MAX_SIZES] = {64, 256, 1024, 4096}, nsizes = 4, steps = 200, reps = 9, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--help")) { usage("the Fortran heat loop against the C one"); return 0; }
        if (!v) return usage("an option without its value, or an unknown option");
        i++;
        if (!strcmp(a, "--device")) sel = v;
        else if (!strcmp(a, "--steps")) { if (!(steps = positive(v, 1000000))) return usage("--steps: want 1 to 1000000"); }
        else if (!strcmp(a, "--reps")) { if (!(reps = positive(v, MAX_REPS))) return usage("--reps: want 1 to 1000"); }
        else if (!strcmp(a, "--sizes")) {
            char buf[256], *save = NULL;
            if (strlen(v) >= sizeof buf) return usage("--sizes: too long");
            strcpy(buf, v);
            nsizes = 0;
            for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (nsizes == MAX_SIZES) return usage("--sizes: at most 16");
                if (!(sizes[nsizes++] = positive(t, 32768)) || sizes[nsizes - 1] < 3) return usage("--sizes: want 3 to 32768");
            }
            if (!nsizes) return usage("--sizes: none given");
        } else return usage("an unknown option");
    }

    ka_device dev;
    ka_queue q;
    ka_program prog;
    ka_kernel k;
    CHECK(ka_device_open(sel, &dev));
    CHECK(ka_queue_create(dev, NULL, &q));
    CHECK(ka_program_build(dev, heat_src, NULL, &prog));
    CHECK(ka_kernel_get(prog, "heat", NULL, &k));
    const ka_device_info *info;
    CHECK(ka_device_get_info(dev, &info));
    const char *name = info->name;
    if (json) printf("{\"bench\":\"fortran_heat\",\"device\":\"%s\",\"steps\":%d,\"reps\":%d,\"results\":[", name, steps, reps);
    else printf("fortran-heat-bench on %s: %d steps a run, median of %d, us per step\n%8s %12s %12s %10s\n", name, steps,
                reps, "n", "C", "Fortran", "F / C");
    static double tc[MAX_REPS], tf[MAX_REPS];
    for (int si = 0; si < nsizes; si++) {
        int n = sizes[si];
        size_t bytes = (size_t)n * (size_t)n * sizeof(float);
        float *init = calloc((size_t)n * (size_t)n, sizeof(float));
        if (!init) { fprintf(stderr, "fortran-heat-bench: out of memory at %d x %d\n", n, n); return 1; }
        for (int j = 0; j < n; j++) init[(size_t)j * (size_t)n] = 100.0f;
        ka_buffer b[2];
        for (int s = 0; s < 2; s++) {
            CHECK(ka_buffer_create(dev, bytes, &b[s]));
            CHECK(ka_buffer_write(q, b[s], 0, init, bytes));
        }
        free(init);
        CHECK(c_heat_steps(q, k, b[0], b[1], n, n, steps)); /* warm-up: first launches, caches */
        CHECK(fortran_heat_steps(q, k, b[0], b[1], n, n, steps));
        for (int r = 0; r < reps; r++) {
            for (int o = 0; o < 2; o++) {
                int fortran = (o + r) & 1;
                double t0 = now_us();
                CHECK(fortran ? fortran_heat_steps(q, k, b[0], b[1], n, n, steps) : c_heat_steps(q, k, b[0], b[1], n, n, steps));
                (fortran ? tf : tc)[r] = (now_us() - t0) / steps;
            }
        }
        double mc = median(tc, reps), mf = median(tf, reps);
        if (json) printf("%s{\"n\":%d,\"c_us_per_step\":%.4f,\"fortran_us_per_step\":%.4f,\"fortran_over_c\":%.4f}",
                         si ? "," : "", n, mc, mf, mf / mc);
        else printf("%8d %12.3f %12.3f %10.3f\n", n, mc, mf, mf / mc);
        for (int s = 0; s < 2; s++) CHECK(ka_buffer_release(b[s]));
    }
    if (json) printf("]}\n");
    CHECK(ka_program_release(prog));
    CHECK(ka_queue_release(q));
    CHECK(ka_device_close(dev));
    return 0;
}
