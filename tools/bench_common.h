/* Shared helpers of the `ka` command: option parsing (every subcommand) and
 * the `ka bench` measurements. */
#ifndef KA_BENCH_COMMON_H
#define KA_BENCH_COMMON_H
#include <getopt.h>
#include <ka.h>
#include <stddef.h>
#include <stdint.h>

/* ---- option parsing --------------------------------------------------------
 * Every subcommand parses with getopt_long through cli_next: unknown options,
 * missing values and stray arguments are reported on stderr, naming the
 * option and the value, and make the command exit with KA_EXIT_USAGE. */
enum { KA_EXIT_FAIL = 1, KA_EXIT_USAGE = 2 };
enum { CLI_END = -1, CLI_ARG = 1, CLI_HELP = 'h', CLI_ERROR = '?' };

typedef struct cli {
    const char *cmd;   /* "ka run": starts every message */
    const char *usage; /* what --help prints */
    int argc;          /* argv[0] is the subcommand's name */
    char **argv;
    const struct option *longopts; /* must hold {"help", no_argument, NULL, 'h'} */
    char shortopts[64];            /* "-:" + the caller's */
    char name[64];                 /* the option being parsed, as "--n" or "-D" */
    int done;
} cli;

void cli_init(cli *c, const char *cmd, const char *usage, int argc, char **argv, const char *shortopts,
              const struct option *longopts);
/* The next option's val (its value in *arg when it takes one); CLI_ARG for
 * an argument that is not an option (in *arg); CLI_HELP for --help or -h;
 * CLI_END at the end; CLI_ERROR once a usage error has been reported. */
int cli_next(cli *c, const char **arg);
/* Prints "CMD: MESSAGE" and a pointer to --help on stderr; returns KA_EXIT_USAGE. */
int cli_error(const cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the usage on stdout; returns 0. */
int cli_help(const cli *c);
/* Strict unsigned integers: decimal, or hexadecimal after 0x; no sign, no
 * blanks, nothing after the digits; within [min, max]. 0 when *out is set,
 * else the error is reported (naming the current option and the value) and
 * the result is -1. */
int cli_u64(const cli *c, const char *value, uint64_t min, uint64_t max, uint64_t *out);
int cli_int(const cli *c, const char *value, int min, int max, int *out);
/* The most repetitions a benchmark takes (each keeps a few doubles). */
#define BENCH_MAX_REPS 100000

int64_t bench_now_ns(void);
double bench_median(double *v, int n);
double bench_min(const double *v, int n);
double bench_max(const double *v, int n);
/* Allocation counter installed through ka_set_allocator. */
void bench_count_allocs(int on);
uint64_t bench_allocs(void);

/* The raw OpenCL device behind an "opencl:N" selector (libka's flat order),
 * and the build options libka uses for it, so raw loops run the same code. */
struct _cl_device_id;
struct _cl_device_id *bench_cl_device(const char *selector);
const char *bench_cl_options(struct _cl_device_id *dev);

/* argv[0] is the subcommand's name ("launch"); the options follow. */
int bench_launch_main(int argc, char **argv);
int bench_wait_main(int argc, char **argv);
int bench_route_main(int argc, char **argv);
int bench_compile_main(int argc, char **argv);
int bench_saxpy_main(int argc, char **argv);
#endif
