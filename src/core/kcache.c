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
 * each other too, and a process that dies releases it. Lock files stay
 * (unlinking one while another process waits on it would let two hold
 * "the" lock); they are empty.
 *
 * The directory is used only when it is a directory owned by the effective
 * user and not writable by group or others; an entry likewise (else it is
 * neither loaded nor replaced). Every failure here means "compile normally":
 * nothing is reported to the caller, details go to the logger. No printing;
 * memory through ka__alloc. */
#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset_withSeed(&st, 0x6b61636163686531ull); /* "kacache1" */
    uint32_t fmt = KCACHE_FORMAT;
    XXH3_128bits_update(&st, &fmt, sizeof fmt);
    put_str(&st, KA_VERSION_STRING);
    put_str(&st, d->ops->name);
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
/* The cache directory's path into buf; false when none can be named. */
static bool dir_path(char *buf, size_t len) {
    const char *e = getenv("KA_CACHE_DIR");
    int n;
    if (e && *e) n = snprintf(buf, len, "%s", e);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e == '/') n = snprintf(buf, len, "%s/libka", e);
    else if ((e = getenv("HOME")) && *e) n = snprintf(buf, len, "%s/.cache/libka", e);
    else return false;
    if (n <= 0 || (size_t)n >= len) return false;
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0; /* "dir/" -> "dir" */
    return true;
}

/* A directory or file libka may trust: owned by the effective user, not
 * writable by group or others. */
static bool trusted(const struct stat *s) {
    return s->st_uid == geteuid() && !(s->st_mode & (S_IWGRP | S_IWOTH));
}

/* mkdir -p with mode 0700 for each directory made; then checks the leaf. */
static bool dir_ready(char *path, bool create) {
    struct stat s;
    if (stat(path, &s) != 0) {
        if (errno != ENOENT || !create) return false;
        for (char *p = path + 1; *p; p++) {
            if (*p != '/') continue;
            *p = 0;
            int r = mkdir(path, 0700);
            int err = errno;
            *p = '/';
            if (r != 0 && err != EEXIST) {
                ka__log(KA_LOG_INFO, "kernel cache: cannot make %s: %s", path, strerror(err));
                return false;
            }
        }
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            ka__log(KA_LOG_INFO, "kernel cache: cannot make %s: %s", path, strerror(errno));
            return false;
        }
        if (stat(path, &s) != 0) return false;
    }
    if (!S_ISDIR(s.st_mode) || !trusted(&s)) {
        ka__log(KA_LOG_WARN, "kernel cache: %s ignored: not a directory owned by uid %u and writable only by it",
                path, (unsigned)geteuid());
        return false;
    }
    return true;
}

/* "<dir>/<hex>" into path (dir checked, made if create); false if unusable. */
static bool entry_path(const ka__kcache_key *key, bool create, char *path, size_t len, size_t *dirlen) {
    if (!ka__kcache_enabled() || !dir_path(path, len)) return false;
    size_t n = strlen(path);
    if (n + 1 + 32 + 16 >= len) return false; /* room for "/<hex>.tmp.XXXXXX" */
    if (!dir_ready(path, create)) return false;
    path[n] = '/';
    ka__kcache_key_hex(key, path + n + 1);
    *dirlen = n;
    return true;
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
static ka_status load_entry(const ka__kcache_key *key, void **data, size_t *size) {
    *data = NULL;
    *size = 0;
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
    close(fd);
    if (why) {
        if (buf) ka__free(buf, n);
        ka__log(KA_LOG_WARN, "kernel cache: %s: %s; compiling instead", path, why);
        return KA_ERR_IO;
    }
    ka__log(KA_LOG_DEBUG, "kernel cache: hit %s (%zu bytes)", path, n);
    *data = buf;
    *size = n;
    return KA_OK;
}

/* The entry's lock, blocking while another holder compiles; -1 when the
 * directory is unusable or the lock cannot be had (then: compile unlocked). */
static int lock_entry(const ka__kcache_key *key) {
    char path[PATH_MAX];
    size_t dirlen;
    if (!entry_path(key, true, path, sizeof path, &dirlen)) return -1;
    memcpy(path + strlen(path), ".lock", 6); /* entry_path left room for it */
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        ka__log(KA_LOG_INFO, "kernel cache: cannot open %s: %s; compiling without it", path, strerror(errno));
        return -1;
    }
    int r;
    while ((r = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (r != 0) {
        ka__log(KA_LOG_INFO, "kernel cache: cannot lock %s: %s; compiling without it", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

void ka__kcache_unlock(ka__kcache_key *key) {
    if (key->lock < 0) return;
    close(key->lock); /* the open file's last descriptor: the flock goes with it */
    key->lock = -1;
}

ka_status ka__kcache_load(ka__kcache_key *key, void **data, size_t *size) {
    if (load_entry(key, data, size) == KA_OK) return KA_OK;
    if (!ka__kcache_enabled()) return KA_ERR_IO;
    if (key->lock < 0 && (key->lock = lock_entry(key)) < 0) return KA_ERR_IO;
    /* Whoever held the lock may have stored the entry meanwhile. */
    if (load_entry(key, data, size) != KA_OK) return KA_ERR_IO; /* ours to compile; the lock stays */
    ka__kcache_unlock(key);
    return KA_OK;
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
    size_t plen = strlen(path); /* entry_path left room for the suffix */
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
    /* The rename itself durable: fsync the directory (failure only costs durability). */
    path[dirlen] = 0;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    path[dirlen] = '/';
    ka__log(KA_LOG_DEBUG, "kernel cache: stored %s (%zu bytes)", path, size);
}

void ka__kcache_store(ka__kcache_key *key, const void *data, size_t size) {
    store_entry(key, data, size);
    ka__kcache_unlock(key);
}
