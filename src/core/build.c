/* The build pipeline every back-end shares: the source composed (prelude,
 * #line, the user's source as the back-end rewrites it, its appendix), the
 * persistent kernel cache's key, lock, load and store (kcache.c), and the
 * back-end's steps in between (backend.h, "builds"): build_target, then a
 * cached binary through load, or compile, load when compile gave no module,
 * and store. The retry without the appendix (PoCL's size probes) and the
 * lazy build for the alternate target (PoCL's `basic`) are here too. */
#include "ka_internal.h"
#include "backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The variant's defines (its head: #define lines, as -D options would come
 * before everything), prelude, "\n#line 1[ \"file\"]\n", the user's source
 * (rewritten), and when append the appendix under its own #line,
 * NUL-terminated, one allocation of *len bytes. *appended: the appendix was
 * not empty. The file is the program's name (ka_build_options.name), so logs
 * name it and not a driver's temporary file; else the back-end's
 * source_file. */
static ka_status compose(const ka__program *p, const ka__variant *v, bool append, char **out, size_t *len,
                         bool *appended) {
    const ka__device *d = p->dev;
    char aline[160];
    const char *file = p->name ? p->name : ka__be_source_file(d);
    static const char l0[] = "\n#line 1 \"", l1[] = "\"\n", bare[] = "\n#line 1\n";
    size_t fl = file ? strlen(file) : 0, ll = file ? sizeof l0 - 1 + fl + sizeof l1 - 1 : sizeof bare - 1;
    size_t hlen = v->head ? strlen(v->head) : 0, plen = strlen(ka__be_prelude(d));
    size_t ulen = ka__be_source_rewrite(p, NULL);
    size_t alen = append ? ka__be_source_append(p, NULL) : 0;
    int al = alen ? snprintf(aline, sizeof aline, "\n#line 1 \"%s\"\n", ka__be_append_file(d)) : 0;
    if (al < 0 || (size_t)al >= sizeof aline)
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "the %s back-end's file names are too long", ka__be_name(d));
    size_t total = hlen + plen + ll + ulen + (size_t)al + alen + 1;
    char *w = ka__alloc(total);
    if (!w) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    *out = w;
    *len = total;
    *appended = alen != 0;
    if (hlen) memcpy(w, v->head, hlen);
    w += hlen;
    memcpy(w, ka__be_prelude(d), plen);
    w += plen;
    if (file) {
        memcpy(w, l0, sizeof l0 - 1);
        memcpy(w += sizeof l0 - 1, file, fl);
        memcpy(w += fl, l1, sizeof l1 - 1);
        w += sizeof l1 - 1;
    } else {
        memcpy(w, bare, sizeof bare - 1);
        w += sizeof bare - 1;
    }
    ka__be_source_rewrite(p, w);
    w += ulen;
    if (alen) {
        memcpy(w, aline, (size_t)al);
        ka__be_source_append(p, w += al);
        w += alen;
    }
    *w = 0;
    return KA_OK;
}

/* One build of v for target into *module: the cache's binary when it loads,
 * else a compile (stored when the cache is on and the build cacheable). The
 * cache entry's lock is held from a miss until the store, or the failure. */
static ka_status build_once(ka__program *p, ka__variant *v, uint32_t target, bool append, bool *appended,
                            void **module) {
    ka__build b;
    memset(&b, 0, sizeof b);
    b.prog = p;
    b.var = v;
    b.target = target;
    b.options = v->options;
    b.cache = true;
    *module = NULL;
    *appended = false;
    ka_status st = ka__be_build_target(&b);
    if (st != KA_OK) return st;
    if (p->includes) b.cache = false; /* the key cannot see the included files */
    char *src = NULL;
    size_t slen = 0;
    if ((st = compose(p, v, append, &src, &slen, appended)) != KA_OK) return st;
    b.source = src;
    ka__kcache_key key = {.lock = -1, .dir = -1};
    bool cache = b.cache && ka__kcache_enabled();
    void *bin = NULL;
    size_t n = 0;
    if (cache) {
        ka__kcache_key_make(p->dev, b.target_name, src, v->options, &key);
        if (ka__kcache_load(&key, &bin, &n) == KA_OK) {
            b.from_cache = true;
            if (ka__be_load(&b, bin, n, module) == KA_OK)
                atomic_fetch_add_explicit(&p->cache_hits, 1, memory_order_relaxed);
            else
                *module = NULL;
            if (!b.kept) ka__free(bin, n);
            bin = NULL;
            b.from_cache = b.kept = false;
        }
    }
    if (!*module) {
        b.want_binary = cache;
        n = 0;
        st = ka__be_compile(&b, &bin, &n, module);
        if (st == KA_OK && !*module)
            st = bin ? ka__be_load(&b, bin, n, module)
                     : ka__fail(KA_ERR_BUILD_FAILED, "the %s back-end compiled neither a module nor a binary",
                                ka__be_name(p->dev));
        /* Stored once loaded: a binary the driver refuses is not kept. */
        if (st == KA_OK && cache && bin) ka__kcache_store(&key, bin, n);
        if (bin && !b.kept) ka__free(bin, n);
    }
    ka__kcache_unlock(&key); /* a miss's lock, when not stored */
    ka__free(src, slen);
    if (st != KA_OK) *module = NULL; /* the hooks left nothing behind */
    return st;
}

ka_status ka__build_variant(ka__program *p, ka__variant *v) {
    bool appended;
    ka_status st = build_once(p, v, KA__TARGET_DEVICE, true, &appended, &v->native);
    /* The appendix refused by the compiler (PoCL: a type it cannot take
     * sizeof of where the probes stand): the program without it, whose log
     * is then the user's own. */
    if (st != KA_OK && appended && st != KA_ERR_OUT_OF_MEMORY && strstr(ka_last_error(), ka__be_append_file(p->dev))) {
        v->plain = true;
        st = build_once(p, v, KA__TARGET_DEVICE, false, &appended, &v->native);
    }
    return st;
}

ka_status ka__build_alt(ka__program *p, ka__variant *v, void **module) {
    bool appended;
    pthread_mutex_lock(&v->alt_lock);
    ka_status st = v->alt ? KA_OK : build_once(p, v, KA__TARGET_ALT, !v->plain, &appended, &v->alt);
    *module = v->alt;
    pthread_mutex_unlock(&v->alt_lock);
    return st;
}

ka_status ka__build_fail(const ka__build *b, ka_status st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!b->from_cache) return ka__fail(st, "%s", msg);
    ka__log(KA_LOG_WARN, "kernel cache: a cached binary did not load (%s); compiling", msg);
    return st;
}

void ka__build_release(ka__program *p, ka__variant *v) {
    if (v->native) ka__be_module_release(p, v->native, KA__TARGET_DEVICE);
    if (v->alt) ka__be_module_release(p, v->alt, KA__TARGET_ALT);
    v->native = v->alt = NULL;
}
