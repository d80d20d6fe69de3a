/* The host back-end's two build steps: compile (source and options to the
 * shared object's bytes, or the compiler's log) and load (bytes to a module
 * whose entry points dlsym finds). The compiler runs through posix_spawn with
 * an argument vector (no shell): it reads the source from a temporary file
 * and writes the object to another, both under $TMPDIR and removed after. */
#define _GNU_SOURCE
#include "host_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Most options a program's build may pass on (its -D and -I words). */
#define MAX_OPTS 64
/* The compiler's log kept for the error detail. */
#define LOG_MAX 16384

static const char *tmpdir(void) {
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* A new empty file from a mkstemps template; -1 with the detail set. */
static int make_temp(char *path, size_t cap, const char *suffix) {
    int n = snprintf(path, cap, "%s/libka-host-XXXXXX%s", tmpdir(), suffix);
    if (n < 0 || (size_t)n >= cap) {
        ka__fail(KA_ERR_IO, "$TMPDIR is too long");
        return -1;
    }
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0) ka__fail(KA_ERR_IO, "cannot create a temporary file in %s: %s", tmpdir(), strerror(errno));
    return fd;
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

/* The whole file at path, ka__alloc'd. */
static ka_status read_file(const char *path, void **out, size_t *n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return ka__fail(KA_ERR_BUILD_FAILED, "the compiler wrote no output (%s)", strerror(errno));
    }
    size_t size = (size_t)st.st_size;
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

/* The preprocessor's words of options (-D, -U, -I), split at blanks into
 * argv; the others are OpenCL compiler options (-cl-mad-enable, -w...) that
 * a program written for every device may carry, and the C build leaves out. */
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

/* The log the compiler wrote to fd, appended to the detail. */
static void append_log(int fd) {
    static const size_t cap = LOG_MAX;
    char *log = ka__alloc(cap + 1);
    if (!log) return;
    size_t n = 0;
    lseek(fd, 0, SEEK_SET);
    while (n < cap) {
        ssize_t r = read(fd, log + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    log[n] = 0;
    ka__append_detail("\nbuild log:\n");
    ka__append_detail(n ? log : "(empty)");
    ka__free(log, cap + 1);
}

static ka_status run_cc(const char *cc, char **argv, int logfd) {
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "posix_spawn_file_actions_init failed");
    posix_spawn_file_actions_adddup2(&fa, logfd, 1);
    posix_spawn_file_actions_adddup2(&fa, logfd, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int e = posix_spawn(&pid, cc, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e != 0)
        return ka__fail(KA_ERR_BUILD_FAILED, "cannot run the C compiler '%s': %s (set $KA_CC to a C compiler)",
                        cc, strerror(e));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return ka__fail(KA_ERR_BUILD_FAILED, "waiting for the C compiler failed: %s", strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return KA_OK;
    ka_status st = WIFEXITED(status)
                       ? ka__fail(KA_ERR_BUILD_FAILED, "the C compiler '%s' failed (exit status %d)", cc,
                                  WEXITSTATUS(status))
                       : ka__fail(KA_ERR_BUILD_FAILED, "the C compiler '%s' was killed by signal %d", cc,
                                  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    append_log(logfd);
    return st;
}

/* Runs cc on source with options: the preprocessed text (pre) or the shared
 * object into *out (ka__alloc'd, *n bytes). gcc: the compiler is GCC. */
static ka_status run(const char *cc, const char *source, const char *options, bool pre, bool gcc, void **out, size_t *n) {
    char src_path[4096], out_path[4096], log_path[4096];
    int sfd = make_temp(src_path, sizeof src_path, ".c");
    if (sfd < 0) return KA_ERR_IO;
    int ofd = make_temp(out_path, sizeof out_path, pre ? ".i" : ".so");
    int lfd = ofd >= 0 ? make_temp(log_path, sizeof log_path, ".log") : -1;
    ka_status st = KA_ERR_IO;
    size_t olen = strlen(options) + 1;
    char *opts = ka__alloc(olen);
    if (ofd < 0 || lfd < 0) goto out;
    if (!opts) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
        goto out;
    }
    memcpy(opts, options, olen);
    if (!write_all(sfd, source, strlen(source))) {
        st = ka__fail(KA_ERR_IO, "writing %s failed", src_path);
        goto out;
    }
    char lscratch[64];
    snprintf(lscratch, sizeof lscratch, "-DKA__LSCRATCH=%u", KA__HOST_LOCAL_MEM);
    /* -ffp-contract=off: a * b + c rounds twice, as OpenCL's and CUDA's
     * builds here do; -fno-math-errno lets sqrt vectorize; char is signed
     * as in the dialect; -w: a kernel's warnings are not errors. */
    char *argv[24 + MAX_OPTS] = {(char *)cc, "-std=gnu11", "-fsigned-char", "-w", lscratch};
    int argc = 5;
    static const char *const compile[] = {"-O3", "-march=native", "-fPIC", "-shared", "-ffp-contract=off", "-fno-math-errno"};
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
    st = run_cc(cc, argv, lfd);
    if (st == KA_OK) st = read_file(out_path, out, n);
out:
    if (opts) ka__free(opts, olen);
    close(sfd);
    unlink(src_path);
    if (ofd >= 0) {
        close(ofd);
        unlink(out_path);
    }
    if (lfd >= 0) {
        close(lfd);
        unlink(log_path);
    }
    return st;
}

ka_status ka__host_compile(const char *cc, const char *head, const char *user, const char *name, const char *options,
                           void **bin, size_t *n) {
    char *src;
    size_t len;
    ka_status st = ka__host_compose(head, user, NULL, name, &src, &len);
    if (st != KA_OK) return st;
    void *pre = NULL;
    size_t plen = 0;
    st = run(cc, src, options, true, false, &pre, &plen);
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
    st = ka__host_compose(head, user, text, name, &src, &len);
    ka__free(text, plen + 1);
    if (st != KA_OK) return st;
    st = run(cc, src, options, false, gcc, bin, n);
    ka__free(src, len);
    return st;
}

ka_status ka__host_load(const ka__build *b, const void *bin, size_t n, ka__hprog **out) {
    ka__hprog *hp = ka__calloc(1, sizeof *hp);
    if (!hp) return ka__build_fail(b, KA_ERR_OUT_OF_MEMORY, "out of memory");
    int len = snprintf(hp->path, sizeof hp->path, "%s/libka-host-XXXXXX.so", tmpdir());
    int fd = len > 0 && (size_t)len < sizeof hp->path ? mkstemps(hp->path, 3) : -1;
    ka_status st = KA_OK;
    if (fd < 0) {
        st = ka__build_fail(b, KA_ERR_IO, "cannot create a temporary file in %s: %s", tmpdir(),
                            len > 0 && (size_t)len < sizeof hp->path ? strerror(errno) : "$TMPDIR is too long");
    } else {
        bool ok = write_all(fd, bin, n);
        close(fd);
        if (ok) hp->dl = dlopen(hp->path, RTLD_NOW | RTLD_LOCAL);
        /* The mapping stays valid once loaded: the file is not needed. */
        unlink(hp->path);
        if (!ok) {
            st = ka__build_fail(b, KA_ERR_IO, "writing the compiled object to %s failed", tmpdir());
        } else if (!hp->dl) {
            const char *e = dlerror();
            st = ka__build_fail(b, KA_ERR_BUILD_FAILED, "loading the compiled kernels failed: %s",
                                e ? e : "?");
        }
    }
    if (st != KA_OK) {
        ka__free(hp, sizeof *hp);
        return st;
    }
    *out = hp;
    return KA_OK;
}
