/* The host back-end's two build steps: compile (source and options to the
 * shared object's bytes, or the compiler's log) and load (bytes to a module
 * whose entry points dlsym finds).
 *
 * Each step's files live in a directory of its own, made by mkdtemp (mode
 * 0700) under $TMPDIR and removed after: the compiler searches the source's
 * directory first for #include "...", and the object is loaded from a path,
 * so no other user may put a file in either.
 *
 * The compiler runs from an argument vector (no shell) in a process group of
 * its own, under ka__cc_limits: its address space and the size of each file
 * it writes (RLIMIT_AS, RLIMIT_FSIZE, set between vfork and exec), and a
 * deadline after which the whole group is killed. Its TMPDIR is the step's
 * directory. Its stdout and stderr come through a pipe, of which the first
 * LOG_KEEP bytes are kept. */
#define _GNU_SOURCE
#include "host_internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Most options a program's build may pass on (its -D and -I words). */
#define MAX_OPTS 64
/* The compiler's log kept for the error detail (8 KiB, error.c), leaving
 * room for the message before it. */
#define LOG_KEEP 6144
/* Without pidfd_open, how often the wait looks whether the compiler ended. */
#define POLL_MS 10

static const char *tmpdir(void) {
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* ---- the private directory ------------------------------------------------ */

/* Paths of PATH_CAP bytes: a directory's leaves room for a file's NAME_CAP. */
#define PATH_CAP 4096
#define NAME_CAP 16

/* A new directory $TMPDIR/libka-host-XXXXXX, mode 0700, into dir (PATH_CAP
 * bytes); 0 or the errno. */
static int make_dir(char *dir) {
    int n = snprintf(dir, PATH_CAP, "%s/libka-host-XXXXXX", tmpdir());
    if (n < 0 || n + NAME_CAP >= PATH_CAP) return ENAMETOOLONG;
    return mkdtemp(dir) ? 0 : errno;
}

/* dir/name into path (PATH_CAP bytes; dir from make_dir, name shorter than
 * NAME_CAP). */
static void file_in(char *path, const char *dir, const char *name) {
    size_t dl = strlen(dir), nl = strlen(name);
    memcpy(path, dir, dl);
    path[dl] = '/';
    memcpy(path + dl + 1, name, nl + 1);
}

/* Removes dir with the files in it (a compiler may leave some of its own). */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        for (struct dirent *e; (e = readdir(d));)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}

static bool write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

/* A new file at path holding n bytes of p; 0 or the errno. */
static int write_file(const char *path, const void *p, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write_all(fd, p, n);
    int e = ok ? 0 : errno ? errno : EIO;
    if (fd >= 0) close(fd);
    return e;
}

/* The whole file at path, ka__alloc'd; one over max bytes (0: any) is
 * refused before it is read. */
static ka_status read_file(const char *path, uint64_t max, void **out, size_t *n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return ka__fail(KA_ERR_BUILD_FAILED, "the compiler wrote no output (%s)", strerror(errno));
    }
    size_t size = (size_t)st.st_size;
    if (max && (uint64_t)st.st_size > max) {
        close(fd);
        return ka__fail(KA_ERR_BUILD_FAILED, "the compiler's output is %zu bytes, over its limit of %llu MiB "
                        "(KA_CC_MEMORY)", size, (unsigned long long)(max >> 20));
    }
    char *buf = ka__alloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for a %zu-byte object", size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != size) {
        ka__free(buf, size ? size : 1);
        return ka__fail(KA_ERR_IO, "reading the compiled object failed");
    }
    *out = buf;
    *n = size;
    return KA_OK;
}

/* ---- running the compiler ----------------------------------------------------- */

/* The compiler's output as read: the first LOG_KEEP bytes, and how many came. */
typedef struct ka__cclog {
    char text[LOG_KEEP + 1];
    size_t kept;
    uint64_t total;
} ka__cclog;

/* A child's running compiler: its pid (its process group's id too), the
 * read end of its output, a pidfd (-1 where the kernel has none). */
typedef struct ka__ccrun {
    pid_t pid;
    int out;
    int pidfd;
} ka__ccrun;

/* from onto the descriptor to, open across exec. */
static void move_fd(int from, int to) {
    if (from == to) fcntl(to, F_SETFD, 0);
    else dup2(from, to);
}

/* The child, between vfork and exec: system calls only, on the parent's
 * memory (as posix_spawn's child does; it cannot set limits): its own
 * process group, its output into the pipe, stdin from /dev/null, the
 * limits, then cc; an exec that fails writes its errno to st. vfork, not
 * fork: a large process's fork copies its page tables, and under strict
 * overcommit fails. */
/* AddressSanitizer's builds fork: a vfork child on the parent's stack
 * poisons and unpoisons its shadow, which the parent then misreads. */
#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_FORK() fork()
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPAWN_FORK() fork()
#endif
#endif
#ifndef SPAWN_FORK
#define SPAWN_FORK() vfork()
#endif

static __attribute__((noreturn)) void child_exec(const char *cc, char *const *argv, char *const *envp,
                                                 const ka__cc_limits *lim, int out, int st, const sigset_t *mask) {
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN) {
            sa.sa_handler = SIG_DFL;
            sa.sa_flags = 0;
            sigaction(sig, &sa, NULL);
        }
    }
    setpgid(0, 0);
    move_fd(out, 1);
    move_fd(out, 2);
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nul >= 0) move_fd(nul, 0);
    if (lim->memory_mib) {
        struct rlimit r = {(rlim_t)lim->memory_mib << 20, (rlim_t)lim->memory_mib << 20};
        setrlimit(RLIMIT_AS, &r);
        setrlimit(RLIMIT_FSIZE, &r);
    }
    sigprocmask(SIG_SETMASK, mask, NULL);
    execve(cc, argv, envp);
    int e = errno;
    if (write(st, &e, sizeof e) < 0) _exit(127);
    _exit(127);
}

static int pidfd_of(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

static void reap(pid_t pid, int *status) {
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
}

/* The compiler's environment: this process's, with TMPDIR set to dir, so
 * that the files the compiler makes for itself go there too, and are
 * removed with it even when it is killed. Its arrays are ka__alloc'd
 * (free_env). */
typedef struct ka__ccenv {
    char **vars;
    size_t nvars;
    char *tmp;                /* "TMPDIR=dir", tmp_size bytes */
    size_t tmp_size;
} ka__ccenv;

static void free_env(ka__ccenv *e) {
    if (e->vars) ka__free(e->vars, e->nvars * sizeof *e->vars);
    if (e->tmp) ka__free(e->tmp, e->tmp_size);
}

static ka_status make_env(const char *dir, ka__ccenv *e) {
    size_t n = 0;
    while (environ && environ[n]) n++;
    e->nvars = n + 2;
    e->tmp_size = strlen(dir) + 8;
    e->vars = ka__alloc(e->nvars * sizeof *e->vars);
    e->tmp = ka__alloc(e->tmp_size);
    if (!e->vars || !e->tmp) {
        free_env(e);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    memcpy(e->tmp, "TMPDIR=", 7);
    memcpy(e->tmp + 7, dir, e->tmp_size - 7);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "TMPDIR=", 7)) e->vars[k++] = environ[i];
    e->vars[k++] = e->tmp;
    e->vars[k] = NULL;
    return KA_OK;
}

/* Starts cc with argv and envp under lim into r; a failed exec is reported
 * here. */
static ka_status spawn(const char *cc, char *const *argv, char *const *envp, const ka__cc_limits *lim,
                       ka__ccrun *r) {
    int out[2], st[2];
    if (pipe2(out, O_CLOEXEC) != 0) return ka__fail(KA_ERR_IO, "pipe: %s", strerror(errno));
    if (pipe2(st, O_CLOEXEC) != 0) {
        int e = errno;
        close(out[0]);
        close(out[1]);
        return ka__fail(KA_ERR_IO, "pipe: %s", strerror(e));
    }
    /* No signal handler of the application may run in the child, on the
     * parent's memory: all blocked across the vfork, the child resets the
     * handled ones to their default before it unblocks them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = SPAWN_FORK();
    if (pid == 0) child_exec(cc, argv, envp, lim, out[1], st[1], &old);
    int fe = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(out[1]);
    close(st[1]);
    if (pid < 0) {
        close(out[0]);
        close(st[0]);
        return ka__fail(KA_ERR_BUILD_FAILED, "cannot start the C compiler '%s': vfork: %s", cc, strerror(fe));
    }
    setpgid(pid, pid); /* as the child does: whichever runs first makes the group */
    int e = 0;
    ssize_t n;
    while ((n = read(st[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(st[0]);
    if (n > 0) { /* the exec failed: the child has exited */
        int status;
        reap(pid, &status);
        close(out[0]);
        return ka__fail(KA_ERR_BUILD_FAILED, "cannot run the C compiler '%s': %s (set $KA_CC to a C compiler%s)", cc,
                        strerror(e), e == ENOMEM ? "; or raise KA_CC_MEMORY" : "");
    }
    r->pid = pid;
    r->out = out[0];
    r->pidfd = pidfd_of(pid);
    return KA_OK;
}

/* Reads what fd has now into lg (past LOG_KEEP only counted), at most 256
 * KiB a call, so a compiler that floods its log still meets its deadline;
 * false at its end. wait: block for the first read. */
static bool drain(int fd, ka__cclog *lg, bool wait) {
    for (int reads = 0; reads < 64; reads++) {
        struct pollfd p = {fd, POLLIN, 0};
        if (!wait && poll(&p, 1, 0) <= 0) return true;
        wait = false;
        char chunk[4096];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        size_t room = LOG_KEEP - lg->kept, k = (size_t)n < room ? (size_t)n : room;
        memcpy(lg->text + lg->kept, chunk, k);
        lg->kept += k;
        lg->total += (uint64_t)n;
    }
    return true;
}

/* Whether the child has ended (without reaping it: its pid stays its
 * group's until then). */
static bool ended(const ka__ccrun *r, const struct pollfd *pf) {
    if (r->pidfd >= 0) return pf->revents != 0;
    siginfo_t si;
    si.si_pid = 0;
    return waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == r->pid;
}

/* How a run ended: by itself, at its deadline, or when waiting for it
 * failed (errno in wait_errno). */
enum ka__ccend { KA__CC_ENDED, KA__CC_TIMED_OUT, KA__CC_WAIT_FAILED };

/* Waits for r's end, reading its output into lg, until deadline_ns (0:
 * none); then kills what is left of its process group and reaps it: how it
 * ended, and its wait status. */
static enum ka__ccend finish(ka__ccrun *r, int64_t deadline_ns, ka__cclog *lg, int *status, int *wait_errno) {
    bool open_out = true;
    enum ka__ccend how = KA__CC_ENDED;
    for (;;) {
        int ms = -1;
        if (deadline_ns) {
            int64_t left = deadline_ns - ka__now_ns();
            if (left <= 0) {
                how = KA__CC_TIMED_OUT;
                break;
            }
            ms = left / 1000000 >= 1000000 ? 1000000 : (int)(left / 1000000) + 1;
        }
        if (r->pidfd < 0 && (ms < 0 || ms > POLL_MS)) ms = POLL_MS;
        struct pollfd pf[2] = {{r->pidfd, POLLIN, 0}, {r->out, POLLIN, 0}};
        int n = poll(r->pidfd >= 0 ? pf : pf + 1, (nfds_t)((r->pidfd >= 0) + open_out), ms);
        if (n < 0 && errno != EINTR) {
            *wait_errno = errno;
            how = KA__CC_WAIT_FAILED;
            break;
        }
        if (open_out && pf[1].revents) open_out = drain(r->out, lg, true);
        if (ended(r, &pf[0])) break;
    }
    /* Whatever of the group is left (a timed-out compiler, or children its
     * driver left behind): the leader is not reaped yet, so the group's id
     * is not free to be reused. */
    kill(-r->pid, SIGKILL);
    reap(r->pid, status);
    if (open_out) drain(r->out, lg, false);
    close(r->out);
    if (r->pidfd >= 0) close(r->pidfd);
    return how;
}

/* Whether the compiler's log says it ran out of memory, or that a program
 * it ran was killed (GCC's driver: "Killed signal terminated program cc1"). */
static bool says_no_memory(const ka__cclog *lg) {
    static const char *const words[] = {"out of memory", "memory exhausted", "cannot allocate memory", "bad_alloc",
                                        "failed to map segment", "signal terminated program"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcasestr(lg->text, words[i])) return true;
    return false;
}

/* The detail of a failed run: why, the limit it may have reached, the log. */
static ka_status run_failed(const char *cc, const ka__cc_limits *lim, enum ka__ccend how, int wait_errno, int status,
                            ka__cclog *lg) {
    unsigned long long mib = (unsigned long long)lim->memory_mib;
    bool in_time = how == KA__CC_ENDED;
    ka_status st;
    if (how == KA__CC_TIMED_OUT)
        st = ka__fail(KA_ERR_BUILD_FAILED, "the C compiler '%s' did not finish within its time limit of %u s "
                      "(KA_CC_TIMEOUT): it was killed, with its process group", cc, lim->timeout_s);
    else if (how == KA__CC_WAIT_FAILED)
        st = ka__fail(KA_ERR_BUILD_FAILED, "waiting for the C compiler '%s' failed (%s): it was killed, with its "
                      "process group", cc, strerror(wait_errno));
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ)
        st = ka__fail(KA_ERR_BUILD_FAILED, "the C compiler '%s' was killed by signal %d: a file it wrote reached "
                      "its size limit of %llu MiB (KA_CC_MEMORY)", cc, SIGXFSZ, mib);
    else if (WIFSIGNALED(status))
        st = ka__fail(KA_ERR_BUILD_FAILED, "the C compiler '%s' was killed by signal %d", cc, WTERMSIG(status));
    else
        st = ka__fail(KA_ERR_BUILD_FAILED, "the C compiler '%s' failed (exit status %d)", cc,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    if (in_time && mib && (WIFSIGNALED(status) || says_no_memory(lg))) {
        char note[128];
        snprintf(note, sizeof note, " (it may have reached its memory limit of %llu MiB: KA_CC_MEMORY)", mib);
        ka__append_detail(note);
    }
    char head[128];
    if (lg->total > lg->kept)
        snprintf(head, sizeof head, "\nbuild log (its first %zu bytes of %llu; the rest cut):\n", lg->kept,
                 (unsigned long long)lg->total);
    else
        snprintf(head, sizeof head, "\nbuild log:\n");
    ka__append_detail(head);
    ka__append_detail(lg->kept ? lg->text : "(empty)");
    return st;
}

/* Runs cc with argv under lim, its TMPDIR dir: KA_OK when it exits with
 * status 0. */
static ka_status run_cc(const char *cc, char *const *argv, const char *dir, const ka__cc_limits *lim) {
    ka__ccenv env = {NULL, 0, NULL, 0};
    ka_status st = make_env(dir, &env);
    if (st != KA_OK) return st;
    ka__cclog *lg = ka__calloc(1, sizeof *lg);
    if (!lg) {
        free_env(&env);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    ka__ccrun r = {-1, -1, -1};
    st = spawn(cc, argv, env.vars, lim, &r);
    free_env(&env); /* the child has its copy: spawn returns after its exec */
    if (st == KA_OK) {
        int64_t deadline = lim->timeout_s ? ka__now_ns() + (int64_t)lim->timeout_s * 1000000000 : 0;
        int status = 0, wait_errno = 0;
        enum ka__ccend how = finish(&r, deadline, lg, &status, &wait_errno);
        if (how != KA__CC_ENDED || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            st = run_failed(cc, lim, how, wait_errno, status, lg);
    }
    ka__free(lg, sizeof *lg);
    return st;
}

/* The preprocessor's words of options (-D, -U, -I), split at blanks into
 * argv; the others are OpenCL compiler options (-cl-mad-enable, -w...) that
 * a C compiler does not take. Returns the count, or -1 past cap. */
static int split_opts(char *opts, char **argv, int cap) {
    int n = 0;
    bool value = false; /* this word is the value of a lone -D, -U or -I */
    for (char *s = opts; *s;) {
        while (*s == ' ' || *s == '\t' || *s == '\n') *s++ = 0;
        if (!*s) break;
        char *w = s;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n') s++;
        if (*s) *s++ = 0; /* the word ends here, so w[2] below is inside it */
        bool keep = value || (w[0] == '-' && (w[1] == 'D' || w[1] == 'U' || w[1] == 'I'));
        value = !value && keep && w[2] == 0 && (w[1] == 'D' || w[1] == 'U' || w[1] == 'I');
        if (!keep) continue;
        if (n == cap) return -1;
        argv[n++] = w;
    }
    return n;
}

/* Runs cc on source with options in a new private directory: the
 * preprocessed text (pre) or the shared object into *out (ka__alloc'd, *n
 * bytes). gcc: the compiler is GCC. */
static ka_status run(const ka__hdev *hd, const char *source, const char *options, bool pre, bool gcc, void **out,
                     size_t *n) {
    char dir[PATH_CAP], src_path[PATH_CAP], out_path[PATH_CAP];
    int e = make_dir(dir);
    if (e) return ka__fail(KA_ERR_IO, "cannot create a temporary directory in %s: %s", tmpdir(), strerror(e));
    file_in(src_path, dir, "source.c");
    file_in(out_path, dir, pre ? "scan.i" : "kernels.so");
    ka_status st = KA_OK;
    size_t olen = strlen(options) + 1;
    char *opts = ka__alloc(olen);
    if (!opts) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    memcpy(opts, options, olen);
    if ((e = write_file(src_path, source, strlen(source)))) {
        st = ka__fail(KA_ERR_IO, "writing %s failed: %s", src_path, strerror(e));
        goto out;
    }
    char lscratch[64];
    snprintf(lscratch, sizeof lscratch, "-DKA__LSCRATCH=%u", KA__HOST_LOCAL_MEM);
    /* -ffp-contract=off: a * b + c rounds twice, as OpenCL's and CUDA's
     * builds here do; -fno-math-errno lets sqrt vectorize; char is signed
     * as in the dialect. Warnings are left on, shown only with an error; a
     * call of an undeclared function (a misspelled built-in) is an error
     * naming its line, and -z defs makes any symbol left undefined one at
     * the link rather than at dlopen. */
    char *argv[24 + MAX_OPTS] = {(char *)hd->cc, "-std=gnu11", "-fsigned-char", "-Werror=implicit-function-declaration",
                                 lscratch};
    int argc = 5;
    static const char *const compile[] = {"-O3", "-march=native", "-fPIC", "-shared", "-ffp-contract=off",
                                          "-fno-math-errno", "-Wl,-z,defs"};
    if (pre) {
        argv[argc++] = "-E";
        argv[argc++] = "-P";
        argv[argc++] = "-DKA__SCAN";
    } else {
        for (size_t i = 0; i < sizeof compile / sizeof compile[0]; i++) argv[argc++] = (char *)compile[i];
        /* GCC 12.2 at -O3 with AVX2 miscompiles a loop of ka_reduce's kernel
         * (four accumulators, a stride known after inlining: wrong sums,
         * reproduced without libka); without PRE it is right, and saxpy and
         * stencil loops still vectorize. Clang has no such option. */
        if (gcc) argv[argc++] = "-fno-tree-pre";
    }
    int no = split_opts(opts, argv + argc, MAX_OPTS);
    if (no < 0) {
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "more than %d build options", MAX_OPTS);
        goto out;
    }
    argc += no;
    argv[argc++] = "-o";
    argv[argc++] = out_path;
    argv[argc++] = src_path;
    if (!pre) argv[argc++] = "-lm";
    argv[argc] = NULL;
    st = run_cc(hd->cc, argv, dir, &hd->lim);
    if (st == KA_OK) st = read_file(out_path, hd->lim.memory_mib << 20, out, n);
out:
    if (opts) ka__free(opts, olen);
    remove_dir(dir);
    return st;
}

ka_status ka__host_compile(const ka__hdev *hd, const ka__build *b, void **bin, size_t *n) {
    const ka__program *p = b->prog;
    const char *head = b->var->head;
    char *src;
    size_t len;
    ka_status st = ka__host_compose(head, p->source, NULL, p->name, &src, &len);
    if (st != KA_OK) return st;
    void *pre = NULL;
    size_t plen = 0;
    st = run(hd, src, b->options, true, false, &pre, &plen);
    ka__free(src, len);
    if (st != KA_OK) return st;
    /* The preprocessed text as a string: the read bytes plus a NUL. */
    char *text = ka__alloc(plen + 1);
    if (!text) {
        ka__free(pre, plen ? plen : 1);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    memcpy(text, pre, plen);
    text[plen] = 0;
    ka__free(pre, plen ? plen : 1);
    /* The scan pass's first marker: "ka__scan_cc 1" from clang, where
     * __clang__ is defined. */
    const char *m = strstr(text, "ka__scan_cc");
    bool gcc = m && strncmp(m + 11, " 1", 2) != 0;
    st = ka__host_compose(head, p->source, text, p->name, &src, &len);
    ka__free(text, plen + 1);
    if (st != KA_OK) return st;
    st = run(hd, src, b->options, false, gcc, bin, n);
    ka__free(src, len);
    return st;
}

ka_status ka__host_load(const ka__build *b, const void *bin, size_t n, ka__hprog **out) {
    ka__hprog *hp = ka__calloc(1, sizeof *hp);
    if (!hp) return ka__build_fail(b, KA_ERR_OUT_OF_MEMORY, "out of memory");
    char dir[PATH_CAP], path[PATH_CAP];
    ka_status st = KA_OK;
    int e = make_dir(dir);
    if (e) {
        st = ka__build_fail(b, KA_ERR_IO, "cannot create a temporary directory in %s: %s", tmpdir(), strerror(e));
    } else {
        file_in(path, dir, "kernels.so");
        if ((e = write_file(path, bin, n)))
            st = ka__build_fail(b, KA_ERR_IO, "writing %s failed: %s", path, strerror(e));
        else if (!(hp->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
            const char *why = dlerror();
            st = ka__build_fail(b, KA_ERR_BUILD_FAILED, "loading the compiled kernels failed: %s", why ? why : "?");
        }
        /* The mapping stays valid once loaded: the file is not needed. */
        remove_dir(dir);
    }
    if (st != KA_OK) {
        ka__free(hp, sizeof *hp);
        return st;
    }
    *out = hp;
    return KA_OK;
}
