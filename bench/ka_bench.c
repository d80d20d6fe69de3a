/* The `ka-bench` program: `ka-bench NAME [options]` runs the benchmark NAME of
 * bench_list.h. Exit status: 0 success; 1 a run-time failure; 2 a usage error. */
#include <stdio.h>
#include <string.h>

#include "bench_common.h"

static int cmd_list(int argc, char **argv);

static const cli_command commands[] = {
#define BENCH_ENTRY(name, entry, summary) {#name, summary, entry},
    BENCH_LIST(BENCH_ENTRY)
#undef BENCH_ENTRY
    {"list", "the benchmarks, one a line: name and summary", cmd_list},
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0], NBENCH = NCOMMANDS - 1 };

static int name_width(void) {
    int w = 0;
    for (int i = 0; i < NCOMMANDS; i++) w = (int)strlen(commands[i].name) > w ? (int)strlen(commands[i].name) : w;
    return w;
}

static char usage[4096];

static void make_usage(void) {
    size_t n = (size_t)snprintf(usage, sizeof usage,
                                "usage: ka-bench NAME [options]   (ka-bench NAME --help, or ka-bench help NAME, "
                                "for its options)\n");
    for (int i = 0; i < NCOMMANDS && n < sizeof usage; i++)
        n += (size_t)snprintf(usage + n, sizeof usage - n, "  %-*s  %s\n", name_width(), commands[i].name,
                              commands[i].summary);
    if (n < sizeof usage)
        snprintf(usage + n, sizeof usage - n, "%s",
                 CLI_DEVICES_HELP "Exit status: 0 success, 1 failure (no device, a failed call or check), 2 usage "
                                  "error.\n");
}

static const char usage_list[] = "usage: ka-bench list\n  Prints the benchmarks, one a line: name and summary.\n";

static int cmd_list(int argc, char **argv) {
    cli c;
    cli_init(&c, "ka-bench list", usage_list, argc, argv, "h", cli_help_only);
    int rc = cli_no_options(&c);
    if (rc >= 0) return rc;
    for (int i = 0; i < NBENCH; i++) printf("%-*s  %s\n", name_width(), commands[i].name, commands[i].summary);
    return fflush(stdout) ? KA_EXIT_FAIL : 0;
}

int main(int argc, char **argv) {
    make_usage();
    const cli_program prog = {"ka-bench", "benchmark", usage, commands, NCOMMANDS};
    return cli_dispatch(&prog, argc, argv);
}
