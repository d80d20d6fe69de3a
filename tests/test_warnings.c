/* Warnings that mark a wrong answer or an ignored request reach stderr by
 * default, once per cause; a logger or KA_LOG=off silences them. Each case
 * runs in a child process (this program, run again with the case's name),
 * so each starts with no message printed yet, and its stderr is read whole:
 * - a kernel with KA_LOCAL arrays and no KA_WORKGROUP, launched twice over a
 *   small range: one line; a second such kernel: a second line; the same
 *   program built again (the same messages): nothing more;
 * - the same with KA_LOG=off, and with a logger set: nothing on stderr (the
 *   logger gets each);
 * - KA_TRACE naming a file it refuses (/dev/full): a line saying so;
 * - KA_TRACE_BUFFER malformed: a line saying it is ignored. */
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *src =
    "KA_KERNEL(sum_a, KA_GLOBAL float *out) {\n"
    "    KA_LOCAL float part[64];\n"
    "    part[ka_local_id(0)] = 1.0f;\n"
    "    ka_barrier();\n"
    "    if (ka_local_id(0) == 0) { float s = 0; for (int i = 0; i < 64; i++) s += part[i]; out[0] = s; }\n"
    "}\n"
    "KA_KERNEL(sum_b, KA_GLOBAL float *out) {\n"
    "    KA_LOCAL float part[32];\n"
    "    part[ka_local_id(0) % 32] = 1.0f;\n"
    "    ka_barrier();\n"
    "    if (ka_local_id(0) == 0) out[1] = part[0];\n"
    "}\n";

static int logged;
static void count_log(ka_log_level lvl, const char *msg, void *user) {
    (void)user;
    if (lvl == KA_LOG_WARN && strstr(msg, "no work-group size")) logged++;
}

/* ---- the children ---------------------------------------------------------- */
#define CHECK(call)                                                                 \
    do {                                                                            \
        ka_status s_ = (call);                                                      \
        if (s_ != KA_OK) {                                                          \
            printf("%s -> %s: %s\n", #call, ka_status_name(s_), ka_last_error());   \
            return 1;                                                               \
        }                                                                           \
    } while (0)

/* Builds src, launches both kernels twice over 7 items; `again`: then the
 * same with a second program built from the same source. */
static int child_local(bool again, bool logger) {
    if (logger) ka_set_logger(count_log, NULL);
    ka_device d;
    ka_queue q;
    ka_buffer b;
    CHECK(ka_device_open(NULL, &d));
    CHECK(ka_queue_create(d, NULL, &q));
    CHECK(ka_buffer_create(d, 64, &b));
    for (int p = 0; p < (again ? 2 : 1); p++) {
        ka_program prog;
        CHECK(ka_program_build(d, src, NULL, &prog));
        for (int i = 0; i < 4; i++) {
            ka_kernel k;
            CHECK(ka_kernel_get(prog, i % 2 ? "sum_b" : "sum_a", NULL, &k));
            ka_range r = {.dims = 1, .size = {7}};
            ka_arg a[] = {ka_arg_buffer(b)};
            CHECK(ka_launch(q, k, &r, a, 1, NULL));
        }
        CHECK(ka_queue_finish(q));
        CHECK(ka_program_release(prog));
    }
    CHECK(ka_buffer_release(b));
    CHECK(ka_queue_release(q));
    CHECK(ka_device_close(d));
    if (logger && logged != (again ? 4 : 2)) {
        printf("the logger got %d warnings\n", logged);
        return 1;
    }
    return 0;
}

static int child_open(void) {
    ka_device d;
    CHECK(ka_device_open(NULL, &d));
    ka_queue q;
    CHECK(ka_queue_create(d, NULL, &q));
    CHECK(ka_queue_release(q));
    CHECK(ka_device_close(d));
    return 0;
}

static int child(const char *name) {
    if (!strcmp(name, "local")) return child_local(false, false);
    if (!strcmp(name, "local_again")) return child_local(true, false);
    if (!strcmp(name, "local_logger")) return child_local(true, true);
    if (!strcmp(name, "open")) return child_open();
    printf("unknown case %s\n", name);
    return 2;
}

/* ---- the parent ------------------------------------------------------------ */
/* Runs this program as `child NAME` with the extra environment (NULL-ended
 * "NAME=VALUE" words), its stderr into err; its exit status. */
static int run_child(const char *name, const char *const *env, char *err, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/ka-test-warnings-%d.err", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    unlink(path);
    char *envp[256];
    size_t n = 0;
    for (char **e = environ; *e && n < 200; e++)
        if (strncmp(*e, "KA_LOG=", 7) && strncmp(*e, "KA_TRACE", 8) && strncmp(*e, "KA_DEBUG=", 9)) envp[n++] = *e;
    for (; env && *env; env++) envp[n++] = (char *)*env;
    envp[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    char *argv[] = {"/proc/self/exe", "child", (char *)name, NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp), 0);
    posix_spawn_file_actions_destroy(&fa);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) assert_int_equal(errno, EINTR);
    ssize_t got = pread(fd, err, cap - 1, 0);
    err[got > 0 ? got : 0] = 0;
    close(fd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Lines of text holding needle. */
static int lines_with(const char *text, const char *needle) {
    int n = 0;
    for (const char *l = text; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        const char *h = strstr(l, needle);
        if (h && h < l + len) n++;
        l += len + (e ? 1 : 0);
    }
    return n;
}

static char err[1 << 16];

static void expect_child(const char *name, const char *const *env) {
    int rc = run_child(name, env, err, sizeof err);
    if (rc) fail_msg("child %s: exit %d; stderr:\n%s", name, rc, err);
}

/* The null back-end reads no kernel's local memory: no such warning. */
static void skip_on_null(void) {
    ka_device d;
    const ka_device_info *di;
    KA_OK_OR_FAIL(ka_device_open(NULL, &d));
    KA_OK_OR_FAIL(ka_device_get_info(d, &di));
    bool null = di->backend == KA_BACKEND_NULL;
    KA_OK_OR_FAIL(ka_device_close(d));
    if (null) skip();
}

static void local_once_per_kernel(void **state) {
    (void)state;
    skip_on_null();
    expect_child("local", NULL);
    if (lines_with(err, "kernel 'sum_a' has 256 bytes of KA_LOCAL memory and no work-group size") != 1 ||
        lines_with(err, "kernel 'sum_b' has 128 bytes of KA_LOCAL memory and no work-group size") != 1)
        fail_msg("want one warning per kernel on stderr, got:\n%s", err);
    if (strncmp(err, "libka: ", 7)) fail_msg("stderr does not start with \"libka: \":\n%s", err);
    /* A second program with the same kernels: the same messages, not again. */
    expect_child("local_again", NULL);
    if (lines_with(err, "no work-group size") != 2) fail_msg("want the two warnings once each, got:\n%s", err);
}

static void silenced(void **state) {
    (void)state;
    skip_on_null();
    static const char *const off[] = {"KA_LOG=off", NULL};
    expect_child("local_again", off);
    if (lines_with(err, "libka: ")) fail_msg("KA_LOG=off, yet stderr has:\n%s", err);
    expect_child("local_logger", NULL); /* the logger got each (checked in the child) */
    if (lines_with(err, "libka: ")) fail_msg("a logger is set, yet stderr has:\n%s", err);
    static const char *const bad[] = {"KA_LOG=loud", NULL};
    expect_child("local", bad);
    if (lines_with(err, "KA_LOG='loud'") != 1 || lines_with(err, "no work-group size") != 2)
        fail_msg("KA_LOG=loud: want a line about it and the warnings, got:\n%s", err);
}

static void refused_requests(void **state) {
    (void)state;
    static const char *const full[] = {"KA_TRACE=/dev/full", NULL};
    expect_child("open", full);
    if (lines_with(err, "KA_TRACE: /dev/full") != 1) fail_msg("KA_TRACE=/dev/full: want one line, got:\n%s", err);
    char trace[128], tenv[160];
    snprintf(trace, sizeof trace, "/tmp/ka-test-warnings-%d.json", (int)getpid());
    snprintf(tenv, sizeof tenv, "KA_TRACE=%s", trace);
    const char *const buf[] = {tenv, "KA_TRACE_BUFFER=lots", NULL};
    expect_child("open", buf);
    unlink(trace);
    if (lines_with(err, "KA_TRACE_BUFFER='lots'") != 1) fail_msg("KA_TRACE_BUFFER=lots: want one line, got:\n%s", err);
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "child")) return child(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(local_once_per_kernel),
        cmocka_unit_test(silenced),
        cmocka_unit_test(refused_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
