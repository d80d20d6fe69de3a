/* The host back-end's use of the system C compiler (issue 38): a header
 * planted in $TMPDIR is never compiled in, nor the object loaded from where
 * another user could write; the compiler runs under limits (a compiler that
 * hangs, an #include of a FIFO or of /dev/zero, a huge log, a huge output: a
 * clear KA_ERR_BUILD_FAILED naming the limit, nothing left running, nothing
 * read whole); the limits' variables are parsed strictly; a directory is
 * never taken for the compiler; standard headers can follow the prelude; a
 * misspelled built-in or an undefined function is a build error. With
 * --no-cc (ctest sets $KA_CC to no program), the host device is not listed
 * and opening it says why. Skipped when no C compiler is found. No case
 * depends on timing: the limits are what is checked, and a wait for killed
 * processes to be gone is bounded only against a hang. */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static ka_device g_dev;
static ka_queue g_q;

/* ---- the largest single allocation libka asks for -------------------------- */
static _Atomic size_t g_max_alloc;
static void *max_alloc(size_t n, void *u) {
    (void)u;
    size_t m = atomic_load(&g_max_alloc);
    while (n > m && !atomic_compare_exchange_weak(&g_max_alloc, &m, n)) {
    }
    return malloc(n);
}
static void max_free(void *p, size_t n, void *u) {
    (void)n;
    (void)u;
    free(p);
}

/* ---- environment and files ------------------------------------------------- */
/* name set to val (NULL: unset) until env_restore gives back what it was. */
typedef struct env_saved {
    const char *name;
    char *old;
} env_saved;
static env_saved env_set(const char *name, const char *val) {
    const char *o = getenv(name);
    env_saved s = {name, o ? strdup(o) : NULL};
    if (val) setenv(name, val, 1);
    else unsetenv(name);
    return s;
}
static void env_restore(env_saved *s) {
    if (s->old) setenv(s->name, s->old, 1);
    else unsetenv(s->name);
    free(s->old);
    s->old = NULL;
}

/* A new directory of the test's own into dir (64 bytes). */
static void make_dir(char *dir) {
    snprintf(dir, 64, "/tmp/ka-test-cc-XXXXXX");
    if (!mkdtemp(dir)) fail_msg("mkdtemp: %s", strerror(errno));
}
static void write_text(const char *dir, const char *name, const char *text, mode_t mode) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) fail_msg("writing %s: %s", path, strerror(errno));
    chmod(path, mode);
}
static void remove_tree(const char *dir) {
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}
/* The names in dir other than . and .., one string ("a b "). */
static void list_dir(const char *dir, char *out, size_t cap) {
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            snprintf(out + strlen(out), cap - strlen(out), "%s ", e->d_name);
    closedir(d);
}

/* ---- the fixture --------------------------------------------------------------- */
static int setup(void **state) {
    (void)state;
    if (ka_device_open("host", &g_dev) != KA_OK) {
        fprintf(stderr, "test_host_cc: no host device (%s): skipped\n", ka_last_error());
        return 0;
    }
    return ka_queue_create(g_dev, NULL, &g_q) == KA_OK ? 0 : -1;
}
static int teardown(void **state) {
    (void)state;
    if (!g_dev.id) return 0;
    ka_queue_release(g_q);
    return ka_device_close(g_dev) == KA_OK ? 0 : -1;
}
#define NEED_DEVICE() \
    do { if (!g_dev.id) skip(); } while (0)

/* out[0] of kernel "one" of p, run on dev. */
static int run_one(ka_device dev, ka_program p) {
    ka_queue q;
    KA_OK_OR_FAIL(ka_queue_create(dev, NULL, &q));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "one", NULL, &k));
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create_zeroed(dev, sizeof(int), &b));
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_OK_OR_FAIL(ka_launch(q, k, &(ka_range){.dims = 1, .size = {1}}, a, 1, NULL));
    int v = -1;
    KA_OK_OR_FAIL(ka_buffer_read(q, &v, b, 0, sizeof v));
    ka_buffer_release(b);
    ka_queue_release(q);
    return v;
}

static const char *xh_src = "#include \"x.h\"\n"
                            "KA_KERNEL(one, KA_GLOBAL int *out) { if (ka_in_range()) out[0] = XV; }\n";

/* Whether a file under dir/ is mapped into this process, and none right in dir. */
static bool mapped_below(const char *dir, bool *direct) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    size_t n = strlen(dir);
    bool any = false;
    *direct = false;
    while (f && fgets(line, sizeof line, f)) {
        const char *p = strchr(line, '/');
        if (!p || strncmp(p, dir, n) || p[n] != '/') continue;
        any = true;
        *direct |= strchr(p + n + 1, '/') == NULL;
    }
    if (f) fclose(f);
    return any;
}

/* Item 1: an x.h in $TMPDIR that would change the result, the real one in
 * include_dirs (and, for a file, in the file's directory): the real one is
 * used. The loaded object lies in a directory of its own under $TMPDIR,
 * and nothing is left in $TMPDIR after. */
static void test_tmpdir_header(void **state) {
    (void)state;
    NEED_DEVICE();
    char tmp[64], inc[64], fdir[64];
    make_dir(tmp);
    make_dir(inc);
    make_dir(fdir);
    write_text(tmp, "x.h", "#define XV 666\n", 0644);
    write_text(inc, "x.h", "#define XV 42\n", 0644);
    write_text(fdir, "x.h", "#define XV 7\n", 0644);
    write_text(fdir, "k.c", xh_src, 0644);
    env_saved t = env_set("TMPDIR", tmp);
    const char *incs[] = {inc};
    ka_build_options o = {.include_dirs = incs, .num_include_dirs = 1};
    ka_program p, pf;
    KA_OK_OR_FAIL(ka_program_build(g_dev, xh_src, &o, &p));
    assert_int_equal(run_one(g_dev, p), 42);
    char path[128];
    snprintf(path, sizeof path, "%s/k.c", fdir);
    KA_OK_OR_FAIL(ka_program_build_file(g_dev, path, &o, &pf));
    assert_int_equal(run_one(g_dev, pf), 7);
    bool direct;
    if (!mapped_below(tmp, &direct)) fail_msg("no loaded object under $TMPDIR %s", tmp);
    if (direct) fail_msg("a loaded object lies right in $TMPDIR %s, not in a directory of its own", tmp);
    ka_program_release(p);
    ka_program_release(pf);
    env_restore(&t);
    char left[512];
    list_dir(tmp, left, sizeof left);
    if (strcmp(left, "x.h ")) fail_msg("left in $TMPDIR: %s", left);
    remove_tree(tmp);
    remove_tree(inc);
    remove_tree(fdir);
}

/* Whether a process of group pgid is alive (a zombie is not), from /proc. */
static bool group_alive(long pgid) {
    DIR *d = opendir("/proc");
    bool alive = false;
    for (struct dirent *e; d && !alive && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%.256s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *c = strrchr(buf, ')'); /* "pid (comm) S ppid pgrp ..." */
        char st;
        long ppid, pgrp;
        if (c && sscanf(c + 1, " %c %ld %ld", &st, &ppid, &pgrp) == 3 && pgrp == pgid && st != 'Z' && st != 'X')
            alive = true;
    }
    if (d) closedir(d);
    return alive;
}

/* A host device opened with KA_CC=cc (NULL: as it is), KA_CC_TIMEOUT and
 * KA_CC_MEMORY as given (NULL: unset). */
static ka_device open_with(const char *cc, const char *timeout, const char *memory) {
    env_saved c = {NULL, NULL}, t = env_set("KA_CC_TIMEOUT", timeout), m = env_set("KA_CC_MEMORY", memory);
    if (cc) c = env_set("KA_CC", cc);
    ka_device d;
    KA_OK_OR_FAIL(ka_device_open("host", &d));
    if (cc) env_restore(&c);
    env_restore(&t);
    env_restore(&m);
    return d;
}

/* Item 3: a compiler that never ends, under a 1 s limit: the build fails
 * naming the limit, and the compiler's process group (it and the child it
 * started) is gone. */
static bool cmdline_alive(const char *text);

static void test_cc_timeout(void **state) {
    (void)state;
    NEED_DEVICE();
    char dir[64], tmp[64], script[512];
    make_dir(dir);
    make_dir(tmp);
    /* a file of its own in its TMPDIR, as GCC's driver makes, then no end */
    snprintf(script, sizeof script, "#!/bin/sh\necho $$ > %s/pgid\ntouch \"$TMPDIR/cc-own.s\"\nsleep 600 &\nsleep 600\n",
             dir);
    write_text(dir, "cc.sh", script, 0755);
    char cc[128];
    snprintf(cc, sizeof cc, "%s/cc.sh", dir);
    ka_device d = open_with(cc, "1", NULL);
    env_saved t = env_set("TMPDIR", tmp);
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(d, "KA_KERNEL_NOARGS(k) {}\n", NULL, &p));
    EXPECT_DETAIL("cc.sh", "time limit of 1 s", "KA_CC_TIMEOUT", "killed");
    env_restore(&t);
    char left[512];
    list_dir(tmp, left, sizeof left);
    if (left[0]) fail_msg("left in $TMPDIR by the killed compiler: %s", left);
    remove_tree(tmp);
    char path[128];
    snprintf(path, sizeof path, "%s/pgid", dir);
    FILE *f = fopen(path, "r");
    long pgid = 0;
    if (f && fscanf(f, "%ld", &pgid) == 1 && pgid > 1) {
        /* SIGKILL ends them at their next scheduling: bounded only against a hang. */
        for (int i = 0; i < 6000 && group_alive(pgid); i++) sleep_ms(10);
        if (group_alive(pgid)) fail_msg("a process of the compiler's group %ld is still alive", pgid);
    } else {
        /* A machine so loaded that the shell was killed before its first line:
         * then no child was started, and the shell itself must be gone. */
        for (int i = 0; i < 6000 && cmdline_alive(dir); i++) sleep_ms(10);
        if (cmdline_alive(dir)) fail_msg("the compiler script %s is still alive", cc);
    }
    if (f) fclose(f);
    KA_OK_OR_FAIL(ka_device_close(d));
    remove_tree(dir);
}

/* Whether a live process has text in its command line, from /proc. */
static bool cmdline_alive(const char *text) {
    DIR *d = opendir("/proc");
    bool alive = false;
    for (struct dirent *e; d && !alive && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], buf[4096], st[512];
        snprintf(path, sizeof path, "/proc/%.256s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++) buf[i] = buf[i] ? buf[i] : ' ';
        buf[n] = 0;
        if (!strstr(buf, text)) continue;
        snprintf(path, sizeof path, "/proc/%.256s/stat", e->d_name);
        f = fopen(path, "r");
        n = f ? fread(st, 1, sizeof st - 1, f) : 0;
        if (f) fclose(f);
        st[n] = 0;
        const char *c = strrchr(st, ')');
        alive = c && c[1] == ' ' && c[2] != 'Z' && c[2] != 'X';
    }
    if (d) closedir(d);
    return alive;
}

/* Item 3: a kernel that includes a FIFO (the compiler waits for a writer
 * forever) fails within the time limit, and leaves no compiler behind (its
 * files' directory is under this test's $TMPDIR: no live process names it). */
static void test_cc_fifo(void **state) {
    (void)state;
    NEED_DEVICE();
    char dir[64], tmp[64], fifo[128], src[256];
    make_dir(dir);
    make_dir(tmp);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    if (mkfifo(fifo, 0600) != 0) fail_msg("mkfifo: %s", strerror(errno));
    snprintf(src, sizeof src, "#include \"%s\"\nKA_KERNEL_NOARGS(k) {}\n", fifo);
    ka_device d = open_with(NULL, "1", NULL);
    env_saved t = env_set("TMPDIR", tmp);
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(d, src, NULL, &p));
    EXPECT_DETAIL("time limit of 1 s", "KA_CC_TIMEOUT");
    env_restore(&t);
    /* SIGKILL ends them at their next scheduling: bounded only against a hang. */
    for (int i = 0; i < 6000 && cmdline_alive(tmp); i++) sleep_ms(10);
    if (cmdline_alive(tmp)) fail_msg("a compiler process working in %s is still alive", tmp);
    KA_OK_OR_FAIL(ka_device_close(d));
    remove_tree(dir);
    remove_tree(tmp);
}

/* Whether the host compiler is clang (a build that fails only there). */
static bool cc_is_clang(ka_device d) {
    ka_program p;
    ka_status st = ka_program_build(d, "#ifdef __clang__\n#error this is clang\n#endif\nKA_KERNEL_NOARGS(k) {}\n", NULL, &p);
    if (st == KA_OK) ka_program_release(p);
    return st != KA_OK && strstr(ka_last_error(), "this is clang");
}

/* Item 3: #include "/dev/zero" under a memory limit of 256 MiB: GCC's
 * preprocessor reads the device until the limit stops it, and the build
 * fails naming the memory limit (the time limit is the backstop and is not
 * what ends it). Clang reads a device as an empty file: the build succeeds,
 * nothing to bound. */
static void test_cc_dev_zero(void **state) {
    (void)state;
    NEED_DEVICE();
    ka_device d = open_with(NULL, "120", "256");
    bool clang = cc_is_clang(d);
    ka_program p;
    ka_status st = ka_program_build(d, "#include \"/dev/zero\"\nKA_KERNEL_NOARGS(k) {}\n", NULL, &p);
    if (clang) {
        if (st != KA_OK) fail_msg("clang: %s", ka_last_error());
        ka_program_release(p);
    } else {
        if (st != KA_ERR_BUILD_FAILED) fail_msg("-> %s, want KA_ERR_BUILD_FAILED: %s", ka_status_name(st), ka_last_error());
        EXPECT_DETAIL("memory limit of 256 MiB", "KA_CC_MEMORY");
        if (strstr(ka_last_error(), "time limit")) fail_msg("the time limit ended it: %s", ka_last_error());
    }
    KA_OK_OR_FAIL(ka_device_close(d));
}

/* Item 3: a compiler that writes 100 MB to its stderr and fails: the detail
 * keeps the log's start, says how much was cut, and stays within the 8 KiB
 * of an error detail. */
static void test_cc_huge_log(void **state) {
    (void)state;
    NEED_DEVICE();
    char dir[64], cc[128];
    make_dir(dir);
    write_text(dir, "cc.sh", "#!/bin/sh\nhead -c 104857600 /dev/zero | tr '\\000' x >&2\nexit 3\n", 0755);
    snprintf(cc, sizeof cc, "%s/cc.sh", dir);
    ka_device d = open_with(cc, NULL, NULL);
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(d, "KA_KERNEL_NOARGS(k) {}\n", NULL, &p));
    EXPECT_DETAIL("exit status 3", "build log (its first ", " bytes of 104857600; the rest cut)", "xxxxxxxx");
    assert_true(strlen(ka_last_error()) < 8192);
    KA_OK_OR_FAIL(ka_device_close(d));
    remove_tree(dir);
}

/* Item 3: a compiler that writes 100 MB as its output, under a limit of 64
 * MiB: the file stops at the limit (the compiler is killed, the build names
 * the limit) and libka never reads it whole. */
static void test_cc_huge_output(void **state) {
    (void)state;
    NEED_DEVICE();
    char dir[64], cc[128];
    make_dir(dir);
    write_text(dir, "cc.sh",
               "#!/bin/sh\nwhile [ $# -gt 1 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
               "exec head -c 104857600 /dev/zero > \"$out\"\n",
               0755);
    snprintf(cc, sizeof cc, "%s/cc.sh", dir);
    ka_device d = open_with(cc, NULL, "64");
    atomic_store(&g_max_alloc, 0);
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(d, "KA_KERNEL_NOARGS(k) {}\n", NULL, &p));
    EXPECT_DETAIL("size limit of 64 MiB", "KA_CC_MEMORY");
    size_t most = atomic_load(&g_max_alloc);
    if (most >= ((size_t)64 << 20)) fail_msg("libka allocated %zu bytes at once", most);
    KA_OK_OR_FAIL(ka_device_close(d));
    remove_tree(dir);
}

/* The soft and hard values of a line of /proc/<pid>/limits in text ("Max
 * address space   104857600   104857600   bytes"); false when absent. */
static bool limit_in(const char *text, const char *what, unsigned long long *soft, unsigned long long *hard) {
    const char *l = strstr(text, what);
    return l && sscanf(l + strlen(what), "%llu %llu", soft, hard) == 2;
}

/* Item 3: the compiler runs under the limits: a compiler that shows its own
 * (/proc/self/limits) has KA_CC_MEMORY's for its address space and the
 * files it writes, runs in a process group of its own, and its TMPDIR is
 * the build's private directory in $TMPDIR. */
static void test_cc_limits_applied(void **state) {
    (void)state;
    NEED_DEVICE();
    char dir[64], cc[128];
    make_dir(dir);
    write_text(dir, "cc.sh",
               "#!/bin/sh\ncat /proc/self/limits >&2\necho \"group $(cut -d' ' -f5 /proc/$$/stat) pid $$\" >&2\n"
               "echo \"tmp $TMPDIR $(stat -c %a \"$TMPDIR\")\" >&2\nexit 1\n",
               0755);
    snprintf(cc, sizeof cc, "%s/cc.sh", dir);
    ka_device d = open_with(cc, NULL, "100");
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(d, "KA_KERNEL_NOARGS(k) {}\n", NULL, &p));
    unsigned long long as[2], fs[2], want = 100ull << 20;
    if (!limit_in(ka_last_error(), "Max address space", &as[0], &as[1]) ||
        !limit_in(ka_last_error(), "Max file size", &fs[0], &fs[1]))
        fail_msg("no limits in the log: %s", ka_last_error());
    if (as[0] != want || as[1] != want || fs[0] != want || fs[1] != want)
        fail_msg("address space %llu/%llu, file size %llu/%llu, want %llu", as[0], as[1], fs[0], fs[1], want);
    const char *g = strstr(ka_last_error(), "group ");
    long grp = 0, pid = -1;
    if (!g || sscanf(g, "group %ld pid %ld", &grp, &pid) != 2 || grp != pid)
        fail_msg("the compiler is not its process group's leader: %s", g ? g : ka_last_error());
    const char *base = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char want_tmp[256];
    snprintf(want_tmp, sizeof want_tmp, "tmp %s/libka-host-", base);
    const char *tl = strstr(ka_last_error(), want_tmp);
    if (!tl || !strstr(tl, " 700\n")) fail_msg("the compiler's TMPDIR is not a private directory in %s: %s", base,
                                               tl ? tl : ka_last_error());
    KA_OK_OR_FAIL(ka_device_close(d));
    remove_tree(dir);
}

/* Item 3: KA_CC_TIMEOUT and KA_CC_MEMORY take plain decimal numbers (0: no
 * limit); anything else is a clear error at open. */
static void test_cc_limit_values(void **state) {
    (void)state;
    NEED_DEVICE();
    static const char *const bad[] = {"abc", "-1", "+5", " 5", "5 ", "5s", "1e3", "0x10", "99999999999999999999999"};
    static const char *const names[] = {"KA_CC_TIMEOUT", "KA_CC_MEMORY"};
    ka_device d;
    for (int v = 0; v < 2; v++) {
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            env_saved s = env_set(names[v], bad[i]);
            KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_device_open("host", &d));
            EXPECT_DETAIL(names[v], bad[i]);
            env_restore(&s);
        }
        env_saved s = env_set(names[v], v ? "16777217" : "1000001");
        KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_device_open("host", &d));
        env_restore(&s);
    }
    d = open_with(NULL, "0", "0"); /* no limits */
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(d, "KA_KERNEL(one, KA_GLOBAL int *out) { if (ka_in_range()) out[0] = 5; }\n", NULL, &p));
    assert_int_equal(run_one(d, p), 5);
    ka_program_release(p);
    KA_OK_OR_FAIL(ka_device_close(d));
}

/* Item 11: a directory is not a compiler: $KA_CC naming one is refused at
 * open, and a directory named cc early on PATH is passed over. */
static void test_cc_directory(void **state) {
    (void)state;
    NEED_DEVICE();
    char dir[64], sub[128], path[4096];
    make_dir(dir);
    env_saved c = env_set("KA_CC", dir);
    ka_device d;
    KA_EXPECT(KA_ERR_BACKEND_UNAVAILABLE, ka_device_open("host", &d));
    EXPECT_DETAIL("$KA_CC", dir, "not an executable program");
    env_restore(&c);
    snprintf(sub, sizeof sub, "%s/cc", dir);
    if (mkdir(sub, 0755) != 0) fail_msg("mkdir: %s", strerror(errno));
    const char *old = getenv("PATH");
    snprintf(path, sizeof path, "%s:%s", dir, old ? old : "/usr/bin:/bin");
    env_saved pa = env_set("PATH", path), cu = env_set("KA_CC", NULL);
    KA_OK_OR_FAIL(ka_device_open("host", &d));
    env_restore(&pa);
    env_restore(&cu);
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(d, "KA_KERNEL(one, KA_GLOBAL int *out) { if (ka_in_range()) out[0] = 9; }\n", NULL, &p));
    assert_int_equal(run_one(d, p), 9);
    ka_program_release(p);
    KA_OK_OR_FAIL(ka_device_close(d));
    remove_tree(dir);
}

/* Item 11: the common standard headers after the prelude, and the dialect's
 * select() still OpenCL's after <stdlib.h> declared POSIX select(2). */
static void test_std_headers(void **state) {
    (void)state;
    NEED_DEVICE();
    const char *s = "#include <stdlib.h>\n#include <math.h>\n#include <string.h>\n#include <stdint.h>\n"
                    "#include <stdio.h>\n#include <stddef.h>\n#include <limits.h>\n#include <float.h>\n"
                    "KA_KERNEL(one, KA_GLOBAL int *out) {\n"
                    "    if (!ka_in_range()) return;\n"
                    "    int32_t v = abs(-3) + (int)strlen(\"ab\") + (int)sqrt(16.0) + select(10, 20, 1);\n"
                    "    out[0] = v;\n"
                    "}\n";
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, s, NULL, &p));
    assert_int_equal(run_one(g_dev, p), 3 + 2 + 4 + 20);
    ka_program_release(p);
}

/* Item 11: a misspelled built-in is a compile error naming the user's line
 * (not an undefined symbol at load); a function declared and never defined
 * fails at the link, in the build log. */
static void test_undefined_names(void **state) {
    (void)state;
    NEED_DEVICE();
    ka_program p;
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev,
                                                    "KA_KERNEL(bad, KA_GLOBAL int *a) {\n"
                                                    "    if (!ka_in_range()) return;\n"
                                                    "    a[ka_global_idx(0)] = 1;\n"
                                                    "}\n",
                                                    NULL, &p));
    EXPECT_DETAIL("build log", "program:3:", "ka_global_idx");
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev,
                                                    "int helper_nowhere(int);\n"
                                                    "KA_KERNEL(bad, KA_GLOBAL int *a) {\n"
                                                    "    if (ka_in_range()) a[0] = helper_nowhere(1);\n"
                                                    "}\n",
                                                    NULL, &p));
    EXPECT_DETAIL("build log", "helper_nowhere");
    if (strstr(ka_last_error(), "loading the compiled kernels"))
        fail_msg("an undefined function found at load, not at the build: %s", ka_last_error());
}

/* --no-cc: $KA_CC names no program from the start (ctest's environment):
 * the host device is not listed, and opening it says why. */
static void test_no_cc(void **state) {
    (void)state;
    const char *cc = getenv("KA_CC");
    if (!cc) fail_msg("--no-cc wants $KA_CC set to a path of no program");
    uint32_t n;
    KA_OK_OR_FAIL(ka_device_count(&n));
    for (uint32_t i = 0; i < n; i++) {
        ka_device_info di;
        KA_OK_OR_FAIL(ka_device_describe(i, &di));
        assert_int_not_equal(di.backend, KA_BACKEND_HOST);
    }
    static const char *const sels[] = {"host", "host:0"};
    ka_device d;
    for (int i = 0; i < 2; i++) {
        KA_EXPECT(KA_ERR_BACKEND_UNAVAILABLE, ka_device_open(sels[i], &d));
        EXPECT_DETAIL("ka_device_open: ", "$KA_CC", cc, "not an executable program");
    }
    env_saved s = env_set("KA_DEVICE", "host");
    KA_EXPECT(KA_ERR_BACKEND_UNAVAILABLE, ka_device_open(NULL, &d));
    EXPECT_DETAIL("$KA_CC", cc);
    env_restore(&s);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--no-cc")) {
        const struct CMUnitTest t[] = {cmocka_unit_test(test_no_cc)};
        return cmocka_run_group_tests(t, NULL, NULL);
    }
    static const ka_allocator a = {max_alloc, max_free, NULL};
    ka_set_allocator(&a);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tmpdir_header), cmocka_unit_test(test_cc_timeout),
        cmocka_unit_test(test_cc_fifo),       cmocka_unit_test(test_cc_dev_zero),
        cmocka_unit_test(test_cc_huge_log),   cmocka_unit_test(test_cc_huge_output),
        cmocka_unit_test(test_cc_limits_applied), cmocka_unit_test(test_cc_limit_values),
        cmocka_unit_test(test_cc_directory),
        cmocka_unit_test(test_std_headers),   cmocka_unit_test(test_undefined_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
