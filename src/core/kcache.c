/* The persistent kernel cache: compiled binaries (OpenCL program binaries,
 * CUDA cubins) kept on disk between processes.
 *
 * Location: $KA_CACHE_DIR, else $XDG_CACHE_HOME/libka, else $HOME/.cache/libka
 * (made with mode 0700, parents too); KA_CACHE=0 turns the cache off. An entry
 * is one file named by the 32 hex digits of a 128-bit XXH3 key over libka's
 * version, the cache format, the back-end, the device (name, vendor, platform,
 * version, driver), the back-end's compile target (the cl_device_id actually
 * built for, the CUDA architecture and NVRTC version), the full source
 * (prelude included) and the full build options (the configuration's static
 * sizes, sub-group size and defines are among them).
 *
 * File: a 64-byte header (magic, format version, header size, payload size,
 * key, XXH3-64 of the payload, XXH3-64 of the header) and the payload. A
 * file whose size, magic, version, key or either checksum disagrees is a
 * miss: the caller compiles and stores a fresh entry over it. Writes go to a
 * mkstemp file in the same directory, are fsync'd and renamed over the entry,
 * so a reader sees the old entry or the new one, never a mix.
 *
 * One compile: processes started together (MPI ranks) and threads that miss
 * the same entry would all compile it. A miss therefore takes an exclusive
 * flock on "<entry>.lock" and looks again: the first to get it compiles and
 * stores, the others wait and then load that entry. flock, not fcntl locks:
 * its lock belongs to the open file, so two threads of one process exclude
 * each other too, and a process that dies releases it. The holder unlinks
 * the lock file while still holding it, then closes it; whoever gets a lock
 * checks that the name still leads to the file it locked (fstat against
 * fstatat) and else locks the name afresh, so two never hold "the" lock.
 *
 * Bound: KA_CACHE_MAX_BYTES (default 1 GiB; K, M, G, T suffixes; 0 is none).
 * A hit sets the entry's mtime to now (futimens), so mtime orders entries by
 * last use whatever the mount's atime policy. After a store, when this
 * process's estimate of the directory (the total its last scan left, plus
 * what it stored since; unknown before its first store there) is over the
 * bound, the directory is scanned: temp and lock files older than an hour
 * (a crash's) go, then the least recently used entries until the total is
 * within the bound, never the entry just stored nor a newer one (a bound
 * below one entry keeps the newest). Unlinking under readers is safe: an open descriptor
 * reads on; a later open misses and compiles. ENOENT (another process
 * evicted it first) counts as evicted.
 *
 * The directory is used only when it is a directory owned by the effective
 * user and not writable by group or others; an entry likewise (else it is
 * neither loaded nor replaced). Every failure here means "compile normally":
 * nothing is reported to the caller, details go to the logger; why the
 * directory is unusable is logged once per process and reason. No printing;
 * memory through ka__alloc. */
#define _GNU_SOURCE
#include "ka_internal.h"
#include "backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#define KCACHE_MAGIC "KAKCACHE"
#define KCACHE_FORMAT 1u
/* The largest payload loaded or stored. Compiled programs are kilobytes to a
 * few megabytes; a header claiming more is refused before anything is
 * allocated or read, even when the file (sparse, say) is as large as it says. */
#define KCACHE_MAX_PAYLOAD ((uint64_t)64 << 20)

typedef struct kc_header {
    char magic[8];
    uint32_t format;
    uint32_t header_size;
    uint64_t payload_size;
    uint64_t key_lo, key_hi;
    uint64_t payload_sum;      /* XXH3-64 of the payload, seeded with key_lo */
    uint64_t reserved;
    uint64_t header_sum;       /* XXH3-64 of the bytes above */
} kc_header;
_Static_assert(sizeof(kc_header) == 64, "kernel cache header is 64 bytes");

bool ka__kcache_enabled(void) {
    const char *e = getenv("KA_CACHE");
    if (!e) return true;
    return strcmp(e, "0") && strcasecmp(e, "off") && strcasecmp(e, "no") && strcasecmp(e, "false");
}

/* ---- key ----------------------------------------------------------------- */
static void put_str(XXH3_state_t *st, const char *s) {
    uint64_t n = s ? strlen(s) : 0;
    XXH3_128bits_update(st, &n, sizeof n); /* length-prefixed: ("ab","c") != ("a","bc") */
    if (n) XXH3_128bits_update(st, s, n);
}

void ka__kcache_key_make(const ka__device *d, const char *target, const char *source, const char *options,
                         ka__kcache_key *key) {
    XXH3_state_t st;
    key->lock = -1;
    key->dir = -1;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset_withSeed(&st, 0x6b61636163686531ull); /* "kacache1" */
    uint32_t fmt = KCACHE_FORMAT;
    XXH3_128bits_update(&st, &fmt, sizeof fmt);
    put_str(&st, KA_VERSION_STRING);
    put_str(&st, ka__be_name(d));
    put_str(&st, d->info.name);
    put_str(&st, d->info.vendor);
    put_str(&st, d->info.platform);
    put_str(&st, d->info.version);
    put_str(&st, d->info.driver_version);
    put_str(&st, target);
    put_str(&st, source);
    put_str(&st, options);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    key->lo = h.low64;
    key->hi = h.high64;
}

void ka__kcache_key_hex(const ka__kcache_key *key, char out[33]) {
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)key->hi, (unsigned long long)key->lo);
}

/* ---- directory ----------------------------------------------------------- */
/* Why the directory cannot be used; each is logged once per process (a
 * build runs these checks several times, and every build would repeat it). */
enum kc_why {
    KC_USABLE = 0,
    KC_ABSENT,        /* not made yet: a quiet miss when loading */
    KC_NO_DIR,        /* no KA_CACHE_DIR, XDG_CACHE_HOME or HOME */
    KC_TOO_LONG,      /* the path leaves no room for an entry's name */
    KC_NAME_TOO_LONG, /* a component over NAME_MAX */
    KC_CANNOT_MAKE,
    KC_CANNOT_STAT,
    KC_UNTRUSTED,
    KC_MAX_BAD,       /* KA_CACHE_MAX_BYTES malformed */
    KC_MAX_ZERO,      /* KA_CACHE_MAX_BYTES=0 */
};
static _Atomic uint32_t logged_once;

static void log_once(enum kc_why why, ka_log_level lvl, const char *what, const char *then) {
    uint32_t bit = 1u << why;
    if (atomic_fetch_or(&logged_once, bit) & bit) return;
    ka__log(lvl, "kernel cache: %s: %s", what, then);
}

/* The cache directory's path into buf (len >= PATH_MAX); KC_USABLE, or why
 * none can be named (the reason's text into why). */
static enum kc_why dir_path(char *buf, size_t len, char *why, size_t wlen) {
    const char *e = getenv("KA_CACHE_DIR"), *suffix = "";
    if (e && *e) {
    } else if ((e = getenv("XDG_CACHE_HOME")) && *e == '/') {
        suffix = "/libka";
    } else if ((e = getenv("HOME")) && *e) {
        suffix = "/.cache/libka";
    } else {
        snprintf(why, wlen, "no directory: KA_CACHE_DIR, XDG_CACHE_HOME and HOME are unset");
        return KC_NO_DIR;
    }
    size_t n = strlen(e) + strlen(suffix);
    /* Room for "/<32 hex digits>.tmp.XXXXXX" after it, within PATH_MAX. */
    if (n + 1 + 32 + 16 >= len) {
        snprintf(buf, len, "%.*s...", (int)(len > 64 ? len - 4 : 0), e);
        snprintf(why, wlen, "the directory's path is %zu bytes, over the %zu a cache directory may have", n,
                 len - 1 - 1 - 32 - 16);
        return KC_TOO_LONG;
    }
    snprintf(buf, len, "%s%s", e, suffix);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0; /* "dir/" -> "dir" */
    for (const char *p = buf; *p;) {
        size_t c = strcspn(p, "/");
        if (c > NAME_MAX) {
            snprintf(why, wlen, "a component of the directory's path is %zu bytes, over the %d a name may have", c,
                     NAME_MAX);
            return KC_NAME_TOO_LONG;
        }
        p += c;
        p += *p == '/';
    }
    return KC_USABLE;
}

/* A directory or file libka may trust: owned by the effective user, not
 * writable by group or others. */
static bool trusted(const struct stat *s) {
    return s->st_uid == geteuid() && !(s->st_mode & (S_IWGRP | S_IWOTH));
}

/* The directory in path checked, and made (mkdir -p, mode 0700 for each
 * directory made) when create; KC_USABLE, KC_ABSENT (only without create),
 * or why it cannot be used (the reason's text into why). */
static enum kc_why dir_ready(char *path, bool create, char *why, size_t wlen) {
    struct stat s;
    if (stat(path, &s) != 0) {
        if (errno != ENOENT) {
            snprintf(why, wlen, "%s: %s", path, strerror(errno));
            return KC_CANNOT_STAT;
        }
        if (!create) return KC_ABSENT;
        for (char *p = path + 1; *p; p++) {
            if (*p != '/') continue;
            *p = 0;
            int r = mkdir(path, 0700);
            int err = errno;
            if (r != 0 && err != EEXIST) {
                snprintf(why, wlen, "cannot make %s: %s", path, strerror(err));
                *p = '/';
                return KC_CANNOT_MAKE;
            }
            *p = '/';
        }
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            snprintf(why, wlen, "cannot make %s: %s", path, strerror(errno));
            return KC_CANNOT_MAKE;
        }
        if (stat(path, &s) != 0) {
            snprintf(why, wlen, "%s: %s", path, strerror(errno));
            return KC_CANNOT_STAT;
        }
    }
    if (!S_ISDIR(s.st_mode) || !trusted(&s)) {
        snprintf(why, wlen, "%s is not a directory owned by uid %u and writable only by it", path,
                 (unsigned)geteuid());
        return KC_UNTRUSTED;
    }
    return KC_USABLE;
}

/* The directory's path into path, checked (made if create); KC_USABLE or why not. */
static enum kc_why dir_check(bool create, char *path, size_t len, char *why, size_t wlen) {
    enum kc_why r = dir_path(path, len, why, wlen);
    return r != KC_USABLE ? r : dir_ready(path, create, why, wlen);
}

/* The usable directory's path into path (logging once why not); false if unusable or absent. */
static bool dir_use(bool create, char *path, size_t len) {
    if (!ka__kcache_enabled()) return false;
    char why[PATH_MAX + 128];
    enum kc_why r = dir_check(create, path, len, why, sizeof why);
    if (r == KC_USABLE) return true;
    if (r != KC_ABSENT) log_once(r, KA_LOG_WARN, why, "not used (builds compile as usual)");
    return false;
}

/* "<dir>/<hex>" into path (dir checked, made if create); false if unusable. */
static bool entry_path(const ka__kcache_key *key, bool create, char *path, size_t len, size_t *dirlen) {
    if (!dir_use(create, path, len)) return false;
    size_t n = strlen(path);
    path[n] = '/';
    ka__kcache_key_hex(key, path + n + 1);
    *dirlen = n;
    return true;
}

/* ---- the bound ----------------------------------------------------------- */
#define KCACHE_DEFAULT_MAX ((uint64_t)1 << 30)

bool ka__kcache_parse_size(const char *s, uint64_t *out) {
    if (!s || *s < '0' || *s > '9') return false;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    unsigned shift = 0;
    switch (*s) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        s++;
        if (*s == 'i' && s[1] == 'B') s += 2;
        else if (*s == 'B') s++;
        if (v > (UINT64_MAX >> shift)) return false;
        v <<= shift;
    }
    if (*s) return false;
    *out = v;
    return true;
}

/* KA_CACHE_MAX_BYTES (read at each store): bytes, or with K, M, G or T
 * (binary multiples); 0 is no bound; unset or malformed, the default. */
static uint64_t max_bytes(bool log) {
    const char *e = getenv("KA_CACHE_MAX_BYTES");
    uint64_t v;
    if (!e || !*e) return KCACHE_DEFAULT_MAX;
    if (!ka__kcache_parse_size(e, &v)) {
        if (log) {
            char what[128];
            snprintf(what, sizeof what, "KA_CACHE_MAX_BYTES=\"%.64s\"", e);
            log_once(KC_MAX_BAD, KA_LOG_WARN, what,
                     "not a size (bytes, or a number with K, M, G or T): the default bound, 1 GiB, applies");
        }
        return KCACHE_DEFAULT_MAX;
    }
    if (v == 0 && log) log_once(KC_MAX_ZERO, KA_LOG_INFO, "KA_CACHE_MAX_BYTES=0", "no bound, nothing is evicted");
    return v;
}

static bool read_all(int fd, void *buf, size_t n) {
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static bool write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static uint64_t header_sum(const kc_header *h) { return XXH3_64bits(h, offsetof(kc_header, header_sum)); }

/* ---- load ---------------------------------------------------------------- */
/* A rejected entry is logged at WARN, or at DEBUG when quiet (the caller
 * already warned about it); *warned says whether this call warned. */
static ka_status load_entry(const ka__kcache_key *key, void **data, size_t *size, bool quiet, bool *warned) {
    *data = NULL;
    *size = 0;
    *warned = false;
    char path[PATH_MAX];
    size_t dirlen;
    if (!entry_path(key, false, path, sizeof path, &dirlen)) return KA_ERR_IO;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT) ka__log(KA_LOG_INFO, "kernel cache: cannot open %s: %s", path, strerror(errno));
        else ka__log(KA_LOG_DEBUG, "kernel cache: miss %s", path);
        return KA_ERR_IO;
    }
    const char *why = NULL;
    struct stat s;
    kc_header h;
    void *buf = NULL;
    size_t n = 0;
    if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) why = "not a regular file";
    else if (!trusted(&s)) why = "not owned by this user, or writable by group or others: ignored";
    else if ((uint64_t)s.st_size < sizeof h) why = "truncated (shorter than its header)";
    else if (!read_all(fd, &h, sizeof h)) why = "unreadable header";
    else if (memcmp(h.magic, KCACHE_MAGIC, 8) || h.format != KCACHE_FORMAT || h.header_size != sizeof h)
        why = "not a libka cache entry of this format";
    else if (h.header_sum != header_sum(&h)) why = "header checksum mismatch";
    else if (h.key_lo != key->lo || h.key_hi != key->hi) why = "key mismatch";
    else if (h.payload_size == 0 || h.payload_size > KCACHE_MAX_PAYLOAD) why = "bad payload size";
    else if ((uint64_t)s.st_size != sizeof h + h.payload_size) why = "truncated or padded (size disagrees with the header)";
    else if (!(buf = ka__alloc(n = (size_t)h.payload_size))) why = "out of memory for the payload";
    else if (!read_all(fd, buf, n)) why = "unreadable payload";
    else if (XXH3_64bits_withSeed(buf, n, key->lo) != h.payload_sum) why = "payload checksum mismatch";
    /* A hit makes the entry the most recently used: its mtime is what
     * eviction orders by (atime is not kept on noatime mounts). A failure
     * (a read-only file system) only costs recency. */
    if (!why) futimens(fd, NULL);
    close(fd);
    if (why) {
        if (buf) ka__free(buf, n);
        ka__log(quiet ? KA_LOG_DEBUG : KA_LOG_WARN, "kernel cache: %s: %s; compiling instead", path, why);
        *warned = !quiet;
        return KA_ERR_IO;
    }
    ka__log(KA_LOG_DEBUG, "kernel cache: hit %s (%zu bytes)", path, n);
    *data = buf;
    *size = n;
    return KA_OK;
}

/* ---- locks ---------------------------------------------------------------- */
/* "<hex>.lock" into name. */
static void lock_name(const ka__kcache_key *key, char name[38]) {
    ka__kcache_key_hex(key, name);
    memcpy(name + 32, ".lock", 6);
}

/* Whether fd is the file dfd/name names now. */
static bool still_named(int fd, int dfd, const char *name) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Lock files are unlinked by their holder while it holds the lock, so one
 * that was waited for may be gone (or replaced) once locked: then lock again
 * what the name holds now. Bounded, so that a pathological churn of other
 * holders cannot keep one builder here; it then compiles unlocked. */
#define KCACHE_LOCK_TRIES 1000

/* The entry's lock, blocking while another holder compiles; -1 when the
 * directory is unusable or the lock cannot be had (then: compile unlocked).
 * *dir_out: the directory, open while the lock is held. */
static int lock_entry(const ka__kcache_key *key, int *dir_out) {
    char path[PATH_MAX], name[38];
    if (!dir_use(true, path, sizeof path)) return -1;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        ka__log(KA_LOG_INFO, "kernel cache: cannot open %s: %s; compiling without its lock", path, strerror(errno));
        return -1;
    }
    lock_name(key, name);
    for (int tries = 0; tries < KCACHE_LOCK_TRIES; tries++) {
        int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            ka__log(KA_LOG_INFO, "kernel cache: cannot open %s/%s: %s; compiling without it", path, name,
                    strerror(errno));
            break;
        }
        int r;
        while ((r = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
        }
        if (r != 0) {
            ka__log(KA_LOG_INFO, "kernel cache: cannot lock %s/%s: %s; compiling without it", path, name,
                    strerror(errno));
            close(fd);
            break;
        }
        if (still_named(fd, dfd, name)) {
            *dir_out = dfd;
            return fd;
        }
        close(fd); /* its holder unlinked it: the entry is likely stored now */
    }
    close(dfd);
    return -1;
}

void ka__kcache_unlock(ka__kcache_key *key) {
    if (key->lock < 0) return;
    /* Unlinked while still held: a builder waiting on this file finds it
     * gone once it gets it, and locks the name afresh. */
    char name[38];
    lock_name(key, name);
    if (still_named(key->lock, key->dir, name)) unlinkat(key->dir, name, 0);
    close(key->lock); /* the open file's last descriptor: the flock goes with it */
    close(key->dir);
    key->lock = -1;
    key->dir = -1;
}

/* Removes dfd/name, a lock file, when nobody holds it (a builder holding it
 * removes it itself): true when removed or already gone. */
static bool remove_idle_lock(int dfd, const char *name) {
    int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return errno == ENOENT;
    bool gone = false;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        struct stat s;
        if (!still_named(fd, dfd, name)) gone = fstatat(dfd, name, &s, AT_SYMLINK_NOFOLLOW) != 0;
        else gone = unlinkat(dfd, name, 0) == 0 || errno == ENOENT;
    }
    close(fd);
    return gone;
}

ka_status ka__kcache_load(ka__kcache_key *key, void **data, size_t *size) {
    bool warned, again;
    if (load_entry(key, data, size, false, &warned) == KA_OK) return KA_OK;
    if (!ka__kcache_enabled()) return KA_ERR_IO;
    if (key->lock < 0 && (key->lock = lock_entry(key, &key->dir)) < 0) return KA_ERR_IO;
    /* Whoever held the lock may have stored the entry meanwhile; what is
     * still damaged was reported by the first look. */
    if (load_entry(key, data, size, warned, &again) != KA_OK) return KA_ERR_IO; /* ours to compile; the lock stays */
    ka__kcache_unlock(key);
    return KA_OK;
}

/* ---- the directory's contents --------------------------------------------- */
static bool is_hex32(const char *n) {
    for (int i = 0; i < 32; i++)
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f'))) return false;
    return true;
}

/* What libka keeps in its directory: "<hex>" entries, "<hex>.lock" lock
 * files, "<hex>.tmp.XXXXXX" temporary files; anything else is not libka's. */
enum kc_kind { KC_OTHER, KC_ENTRY, KC_LOCK, KC_TEMP };
static enum kc_kind kind_of(const char *n) {
    size_t len = strlen(n);
    if (len < 32 || !is_hex32(n)) return KC_OTHER;
    if (len == 32) return KC_ENTRY;
    if (!strcmp(n + 32, ".lock")) return KC_LOCK;
    if (len == 32 + 11 && !strncmp(n + 32, ".tmp.", 5)) return KC_TEMP;
    return KC_OTHER;
}

/* A temporary or lock file this old is left by a crash (a store writes its
 * temporary file for milliseconds; a lock is held for a compile): eviction
 * scans remove it. */
#define KCACHE_STALE_SECONDS 3600

typedef struct kc_item {
    char name[33];
    struct timespec mtime;
    uint64_t size;
} kc_item;

static int item_cmp(const void *a, const void *b) {
    const kc_item *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Scans the directory dfd (path for messages): removes stale temporary and
 * lock files, then least recently used entries (oldest mtime first) until
 * the entries' total is within bound, never `keep` (the entry just stored)
 * nor any entry used after it (or after the scan began, if `keep` is gone).
 * Returns the total left. Unlinking is safe under readers: one that opened
 * an entry reads on from its descriptor; one that comes later misses and
 * compiles. An entry another evicting process removed first is skipped. */
static uint64_t evict(int dfd, const char *path, const char *keep, uint64_t bound) {
    int d2 = dup(dfd);
    DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
    if (!d) {
        if (d2 >= 0) close(d2);
        ka__log(KA_LOG_INFO, "kernel cache: cannot read %s: %s; nothing evicted", path, strerror(errno));
        return 0;
    }
    rewinddir(d);
    kc_item *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    bool short_of_memory = false;
    time_t now = time(NULL);
    struct timespec scan_start;
    clock_gettime(CLOCK_REALTIME, &scan_start);
    struct dirent *e;
    while ((e = readdir(d))) {
        enum kc_kind k = kind_of(e->d_name);
        struct stat s;
        if (k == KC_OTHER || fstatat(dfd, e->d_name, &s, AT_SYMLINK_NOFOLLOW) != 0) continue;
        bool stale = s.st_mtime < now - KCACHE_STALE_SECONDS;
        if (k == KC_TEMP && stale && S_ISREG(s.st_mode)) {
            if (unlinkat(dfd, e->d_name, 0) == 0)
                ka__log(KA_LOG_INFO, "kernel cache: removed %s/%s, left by a crashed store", path, e->d_name);
        } else if (k == KC_LOCK && stale) {
            remove_idle_lock(dfd, e->d_name);
        } else if (k == KC_ENTRY && S_ISREG(s.st_mode) && trusted(&s)) {
            total += (uint64_t)s.st_size;
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 256;
                kc_item *bigger = ka__alloc(ncap * sizeof *bigger);
                if (!bigger) {
                    short_of_memory = true;
                    continue;
                }
                if (items) {
                    memcpy(bigger, items, n * sizeof *items);
                    ka__free(items, cap * sizeof *items);
                }
                items = bigger;
                cap = ncap;
            }
            memcpy(items[n].name, e->d_name, 33);
            items[n].mtime = s.st_mtim;
            items[n].size = (uint64_t)s.st_size;
            n++;
        }
    }
    closedir(d);
    if (short_of_memory) ka__log(KA_LOG_INFO, "kernel cache: out of memory listing %s; evicting among %zu entries", path, n);
    if (total > bound && n) {
        qsort(items, n, sizeof *items, item_cmp);
        /* Entries stored or used at or after `keep` belong to concurrent
         * builders: evicting them would let two racing scans empty the
         * directory. The newest entry thus always survives. */
        kc_item newer = {.mtime = scan_start};
        for (size_t i = 0; i < n; i++)
            if (!strcmp(items[i].name, keep)) newer = items[i];
        size_t evicted = 0;
        for (size_t i = 0; i < n && total > bound; i++) {
            if (item_cmp(&items[i], &newer) >= 0 || !strcmp(items[i].name, keep)) break;
            if (unlinkat(dfd, items[i].name, 0) == 0 || errno == ENOENT) {
                total -= items[i].size;
                evicted++;
                ka__log(KA_LOG_DEBUG, "kernel cache: evicted %s/%s (%llu bytes)", path, items[i].name,
                        (unsigned long long)items[i].size);
            }
        }
        ka__log(KA_LOG_INFO, "kernel cache: %s over its bound of %llu bytes: %zu least recently used entries "
                "evicted, %llu bytes left", path, (unsigned long long)bound, evicted, (unsigned long long)total);
    }
    if (items) ka__free(items, cap * sizeof *items);
    return total;
}

/* What this process believes the directory holds, so that a store scans
 * only when it may have taken the directory over its bound: after a scan,
 * the total it left; plus each store's size since. The first store into a
 * directory (or under another bound) scans. Other processes' stores are not
 * seen until one of them scans. */
static struct {
    pthread_mutex_t mu;
    bool known;
    dev_t dev;
    ino_t ino;
    uint64_t bound, bytes;
} estimate = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void bound_directory(int dfd, const char *path, const char *keep, uint64_t stored) {
    uint64_t bound = max_bytes(true);
    struct stat s;
    if (bound == 0 || fstat(dfd, &s) != 0) return;
    pthread_mutex_lock(&estimate.mu);
    bool same = estimate.known && estimate.dev == s.st_dev && estimate.ino == s.st_ino && estimate.bound == bound;
    if (same) estimate.bytes += stored;
    bool scan = !same || estimate.bytes > bound;
    pthread_mutex_unlock(&estimate.mu);
    if (!scan) return;
    uint64_t left = evict(dfd, path, keep, bound);
    pthread_mutex_lock(&estimate.mu);
    estimate.known = true;
    estimate.dev = s.st_dev;
    estimate.ino = s.st_ino;
    estimate.bound = bound;
    estimate.bytes = left;
    pthread_mutex_unlock(&estimate.mu);
}

/* ---- store --------------------------------------------------------------- */
static void store_entry(const ka__kcache_key *key, const void *data, size_t size) {
    if (!data || size == 0) return;
    if ((uint64_t)size > KCACHE_MAX_PAYLOAD) {
        ka__log(KA_LOG_INFO, "kernel cache: a %zu-byte binary is over the %llu-byte limit: not stored", size,
                (unsigned long long)KCACHE_MAX_PAYLOAD);
        return;
    }
    char path[PATH_MAX], tmp[PATH_MAX];
    size_t dirlen;
    if (!entry_path(key, true, path, sizeof path, &dirlen)) return;
    struct stat s;
    if (lstat(path, &s) == 0 && (!S_ISREG(s.st_mode) || !trusted(&s))) {
        ka__log(KA_LOG_WARN, "kernel cache: %s is not a file owned by this user and writable only by it: left alone", path);
        return;
    }
    size_t plen = strlen(path); /* dir_path left room for the suffix */
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", 12);
    int fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
    if (fd < 0) {
        path[dirlen] = 0;
        ka__log(KA_LOG_INFO, "kernel cache: cannot write in %s: %s", path, strerror(errno));
        return;
    }
    kc_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, KCACHE_MAGIC, 8);
    h.format = KCACHE_FORMAT;
    h.header_size = sizeof h;
    h.payload_size = size;
    h.key_lo = key->lo;
    h.key_hi = key->hi;
    h.payload_sum = XXH3_64bits_withSeed(data, size, key->lo);
    h.header_sum = header_sum(&h);
    const char *why = NULL;
    if (!write_all(fd, &h, sizeof h) || !write_all(fd, data, size)) why = "write";
    else if (fsync(fd) != 0) why = "fsync";
    int err = errno;
    if (close(fd) != 0 && !why) why = "close", err = errno;
    if (!why && rename(tmp, path) != 0) why = "rename", err = errno;
    if (why) {
        unlink(tmp);
        ka__log(KA_LOG_INFO, "kernel cache: storing %s failed (%s: %s)", path, why, strerror(err));
        return;
    }
    ka__log(KA_LOG_DEBUG, "kernel cache: stored %s (%zu bytes)", path, size);
    /* The rename itself durable: fsync the directory (failure only costs durability). */
    path[dirlen] = 0;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        bound_directory(dfd, path, path + dirlen + 1, sizeof h + size);
        close(dfd);
    }
}

void ka__kcache_store(ka__kcache_key *key, const void *data, size_t size) {
    store_entry(key, data, size);
    ka__kcache_unlock(key);
}

/* ---- ka_cache_get_info, ka_cache_clear ------------------------------------ */
ka_status ka_cache_get_info(ka_cache_info *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    memset(out, 0, sizeof *out);
    out->max_bytes = max_bytes(false);
    enum kc_why r = dir_check(false, out->dir, sizeof out->dir, out->reason, sizeof out->reason);
    if (r != KC_USABLE && r != KC_ABSENT) {
        if (r == KC_NO_DIR) out->dir[0] = 0;
        out->state = KA_CACHE_UNUSABLE;
        return KA_OK;
    }
    if (!ka__kcache_enabled()) {
        out->state = KA_CACHE_OFF;
        snprintf(out->reason, sizeof out->reason, "turned off by KA_CACHE=%s", getenv("KA_CACHE"));
    }
    if (r == KC_ABSENT) return KA_OK;
    DIR *d = opendir(out->dir);
    if (!d) {
        out->state = KA_CACHE_UNUSABLE;
        snprintf(out->reason, sizeof out->reason, "cannot read the directory: %s", strerror(errno));
        return KA_OK;
    }
    int dfd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat s;
        enum kc_kind k = kind_of(e->d_name);
        if (k == KC_OTHER || fstatat(dfd, e->d_name, &s, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (k == KC_ENTRY && S_ISREG(s.st_mode)) {
            out->entries++;
            out->bytes += (uint64_t)s.st_size;
        }
        out->locks += k == KC_LOCK;
        out->temps += k == KC_TEMP;
    }
    closedir(d);
    return KA_OK;
}

ka_status ka_cache_clear(uint64_t *removed) {
    KA__ENTRY();
    if (removed) *removed = 0;
    char path[PATH_MAX], why[PATH_MAX + 128];
    enum kc_why r = dir_check(false, path, sizeof path, why, sizeof why);
    if (r == KC_ABSENT) return KA_OK;
    if (r != KC_USABLE) return ka__fail(KA_ERR_IO, "%s", why);
    DIR *d = opendir(path);
    if (!d) return ka__fail(KA_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    int dfd = dirfd(d);
    uint64_t n = 0, busy = 0, failed = 0;
    int err = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        enum kc_kind k = kind_of(e->d_name);
        if (k == KC_OTHER) continue;
        if (k == KC_LOCK) {
            if (remove_idle_lock(dfd, e->d_name)) n++;
            else busy++; /* held: its builder removes it when done */
        } else if (unlinkat(dfd, e->d_name, 0) == 0) {
            n++;
        } else if (errno != ENOENT) {
            failed++;
            err = errno;
        }
    }
    closedir(d);
    if (removed) *removed = n;
    ka__log(KA_LOG_INFO, "kernel cache: cleared %s: %llu files removed, %llu locks in use left", path,
            (unsigned long long)n, (unsigned long long)busy);
    if (failed)
        return ka__fail(KA_ERR_IO, "%llu files in %s could not be removed: %s",
                        (unsigned long long)failed, path, strerror(err));
    return KA_OK;
}
