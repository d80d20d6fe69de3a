/* The `ka` and `ka-bench` programs' option handling (cli.h). */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct option cli_help_only[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};

void cli_init(cli *c, const char *cmd, const char *usage, int argc, char **argv, const char *shortopts,
              const struct option *longopts) {
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    c->usage = usage;
    c->argc = argc;
    c->argv = argv;
    c->longopts = longopts;
    /* '-': arguments that are not options come back in order (CLI_ARG), also
     * under POSIXLY_CORRECT; ':': a missing value is told from an unknown option. */
    snprintf(c->shortopts, sizeof c->shortopts, "-:%s", shortopts);
    opterr = 0; /* cli_next reports, naming the option */
    optind = 0; /* glibc: start afresh */
}

int cli_error(const cli *c, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", c->cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help'.\n", c->cmd);
    return KA_EXIT_USAGE;
}

int cli_help(const cli *c) {
    fputs(c->usage, stdout);
    return fflush(stdout) ? KA_EXIT_FAIL : 0;
}

/* How many long options start with the name in `given` ("--name[=value]"). */
static int long_matches(const cli *c, const char *given) {
    size_t len = strcspn(given + 2, "=");
    int n = 0;
    for (const struct option *o = c->longopts; o->name; o++) n += !strncmp(o->name, given + 2, len);
    return n;
}

int cli_next(cli *c, const char **arg) {
    *arg = NULL;
    if (c->done) { /* after "--": all that is left are arguments */
        if (optind >= c->argc) return CLI_END;
        *arg = c->argv[optind++];
        return CLI_ARG;
    }
    int li = -1;
    int r = getopt_long(c->argc, c->argv, c->shortopts, c->longopts, &li);
    const char *given = optind >= 1 && optind <= c->argc ? c->argv[optind - 1] : "";
    int is_long = !strncmp(given, "--", 2);
    int glen = (int)strcspn(given, "=");
    switch (r) {
    case -1:
        c->done = 1;
        return cli_next(c, arg);
    case 1:
        *arg = optarg;
        return CLI_ARG;
    case ':':
        if (is_long) return cli_error(c, "option '%.*s' needs a value", glen, given), CLI_ERROR;
        return cli_error(c, "option '-%c' needs a value", optopt), CLI_ERROR;
    case '?':
        if (is_long && optopt) return cli_error(c, "option '%.*s' takes no value", glen, given), CLI_ERROR;
        if (is_long && long_matches(c, given) > 1)
            return cli_error(c, "option '%.*s' is ambiguous", glen, given), CLI_ERROR;
        if (is_long || !optopt) return cli_error(c, "unknown option '%.*s'", glen, given), CLI_ERROR;
        return cli_error(c, "unknown option '-%c'", optopt), CLI_ERROR;
    default:
        if (li >= 0) snprintf(c->name, sizeof c->name, "--%s", c->longopts[li].name);
        else snprintf(c->name, sizeof c->name, "-%c", r);
        *arg = optarg;
        return r;
    }
}

int cli_u64(const cli *c, const char *v, uint64_t min, uint64_t max, uint64_t *out) {
    const char *why = NULL;
    unsigned long long x = 0;
    if (!v || !*v) {
        why = "is empty";
        v = "";
    } else if (v[0] == '-' && isdigit((unsigned char)v[1])) {
        why = "is negative";
    } else {
        int hex = v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
        const char *d = hex ? v + 2 : v, *p = d;
        while (hex ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p)) p++;
        if (p == d || *p) {
            why = "is not an integer";
        } else {
            char *end;
            errno = 0;
            x = strtoull(d, &end, hex ? 16 : 10);
            if (errno == ERANGE || *end || x < min || x > max) why = "is out of range";
        }
    }
    if (why) {
        cli_error(c, "%s: '%s' %s (expected an integer from %llu to %llu)", c->name, v, why, (unsigned long long)min,
                  (unsigned long long)max);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_int(const cli *c, const char *v, int min, int max, int *out) {
    uint64_t x;
    if (min < 0 || cli_u64(c, v, (uint64_t)min, (uint64_t)max, &x)) return -1;
    *out = (int)x;
    return 0;
}

int cli_default(const cli *c, int r, const char *arg) {
    if (r == CLI_HELP) return cli_help(c);
    if (r == CLI_ARG) return cli_error(c, "unexpected argument '%s'", arg);
    return KA_EXIT_USAGE; /* CLI_ERROR: already reported */
}

int cli_no_options(cli *c) {
    const char *arg;
    int r = cli_next(c, &arg);
    return r == CLI_END ? -1 : cli_default(c, r, arg);
}

int cli_device_open(const cli *c, const char *sel, ka_device *dev) {
    if (ka_device_open(sel, dev) == KA_OK) return 0;
    fprintf(stderr, "%s: %s\n", c->cmd, ka_last_error());
    return -1;
}

/* "a, b or c": the names of p's commands, for messages. */
static void command_names(const cli_program *p, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < p->ncmds && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i == 0 ? "" : i + 1 < p->ncmds ? ", " : " or ", p->cmds[i].name);
}

int cli_dispatch(const cli_program *p, int argc, char **argv) {
    cli c;
    cli_init(&c, p->name, p->usage, argc, argv, "h", cli_help_only);
    if (argc < 2) {
        fputs(p->usage, stderr);
        return KA_EXIT_USAGE;
    }
    const char *name = argv[1];
    char *hargv[4] = {NULL};
    if (!strcmp(name, "help")) { /* `PROG help NAME` is `PROG NAME --help` */
        if (argc == 2) return cli_help(&c);
        if (argc > 3) return cli_error(&c, "help: unexpected argument '%s'", argv[3]);
        hargv[0] = argv[0];
        hargv[1] = argv[2];
        hargv[2] = "--help";
        argc = 3;
        argv = hargv;
        name = argv[1];
    }
    for (size_t i = 0; i < p->ncmds; i++)
        if (!strcmp(name, p->cmds[i].name)) return p->cmds[i].main(argc - 1, argv + 1);
    char names[512];
    command_names(p, names, sizeof names);
    if (name[0] == '-') { /* --help, -h, or an unknown option before any NAME */
        int rc = cli_no_options(&c);
        return rc >= 0 ? rc : cli_error(&c, "no %s (%s)", p->what, names);
    }
    return cli_error(&c, "unknown %s '%s' (%s)", p->what, name, names);
}
