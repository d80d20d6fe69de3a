/* The `ka` command: info, build, run, cache, version (the benchmarks are `ka-bench`).
 * Exit status: 0 success; 1 a run-time failure (no device, a failed build or
 * check); 2 a usage error (unknown option or command, bad or missing value,
 * a FILE that is not a readable kernel source). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <ka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "saxpy.h"

static const char usage_ka[] =
    "usage: ka COMMAND [OPTIONS]   (ka COMMAND --help, or ka help COMMAND, for its options)\n"
    "  ka info [--json]                 platforms, devices and their limits\n"
    "  ka build FILE [-DNAME[=V]...] [-I DIR...] [--device SEL] [--options OPTS]\n"
    "                                   compile check; prints the build log, exit 1 on failure\n"
    "  ka run [--device SEL] [--n N]    runs saxpy on the device and checks the result\n"
    "  ka cache info [--json]           the persistent kernel cache: directory, state, use, bound\n"
    "  ka cache clear                   removes the kernel cache's entries\n"
    "  ka version                       libka's version\n"
    CLI_DEVICES_HELP
    "Exit status: 0 success, 1 failure (no device, build or check failed), 2 usage error.\n";

static const char usage_info[] =
    "usage: ka info [--json]\n"
    "  Lists every device libka sees: platform, back-end, limits, sub-group sizes, capabilities;\n"
    "  then the persistent kernel cache, as `ka cache info` shows it.\n"
    "  --json   one JSON object on stdout instead of text\n";

static const char usage_build[] =
    "usage: ka build FILE [-DNAME[=V]...] [-I DIR...] [--device SEL] [--options OPTS]\n"
    "  Compiles the kernel source in FILE for the device and prints the build log on failure.\n"
    "  -D NAME[=V]      a define, as the build option -D (up to 64)\n"
    "  -I DIR           searched by #include after FILE's own directory (up to 64)\n"
    "  --device SEL     the device (default: $KA_DEVICE, else PoCL's CPU device)\n"
    "  --options OPTS   extra native build options\n"
    "  FILE must be a readable regular file of 1 byte to 16 MiB of text (no NUL byte).\n"
    "  Exit status: 0 built, 1 the build failed or no device, 2 usage error or FILE unusable.\n";

static const char usage_run[] =
    "usage: ka run [--device SEL] [--n N]\n"
    "  Runs saxpy (y = 2x + y) over N floats on the device and checks every element.\n"
    "  --device SEL   the device (default: $KA_DEVICE, else PoCL's CPU device)\n"
    "  --n N          elements, 1 to 4294967295 (default 1000003); each of the two buffers,\n"
    "                 4*N bytes, must fit the device's largest buffer\n"
    "  Exit status: 0 checked, 1 failure (no device, buffer too large, wrong result), 2 usage error.\n";

static const char usage_cache[] =
    "usage: ka cache COMMAND   (ka cache COMMAND --help for its options)\n"
    "  ka cache info [--json]   the cache's directory, state (on, off or unusable, and why),\n"
    "                           entries and bytes used, and the bound (KA_CACHE_MAX_BYTES)\n"
    "  ka cache clear           removes every entry, temporary and idle lock file libka made\n"
    "                           in the cache directory, nothing else\n"
    "  The directory is $KA_CACHE_DIR, else $XDG_CACHE_HOME/libka, else $HOME/.cache/libka.\n"
    "Exit status: 0 success, 1 failure (clear: the directory is unusable or a file stayed), 2 usage error.\n";

static const char usage_cache_info[] =
    "usage: ka cache info [--json]\n"
    "  The persistent kernel cache: directory, state (on, off or unusable, and why), entries and\n"
    "  bytes used, the bound (KA_CACHE_MAX_BYTES; 0 is none), lock and temporary files.\n"
    "  --json   one JSON object on stdout instead of text\n"
    "  Exit status: 0 shown (whatever the state), 2 usage error.\n";

static const char usage_cache_clear[] =
    "usage: ka cache clear\n"
    "  Removes every entry, temporary file and idle lock file libka made in the cache directory,\n"
    "  nothing else. Safe while other processes use the cache: their builds compile again.\n"
    "  Exit status: 0 cleared (or nothing to clear), 1 the directory is unusable or a file stayed,\n"
    "  2 usage error.\n";

static const char usage_version[] = "usage: ka version\n  Prints libka's version.\n";

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

static const char *cache_state_name(ka_cache_state s) {
    return s == KA_CACHE_ON ? "on" : s == KA_CACHE_OFF ? "off" : "unusable";
}

/* The cache's state as JSON (an object) or text (indented lines). */
static void print_cache(const ka_cache_info *ci, int json) {
    if (json) {
        printf("{\"dir\":");
        json_str(ci->dir);
        printf(",\"state\":\"%s\",\"reason\":", cache_state_name(ci->state));
        json_str(ci->reason);
        printf(",\"entries\":%llu,\"bytes\":%llu,\"max_bytes\":%llu,\"locks\":%llu,\"temps\":%llu}",
               (unsigned long long)ci->entries, (unsigned long long)ci->bytes, (unsigned long long)ci->max_bytes,
               (unsigned long long)ci->locks, (unsigned long long)ci->temps);
        return;
    }
    printf("  directory       %s\n", ci->dir[0] ? ci->dir : "(none)");
    printf("  state           %s%s%s\n", cache_state_name(ci->state), ci->reason[0] ? ": " : "", ci->reason);
    printf("  used            %llu entr%s, %llu bytes\n", (unsigned long long)ci->entries, ci->entries == 1 ? "y" : "ies",
           (unsigned long long)ci->bytes);
    if (ci->max_bytes) printf("  bound           %llu bytes (KA_CACHE_MAX_BYTES)\n", (unsigned long long)ci->max_bytes);
    else printf("  bound           none (KA_CACHE_MAX_BYTES=0)\n");
    printf("  lock files      %llu, temporary files %llu\n", (unsigned long long)ci->locks, (unsigned long long)ci->temps);
}

static bool host_listed(uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        ka_device_info d;
        if (ka_device_describe(i, &d) == KA_OK && d.backend == KA_BACKEND_HOST) return true;
    }
    return false;
}

static int cmd_info(int argc, char **argv) {
    static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    cli c;
    cli_init(&c, "ka info", usage_info, argc, argv, "h", lo);
    int json = 0;
    const char *arg;
    for (int r; (r = cli_next(&c, &arg)) != CLI_END;) {
        if (r == 'j') json = 1;
        else return cli_default(&c, r, arg);
    }
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
            printf(",\"backend\":\"%s\",\"name\":", ka_backend_name(d.backend));
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
            printf("  platform        %s (%s back-end)\n", d.platform, ka_backend_name(d.backend));
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
    ka_cache_info ci;
    ka_cache_get_info(&ci);
    if (json) {
        printf("],\"kernel_cache\":");
        print_cache(&ci, 1);
        printf("}\n");
    } else {
        /* The host back-end lists its device only where it finds a C
         * compiler; opening it gives libka's reason. */
        ka_device h;
        if (!host_listed(n) && ka_device_open("host", &h) != KA_OK) printf("\n[host] not listed: %s\n", ka_last_error());
        else if (!host_listed(n)) ka_device_close(h);
        printf("\nkernel cache\n");
        print_cache(&ci, 0);
    }
    return 0;
}

#define KA_BUILD_MAX_SOURCE ((size_t)16 << 20)

static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISFIFO(m) ? "a pipe" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* The kernel source in path, NUL-terminated, or NULL with the reason reported
 * on stderr: not a readable regular file, empty, over KA_BUILD_MAX_SOURCE, or
 * holding a NUL byte (not text: the source would be cut there). */
static char *read_source(const char *path) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; fstat on the
     * opened file, so what is checked is what is read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "ka build: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *s = NULL;
    size_t n = 0;
    if (fstat(fd, &st) != 0) {
        fprintf(stderr, "ka build: %s: %s\n", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "ka build: %s: %s, not a regular file of kernel source\n", path, file_kind(st.st_mode));
    } else if ((uint64_t)st.st_size > KA_BUILD_MAX_SOURCE) {
        fprintf(stderr, "ka build: %s: %llu bytes, over the 16 MiB limit of a kernel source\n", path,
                (unsigned long long)st.st_size);
    } else if (!(s = malloc(KA_BUILD_MAX_SOURCE + 1))) {
        fprintf(stderr, "ka build: %s: out of memory\n", path);
    } else {
        /* Read to the end, not to st_size: the file may change meanwhile. */
        for (ssize_t r; n <= KA_BUILD_MAX_SOURCE; n += (size_t)r) {
            r = read(fd, s + n, KA_BUILD_MAX_SOURCE + 1 - n);
            if (r == 0) break;
            if (r < 0 && errno == EINTR) r = 0;
            else if (r < 0) {
                fprintf(stderr, "ka build: %s: %s\n", path, strerror(errno));
                free(s);
                s = NULL;
                break;
            }
        }
        const char *nul = s ? memchr(s, 0, n) : NULL;
        if (!s) {
        } else if (n > KA_BUILD_MAX_SOURCE) {
            fprintf(stderr, "ka build: %s: over the 16 MiB limit of a kernel source\n", path);
        } else if (n == 0) {
            fprintf(stderr, "ka build: %s: empty file\n", path);
        } else if (nul) {
            fprintf(stderr, "ka build: %s: a NUL byte at offset %zu: not kernel source text\n", path,
                    (size_t)(nul - s));
        } else {
            s[n] = 0;
            close(fd);
            return s;
        }
        free(s);
        s = NULL;
    }
    close(fd);
    return NULL;
}

static int cmd_build(int argc, char **argv) {
    static const struct option lo[] = {{"device", required_argument, NULL, 'd'},
                                       {"options", required_argument, NULL, 'o'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    cli c;
    cli_init(&c, "ka build", usage_build, argc, argv, "hD:I:", lo);
    const char *file = NULL, *sel = NULL, *options = NULL;
    const char *defines[64], *incs[64];
    uint32_t nd = 0, ni = 0;
    const char *arg;
    for (int r; (r = cli_next(&c, &arg)) != CLI_END;) {
        switch (r) {
        case 'd': sel = arg; break;
        case 'o': options = arg; break;
        case 'D':
            if (!*arg) return cli_error(&c, "%s: empty define", c.name);
            if (nd == 64) return cli_error(&c, "%s %s: more than 64 defines", c.name, arg);
            defines[nd++] = arg;
            break;
        case 'I':
            if (!*arg) return cli_error(&c, "%s: empty include directory", c.name);
            if (ni == 64) return cli_error(&c, "%s %s: more than 64 include directories", c.name, arg);
            incs[ni++] = arg;
            break;
        case CLI_ARG:
            if (file) return cli_error(&c, "unexpected argument '%s' (FILE is '%s')", arg, file);
            file = arg;
            break;
        default: return cli_default(&c, r, arg);
        }
    }
    if (!file) return cli_error(&c, "no FILE to build");
    /* FILE is read here only for the usage checks (exit 2 before a device
     * opens); the build reads it as a user's program does: #include "..."
     * beside FILE, then the -I directories; the log names FILE. */
    char *src = read_source(file);
    if (!src) return KA_EXIT_USAGE;
    free(src);
    ka_device dev;
    if (cli_device_open(&c, sel, &dev)) return KA_EXIT_FAIL;
    const ka_device_info *di;
    ka_device_get_info(dev, &di);
    ka_program p;
    ka_build_options o = {.options = options, .defines = defines, .num_defines = nd, .include_dirs = incs,
                          .num_include_dirs = ni};
    ka_status st = ka_program_build_file(dev, file, &o, &p);
    if (st != KA_OK) {
        fprintf(stderr, "%s: build failed on %s: %s\n%s\n", file, di->name, ka_strerror(st), ka_last_error());
        ka_device_close(dev);
        return KA_EXIT_FAIL;
    }
    const char *warnings = "";
    if (ka_program_build_log(p, &warnings) == KA_OK && *warnings) fputs(warnings, stderr);
    printf("%s: built for %s (%s)\n", file, di->name, di->selector);
    ka_program_release(p);
    ka_device_close(dev);
    return 0;
}

static int cmd_run(int argc, char **argv) {
    static const struct option lo[] = {{"device", required_argument, NULL, 'd'},
                                       {"n", required_argument, NULL, 'n'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    cli c;
    cli_init(&c, "ka run", usage_run, argc, argv, "h", lo);
    const char *sel = NULL;
    uint64_t n = 1000003; /* a prime: not a multiple of any work-group size */
    const char *arg;
    for (int r; (r = cli_next(&c, &arg)) != CLI_END;) {
        switch (r) {
        case 'd': sel = arg; break;
        case 'n':
            if (cli_u64(&c, arg, 1, UINT32_MAX, &n)) return KA_EXIT_USAGE;
            break;
        default: return cli_default(&c, r, arg);
        }
    }
    /* Each buffer must fit the device before the host allocates its twin. */
    ka_device dev;
    const ka_device_info *di;
    if (cli_device_open(&c, sel, &dev)) return KA_EXIT_FAIL;
    ka_device_get_info(dev, &di);
    uint64_t bytes = n * sizeof(float);
    if (bytes > di->max_alloc_size) {
        fprintf(stderr, "ka run: --n %llu: a buffer of %llu bytes; the largest on %s (%s) is %llu bytes\n",
                (unsigned long long)n, (unsigned long long)bytes, di->name, di->selector,
                (unsigned long long)di->max_alloc_size);
        ka_device_close(dev);
        return KA_EXIT_FAIL;
    }
    ka_device_close(dev);
    return ka_run_saxpy(sel, (uint32_t)n) ? KA_EXIT_FAIL : 0;
}

static int cmd_cache_info(int argc, char **argv) {
    static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    cli c;
    cli_init(&c, "ka cache info", usage_cache_info, argc, argv, "h", lo);
    int json = 0;
    const char *arg;
    for (int r; (r = cli_next(&c, &arg)) != CLI_END;) {
        if (r == 'j') json = 1;
        else return cli_default(&c, r, arg);
    }
    ka_cache_info ci;
    if (ka_cache_get_info(&ci) != KA_OK) {
        fprintf(stderr, "ka cache info: %s\n", ka_last_error());
        return KA_EXIT_FAIL;
    }
    if (!json) printf("kernel cache\n");
    print_cache(&ci, json);
    if (json) printf("\n");
    return 0;
}

static int cmd_cache_clear(int argc, char **argv) {
    cli c;
    cli_init(&c, "ka cache clear", usage_cache_clear, argc, argv, "h", cli_help_only);
    int rc = cli_no_options(&c);
    if (rc >= 0) return rc;
    uint64_t removed = 0;
    ka_status st = ka_cache_clear(&removed);
    if (st != KA_OK) {
        fprintf(stderr, "ka cache clear: %s\n", ka_last_error());
        return KA_EXIT_FAIL;
    }
    ka_cache_info ci;
    ka_cache_get_info(&ci);
    printf("kernel cache %s: %llu file%s removed\n", ci.dir[0] ? ci.dir : "(none)", (unsigned long long)removed,
           removed == 1 ? "" : "s");
    return 0;
}

static int cmd_cache(int argc, char **argv) {
    static const cli_command cmds[] = {{"info", NULL, cmd_cache_info}, {"clear", NULL, cmd_cache_clear}};
    const cli_program prog = {"ka cache", "cache command", usage_cache, cmds, sizeof cmds / sizeof cmds[0]};
    return cli_dispatch(&prog, argc, argv);
}

static int cmd_version(int argc, char **argv) {
    cli c;
    cli_init(&c, "ka version", usage_version, argc, argv, "h", cli_help_only);
    int rc = cli_no_options(&c);
    if (rc >= 0) return rc;
    printf("libka %s\n", ka_version());
    return 0;
}

/* No summaries: usage_ka gives each command's synopsis instead. */
static const cli_command commands[] = {
    {"info", NULL, cmd_info}, {"build", NULL, cmd_build}, {"run", NULL, cmd_run}, {"cache", NULL, cmd_cache},
    {"version", NULL, cmd_version}};

int main(int argc, char **argv) {
    const cli_program prog = {"ka", "command", usage_ka, commands, sizeof commands / sizeof commands[0]};
    return cli_dispatch(&prog, argc, argv);
}
