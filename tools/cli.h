/* Option handling shared by the `ka` and `ka-bench` programs: getopt_long
 * through one strict parser, subcommand dispatch, device opening. Usage
 * errors are reported on stderr, naming the option and the value, and make
 * the program exit with KA_EXIT_USAGE. */
#ifndef KA_CLI_H
#define KA_CLI_H
#include <getopt.h>
#include <ka.h>
#include <stddef.h>
#include <stdint.h>

enum { KA_EXIT_FAIL = 1, KA_EXIT_USAGE = 2 };
enum { CLI_END = -1, CLI_ARG = 1, CLI_HELP = 'h', CLI_ERROR = '?' };

/* How a SEL of --device is read; both programs' usage texts end with it. */
#define CLI_DEVICES_HELP                                                                        \
    "Devices: SEL is \"opencl:N\", \"cuda:N\", \"pocl\", \"null\" or a name substring; the default is\n" \
    "$KA_DEVICE, else PoCL's CPU device.\n"

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

/* The long options of a command whose only option is --help. */
extern const struct option cli_help_only[];

void cli_init(cli *c, const char *cmd, const char *usage, int argc, char **argv, const char *shortopts,
              const struct option *longopts);
/* The next option's val (its value in *arg when it takes one); CLI_ARG for
 * an argument that is not an option (in *arg); CLI_HELP for --help or -h;
 * CLI_END at the end; CLI_ERROR once a usage error has been reported. */
int cli_next(cli *c, const char **arg);
/* What a command does with a result of cli_next that none of its options
 * takes (the `default:` of its switch): CLI_HELP prints the usage, CLI_ARG is
 * an unexpected argument, CLI_ERROR was reported. Returns the exit status. */
int cli_default(const cli *c, int r, const char *arg);
/* For a command whose only option is --help: -1 to go on, else the exit status. */
int cli_no_options(cli *c);
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

/* ka_device_open(sel), a failure reported as "CMD: <ka_last_error()>"; 0 or -1. */
int cli_device_open(const cli *c, const char *sel, ka_device *dev);

/* A program made of subcommands: argv[1] names one of cmds. */
typedef struct cli_command {
    const char *name;
    const char *summary;                /* one line, for usage texts made from a table */
    int (*main)(int argc, char **argv); /* argv[0] is the name; the options follow */
} cli_command;

typedef struct cli_program {
    const char *name;  /* "ka-bench" */
    const char *what;  /* what argv[1] names, for messages: "command", "benchmark" */
    const char *usage; /* `PROG --help`; on stderr when argv[1] is missing */
    const cli_command *cmds;
    size_t ncmds;
} cli_program;

/* Runs the subcommand argv[1] names. `PROG help [NAME]` is `PROG [NAME] --help`;
 * `PROG --help` prints the usage; anything else is a usage error. */
int cli_dispatch(const cli_program *p, int argc, char **argv);
#endif
