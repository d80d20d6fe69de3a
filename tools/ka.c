/* The `ka` command: info, build, run, bench. */
#include <ka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

static void usage(void) {
    fputs("usage:\n"
          "  ka info [--json]                 platforms, devices and their limits\n"
          "  ka build FILE [-DNAME[=V]...] [--device SEL] [--options OPTS]\n"
          "                                   compile check; prints the build log, exit 1 on failure\n"
          "  ka run [--device SEL] [--n N]    runs saxpy on the device and checks the result\n"
          "  ka bench launch [options]        launch cost against raw OpenCL or CUDA (ka bench launch --help)\n"
          "  ka bench wait [options]          wait latency by mode (ka bench wait --help)\n"
          "  ka bench route [options]         PoCL routing: launch + wait by work size, crossover, saxpy\n"
          "  ka bench compile [options]       persistent kernel cache: a new process, cold against warm\n"
          "  ka bench saxpy [options]         saxpy bandwidth against the device's copy bandwidth\n"
          "  ka version\n",
          stderr);
}

static const char *backend_name(ka_backend b) {
    return b == KA_BACKEND_OPENCL ? "opencl" : b == KA_BACKEND_CUDA ? "cuda" : "null";
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static void print_sg(const ka_device_info *d, int json) {
    if (json) {
        printf("[");
        for (uint32_t i = 0; i < d->num_subgroup_sizes; i++) printf("%s%u", i ? "," : "", d->subgroup_sizes[i]);
        printf("]");
        return;
    }
    if (!d->num_subgroup_sizes) {
        printf("none (the device has no sub-groups)");
        return;
    }
    for (uint32_t i = 0; i < d->num_subgroup_sizes; i++) printf("%s%u", i ? ", " : "", d->subgroup_sizes[i]);
}

static int cmd_info(int argc, char **argv) {
    int json = argc > 0 && !strcmp(argv[0], "--json");
    uint32_t n = 0;
    if (ka_device_count(&n) != KA_OK) {
        fprintf(stderr, "ka info: %s\n", ka_last_error());
        return 1;
    }
    if (json) printf("{\"version\":\"%s\",\"devices\":[", ka_version());
    else printf("libka %s: %u device%s\n", ka_version(), n, n == 1 ? "" : "s");
    for (uint32_t i = 0; i < n; i++) {
        ka_device_info d;
        ka_device_describe(i, &d);
        /* Open to read what needs a probe (preferred multiple, sub-group sizes). */
        ka_device dev;
        const ka_device_info *full = NULL;
        if (ka_device_open(d.selector, &dev) == KA_OK && ka_device_get_info(dev, &full) == KA_OK) d = *full;
        if (full) ka_device_close(dev);
        if (json) {
            printf("%s{\"selector\":", i ? "," : "");
            json_str(d.selector);
            printf(",\"backend\":\"%s\",\"name\":", backend_name(d.backend));
            json_str(d.name);
            printf(",\"vendor\":");
            json_str(d.vendor);
            printf(",\"platform\":");
            json_str(d.platform);
            printf(",\"version\":");
            json_str(d.version);
            printf(",\"driver_version\":");
            json_str(d.driver_version);
            printf(",\"opencl_c\":\"%d.%d\",\"is_cpu\":%s,\"compute_units\":%u,\"max_workgroup_size\":%u,"
                   "\"max_workgroup\":[%u,%u,%u],\"preferred_workgroup_multiple\":%u,\"local_mem_size\":%llu,"
                   "\"global_mem_size\":%llu,\"max_alloc_size\":%llu,\"max_arg_bytes\":%u,\"subgroup_sizes\":",
                   d.opencl_c_major, d.opencl_c_minor, d.is_cpu ? "true" : "false", d.compute_units,
                   d.max_workgroup_size, d.max_workgroup[0], d.max_workgroup[1], d.max_workgroup[2],
                   d.preferred_workgroup_multiple, (unsigned long long)d.local_mem_size,
                   (unsigned long long)d.global_mem_size, (unsigned long long)d.max_alloc_size, d.max_arg_bytes);
            print_sg(&d, 1);
            printf(",\"double\":%s,\"atomic64\":%s,\"atomic_float_add\":\"%s\",\"subgroup_shuffle\":%s}",
                   d.has_double ? "true" : "false", d.has_atomic64 ? "true" : "false",
                   d.has_atomic_float_add == 1 ? "native" : d.has_atomic_float_add == 2 ? "emulated" : "none",
                   d.has_subgroup_shuffle ? "true" : "false");
        } else {
            printf("\n[%s] %s\n", d.selector, d.name);
            printf("  platform        %s (%s back-end)\n", d.platform, backend_name(d.backend));
            printf("  vendor          %s\n", d.vendor);
            printf("  version         %s; OpenCL C %d.%d; driver %s\n", d.version, d.opencl_c_major,
                   d.opencl_c_minor, d.driver_version);
            printf("  type            %s, %u compute units\n", d.is_cpu ? "CPU" : "GPU/accelerator", d.compute_units);
            printf("  work-group      max %u items, per dimension (%u, %u, %u), preferred multiple %u\n",
                   d.max_workgroup_size, d.max_workgroup[0], d.max_workgroup[1], d.max_workgroup[2],
                   d.preferred_workgroup_multiple);
            printf("  memory          global %llu MiB, largest buffer %llu MiB, local %llu KiB\n",
                   (unsigned long long)(d.global_mem_size >> 20), (unsigned long long)(d.max_alloc_size >> 20),
                   (unsigned long long)(d.local_mem_size >> 10));
            printf("  kernel args     up to %u bytes\n", d.max_arg_bytes);
            printf("  sub-groups      ");
            print_sg(&d, 0);
            printf("\n  capabilities    double %s, 64-bit atomics %s, float atomic add %s, sub-group shuffle %s\n",
                   d.has_double ? "yes" : "no", d.has_atomic64 ? "yes" : "no",
                   d.has_atomic_float_add == 1 ? "native" : d.has_atomic_float_add == 2 ? "emulated" : "no",
                   d.has_subgroup_shuffle ? "yes" : "no");
        }
    }
    if (json) printf("]}\n");
    return 0;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static int cmd_build(int argc, char **argv) {
    const char *file = NULL, *sel = NULL, *options = NULL;
    const char *defines[64];
    uint32_t nd = 0;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "-D", 2) && argv[i][2] && nd < 64) defines[nd++] = argv[i] + 2;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) sel = argv[++i];
        else if (!strcmp(argv[i], "--options") && i + 1 < argc) options = argv[++i];
        else if (!file && argv[i][0] != '-') file = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (!file) {
        usage();
        return 2;
    }
    char *src = read_file(file);
    if (!src) {
        fprintf(stderr, "ka build: cannot read %s\n", file);
        return 1;
    }
    ka_device dev;
    if (ka_device_open(sel, &dev) != KA_OK) {
        fprintf(stderr, "ka build: %s\n", ka_last_error());
        free(src);
        return 1;
    }
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    ka_program p;
    ka_build_options o = {options, defines, nd};
    ka_status st = ka_program_build(dev, src, &o, &p);
    free(src);
    if (st != KA_OK) {
        fprintf(stderr, "%s: build failed on %s: %s\n%s\n", file, di->name, ka_strerror(st), ka_last_error());
        ka_device_close(dev);
        return 1;
    }
    printf("%s: built for %s (%s)\n", file, di->name, di->selector);
    ka_program_release(p);
    ka_device_close(dev);
    return 0;
}

int ka_run_saxpy(const char *sel, uint32_t n);

int main(int argc, char **argv) {
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "build")) return cmd_build(argc - 2, argv + 2);
    if (!strcmp(cmd, "run")) {
        const char *sel = NULL;
        uint32_t n = 1000003;
        for (int i = 2; i + 1 < argc; i += 2) {
            if (!strcmp(argv[i], "--device")) sel = argv[i + 1];
            else if (!strcmp(argv[i], "--n")) n = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        }
        return ka_run_saxpy(sel, n);
    }
    if (!strcmp(cmd, "bench") && argc >= 3) {
        if (!strcmp(argv[2], "launch")) return bench_launch_main(argc - 3, argv + 3);
        if (!strcmp(argv[2], "wait")) return bench_wait_main(argc - 3, argv + 3);
        if (!strcmp(argv[2], "route")) return bench_route_main(argc - 3, argv + 3);
        if (!strcmp(argv[2], "compile")) return bench_compile_main(argc - 3, argv + 3);
        if (!strcmp(argv[2], "saxpy")) return bench_saxpy_main(argc - 3, argv + 3);
    }
    if (!strcmp(cmd, "version")) {
        printf("libka %s\n", ka_version());
        return 0;
    }
    usage();
    return 2;
}
