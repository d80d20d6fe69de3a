/* fortran-heat-bench: the Fortran heat loop (examples/heat.f90's, through the
 * `libka` module: bench/fortran_heat_loop.f90) against the same loop written in
 * C, on one queue, kernel and pair of buffers, interleaved in one run.
 *
 *   fortran-heat-bench [--device SEL] [--sizes N,N,...] [--steps S] [--reps R] [--json]
 *
 * A run of either loop is S launches of the heat kernel on N x N, then a
 * ka_queue_finish; each repetition runs both, in alternating order. Prints, per
 * size, the median microseconds per step of each and Fortran's over C's (the
 * goal: at most 1.02). Exit status: 0 ran, 1 a libka call failed, 2 usage
 * (cli.h: options parsed as ka-bench's are). */
#include <ka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

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

static const char usage[] =
    "usage: fortran-heat-bench [--device SEL] [--sizes N,N,...] [--steps S] [--reps R] [--json]\n"
    "  The Fortran heat loop (the libka module) against the same loop in C, interleaved; medians.\n"
    "  N: up to 16 sizes, 3 to 32768 each (default 64,256,1024,4096); S: 1 to 1000000 (default 200);\n"
    "  R: 1 to 1000 (default 9).\n" CLI_DEVICES_HELP;

/* Comma-separated sizes into out; their count, or -1 (reported). */
static int parse_sizes(const cli *c, const char *arg, int *out) {
    char buf[256], *save = NULL;
    int n = 0;
    if (strlen(arg) >= sizeof buf) return cli_error(c, "--sizes '%s': too long", arg), -1;
    strcpy(buf, arg);
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == MAX_SIZES) return cli_error(c, "--sizes '%s': at most %d sizes", arg, MAX_SIZES), -1;
        if (cli_int(c, t, 3, 32768, &out[n++])) return -1;
    }
    if (!n) return cli_error(c, "--sizes '%s': no size", arg), -1;
    return n;
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
    static const struct option lo[] = {{"device", required_argument, NULL, 'd'}, {"sizes", required_argument, NULL, 'z'},
                                       {"steps", required_argument, NULL, 's'},  {"reps", required_argument, NULL, 'r'},
                                       {"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    const char *sel = NULL, *arg;
    int sizes[MAX_SIZES] = {64, 256, 1024, 4096}, nsizes = 4, steps = 200, reps = 9, json = 0;
    cli cl;
    cli_init(&cl, "fortran-heat-bench", usage, argc, argv, "h", lo);
    for (int r; (r = cli_next(&cl, &arg)) != CLI_END;) {
        switch (r) {
        case 'd': sel = arg; break;
        case 'z':
            if ((nsizes = parse_sizes(&cl, arg, sizes)) < 0) return KA_EXIT_USAGE;
            break;
        case 's':
            if (cli_int(&cl, arg, 1, 1000000, &steps)) return KA_EXIT_USAGE;
            break;
        case 'r':
            if (cli_int(&cl, arg, 1, MAX_REPS, &reps)) return KA_EXIT_USAGE;
            break;
        case 'j': json = 1; break;
        default: return cli_default(&cl, r, arg);
        }
    }

    ka_device dev;
    ka_queue q;
    ka_program prog;
    ka_kernel k;
    if (cli_device_open(&cl, sel, &dev)) return KA_EXIT_FAIL;
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
