/* The persistent kernel cache: a cold build stores an entry, a new program
 * loads it (counted by ka_program_cache_hits) and its kernel runs; corrupt,
 * truncated, padded, foreign, group/world-writable and symlinked entries are
 * never loaded (rebuilt, and rewritten only when the entry is libka's own);
 * the directory is made 0700 with its parents; KA_CACHE=0 turns it off;
 * variants, PoCL's lazy `basic` build and concurrent builders each get their
 * entry. Each test works in its own directory under a fresh temporary root,
 * named by $KA_CACHE_DIR (read by libka at each build). Runs on $KA_DEVICE
 * (PoCL by default; on CUDA the entries are cubins). */
#define _GNU_SOURCE
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

static char g_root[256];
static ka_device g_dev;
static const ka_device_info *g_info;
static ka_queue g_q; /* every launch on the device itself (PoCL: no routing) */
static bool g_inline; /* PoCL's `basic` device is there: routed launches build for it */

static const char *src_fill =
    "KA_KERNEL(fill, KA_GLOBAL uint *out, uint seed) {\n"
    "    if (!ka_in_range()) return;\n"
    "    size_t i = ka_global_id(0);\n"
    "    out[i] = (uint)i * 3u + seed;\n"
    "}\n";

/* ---- helpers ------------------------------------------------------------- */

/* Points $KA_CACHE_DIR at <root>/<sub> and returns that path (static buffer). */
static const char *use_dir(const char *sub) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_root, sub);
    assert_int_equal(setenv("KA_CACHE_DIR", path, 1), 0);
    return path;
}

static bool is_entry_name(const char *n) {
    if (strlen(n) != 32) return false;
    for (int i = 0; i < 32; i++)
        if (!strchr("0123456789abcdef", n[i])) return false;
    return true;
}

/* Entries (32 hex digits), temp files (".tmp."), the entries' lock files
 * (".lock", removed by their holder) and anything else in dir. */
typedef struct listing {
    int entries, temps, locks, other;
    char first[512]; /* path of one entry */
} listing;

static listing list_dir(const char *dir) {
    listing l = {0};
    DIR *d = opendir(dir);
    if (!d) return l;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (is_entry_name(e->d_name)) {
            if (!l.entries++) snprintf(l.first, sizeof l.first, "%s/%s", dir, e->d_name);
        } else if (strstr(e->d_name, ".tmp.")) {
            l.temps++;
        } else if (strlen(e->d_name) == 37 && !strcmp(e->d_name + 32, ".lock")) {
            l.locks++;
        } else {
            l.other++;
        }
    }
    closedir(d);
    return l;
}

/* The one entry of dir (fails otherwise). */
static const char *only_entry(const char *dir) {
    static char path[512];
    listing l = list_dir(dir);
    if (l.entries != 1) fail_msg("%s: %d entries, expected 1", dir, l.entries);
    assert_int_equal(l.temps, 0);
    snprintf(path, sizeof path, "%s", l.first);
    return path;
}

static void runs_ok(ka_queue q, ka_kernel k, uint32_t n, uint32_t seed) {
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, n * sizeof(uint32_t), &b));
    ka_arg args[] = {ka_arg_buffer(b), ka_arg_u32(seed)};
    ka_range r = {.dims = 1, .size = {n}};
    KA_OK_OR_FAIL(ka_launch(q, k, &r, args, 2, NULL));
    uint32_t *out = malloc(n * sizeof *out);
    assert_non_null(out);
    KA_OK_OR_FAIL(ka_buffer_read(q, out, b, 0, n * sizeof *out));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++) bad += out[i] != i * 3u + seed;
    free(out);
    KA_OK_OR_FAIL(ka_buffer_release(b));
    if (bad) fail_msg("%u of %u elements wrong", bad, n);
}

/* Builds src, checks its cache hits, runs `fill` (with cfg) and releases. */
static void build_run(const char *src, const ka_kernel_config *cfg, uint32_t want_hits) {
    ka_program p;
    KA_OK_OR_FAIL(ka_program_build(g_dev, src, NULL, &p));
    uint32_t hits = 99, builds = 0;
    KA_OK_OR_FAIL(ka_program_build_count(p, &builds));
    assert_int_equal(builds, 1);
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "fill", cfg, &k));
    KA_OK_OR_FAIL(ka_program_cache_hits(p, &hits));
    if (hits != want_hits) fail_msg("ka_program_cache_hits: %u, expected %u", hits, want_hits);
    runs_ok(g_q, k, 1000, 7);
    KA_OK_OR_FAIL(ka_program_release(p));
}

static void stat_ok(const char *path, struct stat *s) {
    if (lstat(path, s) != 0) fail_msg("lstat %s: %s", path, strerror(errno));
}

static void file_bytes(const char *path, char **data, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *data = malloc((size_t)len + 1);
    assert_non_null(*data);
    assert_int_equal(fread(*data, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
}

static void flip_byte(const char *path, off_t off) {
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char c;
    assert_int_equal(pread(fd, &c, 1, off), 1);
    c ^= 0x5a;
    assert_int_equal(pwrite(fd, &c, 1, off), 1);
    close(fd);
}

static off_t file_size(const char *path) {
    struct stat s;
    stat_ok(path, &s);
    return s.st_size;
}

/* ---- tests --------------------------------------------------------------- */

/* Cold build stores one entry (0600, libka's header); a new program loads it
 * and its kernel runs; the directory and its parents are made 0700. */
static void test_cold_then_warm(void **state) {
    (void)state;
    const char *dir = use_dir("warm/a/b");
    build_run(src_fill, NULL, 0);
    const char *e = only_entry(dir);
    struct stat s;
    stat_ok(e, &s);
    assert_true(S_ISREG(s.st_mode));
    assert_int_equal(s.st_mode & 0777, 0600);
    assert_int_equal(s.st_uid, geteuid());
    assert_true(s.st_size > 64);
    char *data;
    size_t n;
    file_bytes(e, &data, &n);
    assert_memory_equal(data, "KAKCACHE", 8);
    free(data);
    for (const char *sub = "warm"; sub;) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", g_root, sub);
        stat_ok(p, &s);
        assert_true(S_ISDIR(s.st_mode));
        if ((s.st_mode & 0777) != 0700) fail_msg("%s: mode %o, expected 700", p, s.st_mode & 0777);
        sub = !strcmp(sub, "warm") ? "warm/a" : !strcmp(sub, "warm/a") ? "warm/a/b" : NULL;
    }
    build_run(src_fill, NULL, 1);
    build_run(src_fill, NULL, 1);
    listing l = list_dir(dir);
    assert_int_equal(l.entries, 1);
    assert_int_equal(l.temps, 0);
    assert_int_equal(l.locks, 0); /* a miss's lock file goes with its lock */
}

/* Each variant (here a static work-group) is its own entry. */
static void test_variants(void **state) {
    (void)state;
    const char *dir = use_dir("variants");
    ka_kernel_config cfg = {.workgroup = {64, 1, 1}};
    for (uint32_t round = 0; round < 2; round++) {
        ka_program p;
        KA_OK_OR_FAIL(ka_program_build(g_dev, src_fill, NULL, &p));
        ka_kernel k0, k1;
        KA_OK_OR_FAIL(ka_kernel_get(p, "fill", NULL, &k0));
        KA_OK_OR_FAIL(ka_kernel_get(p, "fill", &cfg, &k1));
        uint32_t hits = 0, builds = 0;
        KA_OK_OR_FAIL(ka_program_cache_hits(p, &hits));
        KA_OK_OR_FAIL(ka_program_build_count(p, &builds));
        assert_int_equal(builds, 2);
        assert_int_equal(hits, round ? 2 : 0);
        runs_ok(g_q, k0, 1000, 1);
        runs_ok(g_q, k1, 1000, 2);
        KA_OK_OR_FAIL(ka_program_release(p));
        assert_int_equal(list_dir(dir).entries, 2);
    }
}

/* A flipped byte in the payload or in the header is caught by a checksum:
 * the kernel is compiled (and runs), and the entry is rewritten. */
static void test_corrupt_entry(void **state) {
    (void)state;
    const char *dir = use_dir("corrupt");
    build_run(src_fill, NULL, 0);
    char e[512];
    snprintf(e, sizeof e, "%s", only_entry(dir));
    /* header: magic 0-7, format 8-11, header size 12-15, payload size 16-23,
     * key 24-39, payload checksum 40-47, reserved 48-55, header checksum 56-63 */
    for (int i = 0; i < 9; i++) {
        off_t size = file_size(e); /* PoCL's binary may grow: it carries kernels compiled since */
        const off_t offsets[] = {64 + (size - 64) / 2, size - 1, 64, 3, 9, 20, 30, 44, 60};
        flip_byte(e, offsets[i]);
        build_run(src_fill, NULL, 0); /* detected: compiled */
        build_run(src_fill, NULL, 1); /* and rewritten */
        assert_string_equal(only_entry(dir), e);
    }
}

/* Truncated (inside the payload, inside the header, empty) or padded
 * entries are misses; each is rewritten. */
static void test_truncated_entry(void **state) {
    (void)state;
    const char *dir = use_dir("truncated");
    build_run(src_fill, NULL, 0);
    char e[512];
    snprintf(e, sizeof e, "%s", only_entry(dir));
    for (int i = 0; i < 6; i++) {
        off_t size = file_size(e);
        const off_t lengths[] = {size - 1, size / 2, 64, 63, 10, 0};
        assert_int_equal(truncate(e, lengths[i]), 0);
        build_run(src_fill, NULL, 0);
        assert_true(file_size(e) > 64); /* rewritten */
        build_run(src_fill, NULL, 1);
    }
    FILE *f = fopen(e, "ab");
    assert_non_null(f);
    fputc('x', f);
    fclose(f);
    build_run(src_fill, NULL, 0);
    build_run(src_fill, NULL, 1);
}

/* An entry whose (checksummed) header claims a 1 GiB payload, in a sparse
 * file of that size: refused before anything that large is allocated or
 * read (it used to cost each process 1 GiB and a read of it), compiled
 * instead, and rewritten. */
static size_t g_largest;
static void *count_alloc(size_t n, void *u) {
    (void)u;
    if (n > g_largest) g_largest = n;
    return malloc(n);
}
static void count_free(void *p, size_t n, void *u) {
    (void)n, (void)u;
    free(p);
}

static void test_huge_payload_claim(void **state) {
    (void)state;
    const char *dir = use_dir("huge");
    build_run(src_fill, NULL, 0);
    char e[512];
    snprintf(e, sizeof e, "%s", only_entry(dir));
    unsigned char h[64];
    int fd = open(e, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, h, sizeof h, 0), 64);
    uint64_t claim = (uint64_t)1 << 30;
    memcpy(h + 16, &claim, sizeof claim); /* payload size, bytes 16-23 */
    uint64_t sum = XXH3_64bits(h, 56);    /* the header's own checksum, bytes 56-63 */
    memcpy(h + 56, &sum, sizeof sum);
    assert_int_equal(pwrite(fd, h, sizeof h, 0), 64);
    assert_int_equal(ftruncate(fd, (off_t)(64 + claim)), 0);
    close(fd);
    g_largest = 0;
    ka_set_allocator(&(ka_allocator){count_alloc, count_free, NULL});
    build_run(src_fill, NULL, 0); /* a miss: compiled */
    ka_set_allocator(NULL);
    if (g_largest >= ((size_t)64 << 20)) fail_msg("an allocation of %zu bytes while loading the entry", g_largest);
    assert_true(file_size(e) < (off_t)(64 << 20)); /* rewritten */
    build_run(src_fill, NULL, 1);
}

/* An entry writable by group or others is neither loaded nor replaced. */
static void test_writable_entry_ignored(void **state) {
    (void)state;
    const char *dir = use_dir("mode");
    build_run(src_fill, NULL, 0);
    char e[512];
    snprintf(e, sizeof e, "%s", only_entry(dir));
    const mode_t modes[] = {0666, 0620, 0602};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        assert_int_equal(chmod(e, modes[i]), 0);
        struct stat before, after;
        stat_ok(e, &before);
        build_run(src_fill, NULL, 0);
        stat_ok(e, &after);
        assert_int_equal(after.st_ino, before.st_ino); /* not replaced */
        assert_int_equal(after.st_mode & 0777, modes[i]);
        assert_int_equal(list_dir(dir).temps, 0);
    }
    assert_int_equal(chmod(e, 0600), 0);
    build_run(src_fill, NULL, 1);
}

/* An entry owned by another user is neither loaded nor replaced (needs root
 * to chown). */
static void test_foreign_entry_ignored(void **state) {
    (void)state;
    if (geteuid() != 0) skip();
    const char *dir = use_dir("owner");
    build_run(src_fill, NULL, 0);
    char e[512];
    snprintf(e, sizeof e, "%s", only_entry(dir));
    assert_int_equal(chown(e, 4242, 4242), 0);
    struct stat before, after;
    stat_ok(e, &before);
    build_run(src_fill, NULL, 0);
    stat_ok(e, &after);
    assert_int_equal(after.st_ino, before.st_ino);
    assert_int_equal(after.st_uid, 4242);
    assert_int_equal(chown(e, geteuid(), getegid()), 0);
    build_run(src_fill, NULL, 1);
}

/* A symbolic link in place of an entry is not followed, and left alone. */
static void test_symlink_entry_ignored(void **state) {
    (void)state;
    const char *dir = use_dir("symlink");
    build_run(src_fill, NULL, 0);
    char e[512], moved[600];
    snprintf(e, sizeof e, "%s", only_entry(dir));
    snprintf(moved, sizeof moved, "%s/elsewhere", dir);
    assert_int_equal(rename(e, moved), 0);
    assert_int_equal(symlink(moved, e), 0);
    build_run(src_fill, NULL, 0);
    struct stat s;
    stat_ok(e, &s);
    assert_true(S_ISLNK(s.st_mode));
    assert_int_equal(unlink(e), 0);
    assert_int_equal(rename(moved, e), 0);
    build_run(src_fill, NULL, 1);
}

/* A directory writable by group or others, or owned by someone else, is not
 * used at all: nothing loaded, nothing written. */
static void test_untrusted_dir_ignored(void **state) {
    (void)state;
    const char *d = use_dir("baddir");
    char dir[512];
    snprintf(dir, sizeof dir, "%s", d);
    build_run(src_fill, NULL, 0);
    char e[600];
    snprintf(e, sizeof e, "%s", only_entry(dir));
    assert_int_equal(chmod(dir, 0777), 0);
    build_run(src_fill, NULL, 0);
    assert_int_equal(unlink(e), 0);
    build_run(src_fill, NULL, 0);
    assert_int_equal(list_dir(dir).entries, 0); /* not written either */
    assert_int_equal(chmod(dir, 0700), 0);
    build_run(src_fill, NULL, 0);
    build_run(src_fill, NULL, 1);
    if (geteuid() == 0) {
        assert_int_equal(chown(dir, 4242, 4242), 0);
        build_run(src_fill, NULL, 0);
        assert_int_equal(unlink(e), 0);
        build_run(src_fill, NULL, 0);
        assert_int_equal(list_dir(dir).entries, 0);
        assert_int_equal(chown(dir, geteuid(), getegid()), 0);
    }
}

/* KA_CACHE=0: nothing read, nothing written, no directory made. */
static void test_cache_off(void **state) {
    (void)state;
    const char *d = use_dir("off/sub");
    char dir[512];
    snprintf(dir, sizeof dir, "%s", d);
    const char *offs[] = {"0", "off", "no", "false"};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        assert_int_equal(setenv("KA_CACHE", offs[i], 1), 0);
        build_run(src_fill, NULL, 0);
        struct stat s;
        assert_int_not_equal(stat(dir, &s), 0);
    }
    assert_int_equal(setenv("KA_CACHE", "1", 1), 0);
    build_run(src_fill, NULL, 0);
    build_run(src_fill, NULL, 1);
    assert_int_equal(setenv("KA_CACHE", "0", 1), 0);
    build_run(src_fill, NULL, 0);
    assert_int_equal(unsetenv("KA_CACHE"), 0);
    build_run(src_fill, NULL, 1);
}

/* A failed build stores nothing. */
static void test_failed_build_not_stored(void **state) {
    (void)state;
    const char *dir = use_dir("failed");
    ka_program p = {0};
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, "KA_KERNEL(fill, KA_GLOBAL uint *o) { o[0] = nope; }", NULL, &p));
    KA_EXPECT(KA_ERR_BUILD_FAILED, ka_program_build(g_dev, "KA_KERNEL(fill, KA_GLOBAL uint *o) { o[0] = nope; }", NULL, &p));
    listing l = list_dir(dir);
    assert_int_equal(l.entries + l.temps + l.other, 0);
}

/* Stray files (another process's unfinished temp file, junk) change nothing. */
static void test_stray_files(void **state) {
    (void)state;
    const char *d = use_dir("stray");
    char dir[512], p[1024];
    snprintf(dir, sizeof dir, "%s", d);
    build_run(src_fill, NULL, 0);
    char e[600];
    snprintf(e, sizeof e, "%s", only_entry(dir));
    snprintf(p, sizeof p, "%s.tmp.abcdef", e);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs("half-written", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/README", dir);
    f = fopen(p, "wb");
    assert_non_null(f);
    fclose(f);
    build_run(src_fill, NULL, 1);
    assert_int_equal(unlink(e), 0);
    build_run(src_fill, NULL, 0);
    build_run(src_fill, NULL, 1);
}

/* PoCL: the lazy build for `basic` (first routed small launch) has its own
 * entry and is loaded from the cache by a later program. */
static void test_routed_basic_build(void **state) {
    (void)state;
    if (!g_inline) skip();
    const char *dir = use_dir("routed");
    ka_queue routed;
    KA_OK_OR_FAIL(ka_queue_create(g_dev, NULL, &routed));
    for (uint32_t round = 0; round < 2; round++) {
        ka_program p;
        KA_OK_OR_FAIL(ka_program_build(g_dev, src_fill, NULL, &p));
        ka_kernel k;
        KA_OK_OR_FAIL(ka_kernel_get(p, "fill", NULL, &k));
        uint32_t hits = 0;
        KA_OK_OR_FAIL(ka_program_cache_hits(p, &hits));
        assert_int_equal(hits, round);
        runs_ok(routed, k, 100, 5); /* small: runs on `basic`, built there first */
        ka_queue_stats qs;
        KA_OK_OR_FAIL(ka_queue_get_stats(routed, &qs));
        assert_true(qs.inline_launches >= 1);
        KA_OK_OR_FAIL(ka_program_cache_hits(p, &hits));
        assert_int_equal(hits, round * 2);
        KA_OK_OR_FAIL(ka_program_release(p));
        assert_int_equal(list_dir(dir).entries, 2);
    }
    KA_OK_OR_FAIL(ka_queue_release(routed));
}

/* Builders racing on an empty cache: every build succeeds and runs, one
 * valid entry is left, no temp files, and the entry is compiled once: the
 * first builder holds its lock while compiling, the others wait and load
 * it (whatever the timing: a builder arriving after the store loads too). */
typedef struct racer {
    pthread_t t;
    int ok;
    uint32_t hits;
    char err[256];
} racer;

static void *race(void *arg) {
    racer *r = arg;
    ka_program p;
    ka_kernel k;
    ka_queue q;
    ka_queue_config off = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
    ka_buffer b;
    uint32_t out[256];
    if (ka_queue_create(g_dev, &off, &q) != KA_OK || ka_program_build(g_dev, src_fill, NULL, &p) != KA_OK ||
        ka_kernel_get(p, "fill", NULL, &k) != KA_OK || ka_buffer_create(g_dev, sizeof out, &b) != KA_OK ||
        ka_program_cache_hits(p, &r->hits) != KA_OK) {
        snprintf(r->err, sizeof r->err, "%s", ka_last_error());
        return NULL;
    }
    ka_arg args[] = {ka_arg_buffer(b), ka_arg_u32(11)};
    ka_range rg = {.dims = 1, .size = {256}};
    if (ka_launch(q, k, &rg, args, 2, NULL) == KA_OK && ka_buffer_read(q, out, b, 0, sizeof out) == KA_OK) {
        r->ok = 1;
        for (uint32_t i = 0; i < 256; i++) r->ok &= out[i] == i * 3u + 11u;
    }
    ka_buffer_release(b);
    ka_program_release(p);
    ka_queue_release(q);
    return NULL;
}

static void test_concurrent_builders(void **state) {
    (void)state;
    const char *dir = use_dir("race");
    racer r[4];
    uint32_t hits = 0;
    memset(r, 0, sizeof r);
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&r[i].t, NULL, race, &r[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(r[i].t, NULL);
        if (!r[i].ok) fail_msg("builder %d failed: %s", i, r[i].err);
        hits += r[i].hits;
    }
    assert_int_equal(hits, 3); /* one compile, three loads */
    only_entry(dir);
    build_run(src_fill, NULL, 1);
    assert_int_equal(list_dir(dir).locks, 0); /* waiters relocked afresh; nobody left one */
}


/* ---- messages, the bound, eviction ---------------------------------------- */

/* WARN messages of the logger that contain g_log_want. */
static const char *g_log_want;
static int g_log_count;
static char g_log_last[8192];
static void count_log(ka_log_level lvl, const char *msg, void *user) {
    (void)user;
    if (lvl > KA_LOG_WARN || !strstr(msg, g_log_want)) return;
    g_log_count++;
    snprintf(g_log_last, sizeof g_log_last, "%s", msg);
}
static void log_watch(const char *want) {
    g_log_want = want;
    g_log_count = 0;
    ka_set_logger(count_log, NULL);
}

/* A damaged entry is reported once per build (the entry is looked at again
 * under its lock; that second look must not warn again). */
static void test_damage_warned_once(void **state) {
    (void)state;
    const char *dir = use_dir("warnonce");
    build_run(src_fill, NULL, 0);
    char e[512];
    snprintf(e, sizeof e, "%s", only_entry(dir));
    flip_byte(e, file_size(e) - 1);
    log_watch("payload checksum mismatch");
    build_run(src_fill, NULL, 0);
    ka_set_logger(NULL, NULL);
    if (g_log_count != 1) fail_msg("the damaged entry reported %d times, expected once: %s", g_log_count, g_log_last);
    build_run(src_fill, NULL, 1);
}

/* A directory that cannot be used (a path component over 255 bytes, a path
 * of 5000 bytes) is reported once per process and reason at WARN, not at
 * every build; builds work. */
static void test_unusable_dir_logged_once(void **state) {
    (void)state;
    char *path = malloc(6000);
    assert_non_null(path);
    int n = snprintf(path, 6000, "%s/", g_root);
    memset(path + n, 'a', 300);
    path[n + 300] = 0;
    assert_int_equal(setenv("KA_CACHE_DIR", path, 1), 0);
    log_watch("not used");
    build_run(src_fill, NULL, 0);
    build_run(src_fill, NULL, 0);
    if (g_log_count != 1) fail_msg("the 300-byte name reported %d times, expected once", g_log_count);
    if (!strstr(g_log_last, "300 bytes")) fail_msg("the message does not say why: %s", g_log_last);
    ka_cache_info ci;
    KA_OK_OR_FAIL(ka_cache_get_info(&ci));
    assert_int_equal(ci.state, KA_CACHE_UNUSABLE);
    assert_non_null(strstr(ci.reason, "300 bytes"));
    for (n = 0; n < 5000; n += 100) memcpy(path + n, "/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 100);
    path[5000] = 0;
    assert_int_equal(setenv("KA_CACHE_DIR", path, 1), 0);
    build_run(src_fill, NULL, 0);
    build_run(src_fill, NULL, 0);
    ka_set_logger(NULL, NULL);
    if (g_log_count != 2) fail_msg("the 5000-byte path: %d messages in all, expected 2", g_log_count);
    if (!strstr(g_log_last, "5000 bytes")) fail_msg("the message does not say why: %s", g_log_last);
    KA_OK_OR_FAIL(ka_cache_get_info(&ci));
    assert_int_equal(ci.state, KA_CACHE_UNUSABLE);
    free(path);
}

/* A source whose kernel writes i * 3 + seed + k (k tells the entries apart). */
static void src_k(char *buf, size_t len, uint32_t k) {
    snprintf(buf, len,
             "KA_KERNEL(fill, KA_GLOBAL uint *out, uint seed) {\n"
             "    if (!ka_in_range()) return;\n"
             "    size_t i = ka_global_id(0);\n"
             "    out[i] = (uint)i * 3u + seed + %uu;\n"
             "}\n",
             k);
}

/* Builds src_k(k) on queue q, checks its result; 0 or 1 (a cache hit), -1
 * on any failure (the reason in err). Thread-safe. */
static int build_k(ka_queue q, uint32_t k, char *err, size_t elen) {
    char src[512];
    src_k(src, sizeof src, k);
    ka_program p;
    ka_kernel kk;
    ka_buffer b;
    uint32_t out[64], hits = 0;
    int r = -1;
    if (ka_program_build(g_dev, src, NULL, &p) != KA_OK) {
        snprintf(err, elen, "build %u: %s", k, ka_last_error());
        return -1;
    }
    if (ka_kernel_get(p, "fill", NULL, &kk) == KA_OK && ka_program_cache_hits(p, &hits) == KA_OK &&
        ka_buffer_create(g_dev, sizeof out, &b) == KA_OK) {
        ka_arg args[] = {ka_arg_buffer(b), ka_arg_u32(5)};
        ka_range rg = {.dims = 1, .size = {64}};
        if (ka_launch(q, kk, &rg, args, 2, NULL) == KA_OK && ka_buffer_read(q, out, b, 0, sizeof out) == KA_OK) {
            r = (int)hits;
            for (uint32_t i = 0; i < 64; i++)
                if (out[i] != i * 3u + 5u + k) {
                    snprintf(err, elen, "kernel %u: out[%u] = %u, expected %u", k, i, out[i], i * 3u + 5u + k);
                    r = -1;
                    break;
                }
        } else {
            snprintf(err, elen, "kernel %u: %s", k, ka_last_error());
        }
        ka_buffer_release(b);
    } else {
        snprintf(err, elen, "kernel %u: %s", k, ka_last_error());
    }
    ka_program_release(p);
    return r;
}

static int build_k_ok(uint32_t k) {
    char err[512] = "";
    int r = build_k(g_q, k, err, sizeof err);
    if (r < 0) fail_msg("%s", err);
    return r;
}

/* KA_CACHE_MAX_BYTES: bytes, K/M/G/T (binary), optionally "B" or "iB"; 0 is
 * no bound; malformed gives the default (1 GiB), reported once at WARN when
 * a store reads it. */
static void test_max_bytes_parsing(void **state) {
    (void)state;
    static const struct {
        const char *v;
        uint64_t want;
    } cases[] = {
        {"4096", 4096}, {"2K", 2048}, {"2k", 2048}, {"3M", 3u << 20}, {"3MiB", 3u << 20}, {"5KB", 5120},
        {"1G", 1u << 30}, {"2T", (uint64_t)2 << 40}, {"0", 0}, {"18446744073709551615", UINT64_MAX},
        {"", 1u << 30}, {"abc", 1u << 30}, {"-1", 1u << 30}, {"12X", 1u << 30}, {"1.5G", 1u << 30},
        {" 12", 1u << 30}, {"12 ", 1u << 30}, {"2Ki", 1u << 30}, {"18446744073709551616", 1u << 30},
        {"17179869184G", 1u << 30}, {"K", 1u << 30},
    };
    ka_cache_info ci;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(setenv("KA_CACHE_MAX_BYTES", cases[i].v, 1), 0);
        KA_OK_OR_FAIL(ka_cache_get_info(&ci));
        if (ci.max_bytes != cases[i].want)
            fail_msg("KA_CACHE_MAX_BYTES=\"%s\": bound %llu, expected %llu", cases[i].v,
                     (unsigned long long)ci.max_bytes, (unsigned long long)cases[i].want);
    }
    assert_int_equal(unsetenv("KA_CACHE_MAX_BYTES"), 0);
    KA_OK_OR_FAIL(ka_cache_get_info(&ci));
    assert_int_equal(ci.max_bytes, 1u << 30);
    /* Malformed: reported once, when stores read it; entries are kept. */
    const char *dir = use_dir("badmax");
    assert_int_equal(setenv("KA_CACHE_MAX_BYTES", "lots", 1), 0);
    log_watch("KA_CACHE_MAX_BYTES");
    assert_int_equal(build_k_ok(70), 0);
    assert_int_equal(build_k_ok(71), 0);
    ka_set_logger(NULL, NULL);
    assert_int_equal(unsetenv("KA_CACHE_MAX_BYTES"), 0);
    if (g_log_count != 1) fail_msg("a malformed KA_CACHE_MAX_BYTES reported %d times, expected once", g_log_count);
    assert_non_null(strstr(g_log_last, "\"lots\""));
    assert_int_equal(list_dir(dir).entries, 2);
}

/* The name of an entry of dir other than `but` (NULL: any) into out. */
static void other_entry(const char *dir, const char *but, char out[33]) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    out[0] = 0;
    while ((e = readdir(d)))
        if (is_entry_name(e->d_name) && (!but || strcmp(e->d_name, but))) memcpy(out, e->d_name, 33); /* 32 hex digits and the NUL */
    closedir(d);
    if (!out[0]) fail_msg("%s: no entry other than %s", dir, but ? but : "(none)");
}

static bool has_file(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static off_t size_of(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return file_size(p);
}

static void set_mtime(const char *dir, const char *name, time_t t) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/* Past the bound, a store evicts the least recently used entries (oldest
 * mtime first; a hit renews an entry's mtime), never the one just stored.
 * Times are set, not waited for: A and B are made old, then A is hit. */
static void test_eviction_lru(void **state) {
    (void)state;
    char dir[512], a[33], b[33];
    snprintf(dir, sizeof dir, "%s", use_dir("lru"));
    assert_int_equal(build_k_ok(1), 0);
    other_entry(dir, NULL, a);
    assert_int_equal(build_k_ok(2), 0);
    other_entry(dir, a, b);
    set_mtime(dir, a, 1000);
    set_mtime(dir, b, 2000);
    assert_int_equal(build_k_ok(1), 1); /* A is now the most recently used */
    /* Room for A and a third entry of about B's size, not for all three. */
    char bound[32];
    snprintf(bound, sizeof bound, "%lld", (long long)(size_of(dir, a) + size_of(dir, b) + size_of(dir, b) / 2));
    assert_int_equal(setenv("KA_CACHE_MAX_BYTES", bound, 1), 0);
    assert_int_equal(build_k_ok(3), 0);
    assert_int_equal(unsetenv("KA_CACHE_MAX_BYTES"), 0);
    if (has_file(dir, b)) fail_msg("the least recently used entry was not evicted (bound %s)", bound);
    assert_true(has_file(dir, a));
    listing l = list_dir(dir);
    assert_int_equal(l.entries, 2);
    assert_int_equal(l.locks + l.temps, 0);
    assert_int_equal(build_k_ok(1), 1);
    assert_int_equal(build_k_ok(3), 1);
}

/* A bound smaller than one entry: each store keeps the entry just stored
 * (the build after it loads it) and evicts every other. */
static void test_bound_below_one_entry(void **state) {
    (void)state;
    char dir[512], first[33];
    snprintf(dir, sizeof dir, "%s", use_dir("tiny"));
    assert_int_equal(setenv("KA_CACHE_MAX_BYTES", "1", 1), 0);
    assert_int_equal(build_k_ok(20), 0);
    other_entry(dir, NULL, first);
    assert_int_equal(build_k_ok(20), 1);
    assert_int_equal(build_k_ok(21), 0);
    listing l = list_dir(dir);
    assert_int_equal(l.entries, 1);
    assert_false(has_file(dir, first));
    assert_int_equal(build_k_ok(21), 1);
    assert_int_equal(build_k_ok(20), 0); /* evicted */
    ka_cache_info ci;
    KA_OK_OR_FAIL(ka_cache_get_info(&ci));
    assert_int_equal(ci.state, KA_CACHE_ON);
    assert_int_equal(ci.entries, 1);
    assert_true(ci.bytes > 64);
    assert_int_equal(ci.max_bytes, 1);
    assert_int_equal(ci.locks + ci.temps, 0);
    assert_int_equal(unsetenv("KA_CACHE_MAX_BYTES"), 0);
}

/* Threads building (loading, or compiling and storing) three programs under a
 * one-byte bound: every store evicts what the others load. Every build
 * succeeds and runs its own kernel; no lock or temp file is left. */
typedef struct evicter {
    pthread_t t;
    int id, bad;
    char err[512];
} evicter;

static void *evict_race(void *arg) {
    evicter *r = arg;
    ka_queue q;
    ka_queue_config off = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
    if (ka_queue_create(g_dev, &off, &q) != KA_OK) {
        snprintf(r->err, sizeof r->err, "ka_queue_create: %s", ka_last_error());
        r->bad = 1;
        return NULL;
    }
    for (int j = 0; j < 6 && !r->bad; j++)
        if (build_k(q, 30u + (uint32_t)((r->id + j) % 3), r->err, sizeof r->err) < 0) r->bad = 1;
    ka_queue_release(q);
    return NULL;
}

static void test_readers_during_eviction(void **state) {
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", use_dir("evictrace"));
    assert_int_equal(setenv("KA_CACHE_MAX_BYTES", "1", 1), 0);
    for (uint32_t k = 30; k < 33; k++) build_k_ok(k); /* entries to load, and to evict */
    evicter r[4];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 4; i++) {
        r[i].id = i;
        assert_int_equal(pthread_create(&r[i].t, NULL, evict_race, &r[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(r[i].t, NULL);
    assert_int_equal(unsetenv("KA_CACHE_MAX_BYTES"), 0);
    for (int i = 0; i < 4; i++)
        if (r[i].bad) fail_msg("builder %d: %s", i, r[i].err);
    listing l = list_dir(dir);
    if (l.entries < 1 || l.entries > 4) fail_msg("%d entries left, expected 1 to 4 (one per last store)", l.entries);
    assert_int_equal(l.locks, 0);
    assert_int_equal(l.temps, 0);
}

/* Stale temporary and lock files (left by a crash) are removed by the next
 * eviction scan; fresh ones (a store or build in progress) are not; a held
 * lock is not. */
static void test_stale_files_cleaned(void **state) {
    (void)state;
    char dir[512], e[33], p[1024];
    snprintf(dir, sizeof dir, "%s", use_dir("stale"));
    assert_int_equal(build_k_ok(40), 0);
    other_entry(dir, NULL, e);
    const char *suffix[] = {".tmp.AAAAAA", ".lock", ".tmp.BBBBBB", ".tmp.CCCCCC"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s%s", dir, e, suffix[i]);
        int fd = open(p, O_CREAT | O_WRONLY, 0600);
        assert_true(fd >= 0);
        close(fd);
        if (i < 2) set_mtime(dir, strrchr(p, '/') + 1, 1000); /* old */
    }
    /* A store scans when it may be over the bound: here, the first store
     * under a new bound (this process knows nothing of the directory then). */
    assert_int_equal(setenv("KA_CACHE_MAX_BYTES", "1023M", 1), 0);
    assert_int_equal(build_k_ok(41), 0);
    assert_int_equal(unsetenv("KA_CACHE_MAX_BYTES"), 0);
    listing l = list_dir(dir);
    assert_int_equal(l.locks, 0);
    assert_int_equal(l.temps, 2); /* the fresh ones */
    assert_int_equal(l.entries, 2);
    /* ka_cache_clear removes every file libka made, nothing else. */
    snprintf(p, sizeof p, "%s/README", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    uint64_t removed = 0;
    KA_OK_OR_FAIL(ka_cache_clear(&removed));
    assert_int_equal(removed, 4);
    l = list_dir(dir);
    assert_int_equal(l.entries + l.temps + l.locks, 0);
    assert_int_equal(l.other, 1);
    assert_int_equal(build_k_ok(41), 0);
    assert_int_equal(build_k_ok(41), 1);
}

/* Root's file access ignores modes (CAP_DAC_OVERRIDE): to make a mode 0500
 * directory read-only for root too, the calling thread drops it from its
 * effective set (capabilities are per thread; the cache's files are made by
 * the thread that builds) and raises it again from its permitted set. */
static bool g_dac_dropped;
static char g_readonly_dir[512];
static bool dac_override(bool on) {
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (syscall(SYS_capget, &h, d) != 0) return false;
    if (on) d[0].effective |= 1u << CAP_DAC_OVERRIDE;
    else d[0].effective &= ~(1u << CAP_DAC_OVERRIDE);
    return syscall(SYS_capset, &h, d) == 0;
}

static int readonly_teardown(void **state) {
    (void)state;
    if (g_dac_dropped && dac_override(true)) g_dac_dropped = false;
    chmod(g_readonly_dir, 0700);
    return g_dac_dropped ? -1 : 0;
}

/* A read-only cache directory (mode 0500): entries load, nothing is written
 * (no entry, lock or temporary file), every build works. As root the test
 * runs without CAP_DAC_OVERRIDE, so that the mode holds. */
static void test_readonly_dir(void **state) {
    (void)state;
    snprintf(g_readonly_dir, sizeof g_readonly_dir, "%s", use_dir("readonly"));
    const char *dir = g_readonly_dir;
    assert_int_equal(build_k_ok(50), 0);
    assert_int_equal(chmod(dir, 0500), 0);
    if (geteuid() == 0) {
        if (!dac_override(false)) fail_msg("root cannot drop CAP_DAC_OVERRIDE: %s", strerror(errno));
        g_dac_dropped = true;
        char p[600];
        snprintf(p, sizeof p, "%s/probe", dir);
        int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        if (fd >= 0) {
            close(fd);
            unlink(p);
            fail_msg("%s (mode 0500) is still writable", dir);
        }
    }
    assert_int_equal(build_k_ok(50), 1);
    assert_int_equal(build_k_ok(51), 0);
    assert_int_equal(build_k_ok(51), 0); /* not stored */
    listing l = list_dir(dir);
    assert_int_equal(l.entries, 1);
    assert_int_equal(l.locks + l.temps, 0);
}

/* A directory where no file can be made, whoever asks (procfs: owned by the
 * process's user, mode 0555, creation fails with ENOENT even for root): no
 * lock, no store, every build works. */
static void test_unwritable_dir(void **state) {
    (void)state;
    struct stat s;
    if (stat("/proc/self/fdinfo", &s) != 0 || s.st_uid != geteuid()) skip();
    assert_int_equal(setenv("KA_CACHE_DIR", "/proc/self/fdinfo", 1), 0);
    assert_int_equal(build_k_ok(60), 0);
    assert_int_equal(build_k_ok(60), 0);
    ka_cache_info ci;
    KA_OK_OR_FAIL(ka_cache_get_info(&ci));
    assert_int_equal(ci.state, KA_CACHE_ON);
    assert_int_equal(ci.entries + ci.locks + ci.temps, 0);
}

/* Writes text to path (replacing it). */
static void put_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) fail_msg("fopen %s: %s", path, strerror(errno));
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* Builds src (with o), or the file at path, runs `inc` and returns what it
 * wrote; the build must not have loaded from the cache. */
static int build_run_inc(const char *src, const ka_build_options *o, const char *path) {
    ka_program p;
    if (path) KA_OK_OR_FAIL(ka_program_build_file(g_dev, path, o, &p));
    else KA_OK_OR_FAIL(ka_program_build(g_dev, src, o, &p));
    uint32_t hits = 99;
    KA_OK_OR_FAIL(ka_program_cache_hits(p, &hits));
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(p, "inc", NULL, &k));
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, sizeof(int), &b));
    ka_arg a[] = {ka_arg_buffer(b)};
    KA_OK_OR_FAIL(ka_launch(g_q, k, &(ka_range){.dims = 1, .size = {1}}, a, 1, NULL));
    int v = -1;
    KA_OK_OR_FAIL(ka_buffer_read(g_q, &v, b, 0, sizeof v));
    KA_OK_OR_FAIL(ka_buffer_release(b));
    KA_OK_OR_FAIL(ka_program_release(p));
    if (hits) fail_msg("%s: loaded from the kernel cache (it wrote %d)", path ? path : src, v);
    return v;
}

/* A source that reads another file is never cached, however its directive is
 * spelled: each spelling is built, its header changed and built again, and
 * the second kernel must see the new header (a cached binary would not).
 * __has_include: the header's existence alone changes the program. Then
 * ka_program_build_file, whose own directory is searched only when the scan
 * finds a directive. */
static void test_include_spellings(void **state) {
    (void)state;
    const char *dir = use_dir("includes");
    char hdir[512], hdr[600], has[600], file[600], side[600];
    snprintf(hdir, sizeof hdir, "%s/headers", g_root);
    assert_int_equal(mkdir(hdir, 0700), 0);
    snprintf(hdr, sizeof hdr, "%s/inc.h", hdir);
    snprintf(has, sizeof has, "%s/maybe.h", hdir);
    const char *dirs[] = {hdir};
    const ka_build_options o = {.include_dirs = dirs, .num_include_dirs = 1};
    static const char body[] = "KA_KERNEL(inc, KA_GLOBAL int *out) { if (ka_in_range()) out[0] = INC_VAL; }\n";
    /* Trigraphs are read by clang's OpenCL C (PoCL), not by gcc's gnu11 (host) or NVRTC. */
    bool trigraphs = g_info->backend == KA_BACKEND_OPENCL && strstr(g_info->platform, "Portable Computing Language");
    static const char *const spellings[] = {
        "#include \"inc.h\"\n", "#/**/include \"inc.h\"\n", "/**/#include \"inc.h\"\n", "%:include \"inc.h\"\n",
        "#\\\ninclude \"inc.h\"\n", "\f#include \"inc.h\"\n", "\v#include \"inc.h\"\n", "#import \"inc.h\"\n",
        "/* a comment\n over lines */ #include \"inc.h\"\n", "?\?=include \"inc.h\"\n",
    };
    char src[512];
    for (int i = 0; i < (int)(sizeof spellings / sizeof spellings[0]); i++) {
        if (spellings[i][0] == '?' && !trigraphs) continue;
        /* NVRTC has no #import (an error there, never a cached kernel). */
        if (strstr(spellings[i], "#import") && g_info->backend == KA_BACKEND_CUDA) continue;
        snprintf(src, sizeof src, "%s%s", spellings[i], body);
        for (int round = 0; round < 2; round++) {
            char def[64];
            snprintf(def, sizeof def, "#define INC_VAL %d\n", 10 * i + round);
            put_file(hdr, def);
            int got = build_run_inc(src, &o, NULL);
            if (got != 10 * i + round) fail_msg("spelling %d (\"%s\"): %d, expected %d: a stale kernel", i, spellings[i], got, 10 * i + round);
        }
    }
    static const char has_src[] = "#if __has_include(\"maybe.h\")\n#define INC_VAL 1\n#else\n#define INC_VAL 0\n#endif\n";
    snprintf(src, sizeof src, "%s%s", has_src, body);
    unlink(has);
    assert_int_equal(build_run_inc(src, &o, NULL), 0);
    put_file(has, "\n");
    assert_int_equal(build_run_inc(src, &o, NULL), 1);
    /* The file's own directory is searched for a directive spelled unusually too. */
    snprintf(file, sizeof file, "%s/main.cl", hdir);
    snprintf(side, sizeof side, "%s/side.h", hdir);
    put_file(file, "%:include \"side.h\"\nKA_KERNEL(inc, KA_GLOBAL int *out) { if (ka_in_range()) out[0] = SIDE; }\n");
    for (int v = 5; v < 7; v++) {
        char def[64];
        snprintf(def, sizeof def, "#define SIDE %d\n", v);
        put_file(side, def);
        assert_int_equal(build_run_inc(NULL, NULL, file), v);
    }
    assert_int_equal(list_dir(dir).entries, 0);
    unlink(hdr);
    unlink(has);
    unlink(file);
    unlink(side);
    rmdir(hdir);
}

static void test_api_errors(void **state) {
    (void)state;
    uint32_t hits;
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_cache_hits((ka_program){0}, &hits));
    ka_program p;
    use_dir("api");
    KA_OK_OR_FAIL(ka_program_build(g_dev, src_fill, NULL, &p));
    KA_EXPECT(KA_ERR_INVALID_ARGUMENT, ka_program_cache_hits(p, NULL));
    KA_OK_OR_FAIL(ka_program_release(p));
    KA_EXPECT(KA_ERR_INVALID_HANDLE, ka_program_cache_hits(p, &hits));
}

/* ---- set-up -------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *s, int flag, struct FTW *ftw) {
    (void)s;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(void) {
    /* Before any libka call: the cache directory of every test is under a
     * fresh temporary root. */
    const char *tmp = getenv("TMPDIR");
    snprintf(g_root, sizeof g_root, "%s/ka_kcache_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    unsetenv("KA_CACHE");
    setenv("KA_CACHE_DIR", g_root, 1);
    if (ka_device_open(NULL, &g_dev) != KA_OK || ka_device_get_info(g_dev, &g_info) != KA_OK) {
        fprintf(stderr, "no device: %s\n", ka_last_error());
        return 1;
    }
    int rc;
    if (g_info->backend == KA_BACKEND_NULL) { /* $KA_DEVICE=null builds nothing */
        fprintf(stderr, "the default device is the null device: skipped\n");
        rc = 77;
    } else {
        ka_native_device nat = {0};
        g_inline = ka_device_get_native(g_dev, &nat) == KA_OK && nat.inline_device;
        ka_queue_config off = {.spin_ns = KA_SPIN_DEFAULT, .inline_max_items = KA_INLINE_OFF};
        if (ka_queue_create(g_dev, &off, &g_q) != KA_OK) {
            fprintf(stderr, "ka_queue_create: %s\n", ka_last_error());
            return 1;
        }
        fprintf(stderr, "kernel cache tests on %s (%s), cache root %s\n", g_info->name, g_info->selector, g_root);
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_cold_then_warm),
            cmocka_unit_test(test_variants),
            cmocka_unit_test(test_corrupt_entry),
            cmocka_unit_test(test_truncated_entry),
            cmocka_unit_test(test_huge_payload_claim),
            cmocka_unit_test(test_writable_entry_ignored),
            cmocka_unit_test(test_foreign_entry_ignored),
            cmocka_unit_test(test_symlink_entry_ignored),
            cmocka_unit_test(test_untrusted_dir_ignored),
            cmocka_unit_test(test_cache_off),
            cmocka_unit_test(test_failed_build_not_stored),
            cmocka_unit_test(test_stray_files),
            cmocka_unit_test(test_routed_basic_build),
            cmocka_unit_test(test_concurrent_builders),
            cmocka_unit_test(test_damage_warned_once),
            cmocka_unit_test(test_unusable_dir_logged_once),
            cmocka_unit_test(test_max_bytes_parsing),
            cmocka_unit_test(test_eviction_lru),
            cmocka_unit_test(test_bound_below_one_entry),
            cmocka_unit_test(test_readers_during_eviction),
            cmocka_unit_test(test_stale_files_cleaned),
            cmocka_unit_test_teardown(test_readonly_dir, readonly_teardown),
            cmocka_unit_test(test_unwritable_dir),
            cmocka_unit_test(test_api_errors),
            cmocka_unit_test(test_include_spellings),
        };
        rc = cmocka_run_group_tests_name("kcache", tests, NULL, NULL);
        ka_queue_release(g_q);
    }
    ka_device_close(g_dev);
    nftw(g_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
