/* Programs, their build variants, and the compiled-kernel table.
 *
 * A program keeps its source; each distinct configuration that changes the
 * compiled code (static work-group or ndrange, sub-group size, defines) is a
 * variant, one native build. Kernels sit in an open-addressing table keyed by
 * a hash of (name, normalized configuration): a lookup of a known pair hashes
 * a small struct on the stack and allocates nothing. */
#include "ka_internal.h"
#include "backend.h"
#include "kdecl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

uint64_t ka__hash(const void *p, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(p, n, seed); }

/* Whether a word of an option list would split or need quotes. */
static bool bad_path(const char *d) {
    for (; *d; d++)
        if (*d == ' ' || *d == '\t' || *d == '\n' || *d == '"' || *d == '\'') return true;
    return false;
}

/* Options for the default variant: user options, -I include directories
 * (extra_dir first, when not NULL), and -DKA__ASSERT when the source calls
 * ka_assert (the kernels then take the assertion record:
 * include/ka_kernel_cl.h). The defines are lines of the source (make_head). */
static char *compose_options(const ka_build_options *o, bool asserts, const char *extra_dir) {
    static const char assert_opt[] = "-DKA__ASSERT ";
    size_t len = 1 + (asserts ? sizeof assert_opt : 0) + (extra_dir ? strlen(extra_dir) + 4 : 0);
    if (o && o->options) len += strlen(o->options) + 1;
    for (uint32_t i = 0; o && i < o->num_include_dirs; i++) len += strlen(o->include_dirs[i]) + 4; /* "-I " DIR " " */
    char *s = ka__alloc(len);
    if (!s) return NULL;
    s[0] = 0;
    if (asserts) strcat(s, assert_opt);
    if (o && o->options) strcat(strcat(s, o->options), " ");
    if (extra_dir) strcat(strcat(strcat(s, "-I "), extra_dir), " ");
    for (uint32_t i = 0; o && i < o->num_include_dirs; i++) strcat(strcat(strcat(s, "-I "), o->include_dirs[i]), " ");
    return s;
}

/* ---- defines: #define lines before the prelude ------------------------------
 * A define given as an option would be split at its blanks by one compiler
 * and refused by another; as a line of the source, its whole value is the
 * macro's replacement on every back-end. */

static bool ident_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static const char *skip_blanks(const char *s, const char *e) {
    while (s < e && (*s == ' ' || *s == '\t')) s++;
    return s;
}

/* Past a macro's name in [s, e) as -D takes it: an identifier, or a
 * function-like macro's with its parameters ("F(a, b)", "G(x, ...)", "H()");
 * NULL when [s, e) does not start with one. */
static const char *macro_name_end(const char *s, const char *e) {
    if (s == e || !ident_start(*s)) return NULL;
    while (s < e && ka__ident_char(*s)) s++;
    if (s == e || *s != '(') return s;
    s = skip_blanks(s + 1, e);
    if (s < e && *s == ')') return s + 1;
    for (;;) {
        if (e - s >= 3 && !memcmp(s, "...", 3)) s += 3;
        else if (s < e && ident_start(*s)) while (s < e && ka__ident_char(*s)) s++;
        else return NULL;
        s = skip_blanks(s, e);
        if (s < e && *s == ')') return s + 1;
        if (s == e || *s != ',') return NULL;
        s = skip_blanks(s + 1, e);
    }
}

/* Why the define [d, d + n) cannot be a line of its own, NULL if it can: a
 * name that is not a macro's, a control character (a line break would end
 * the #define there), a trailing backslash (it would join the next line), a
 * comment left open (it would swallow the lines after). undef: "#undef NAME". */
static const char *define_fault(const char *d, size_t n, bool undef) {
    const char *e = d + n, *eq = memchr(d, '=', n), *ne = macro_name_end(d, eq ? eq : e);
    for (const char *c = d; c < e; c++)
        if ((unsigned char)*c < 32 && *c != '\t') return "it holds a line break or another control character";
    if (!ne || ne != (eq ? eq : e) || (undef && (eq || memchr(d, '(', n))))
        return undef ? "the name is not an identifier" : "it is not NAME, NAME=VALUE or NAME(PARAMS)=VALUE";
    const char *t = e; /* a splice may have blanks before its newline (GCC, Clang) */
    while (t > d && (t[-1] == ' ' || t[-1] == '\t')) t--;
    if ((t > d && t[-1] == '\\') || (t - d >= 3 && !memcmp(t - 3, "?" "?/", 3)))
        return "it ends with a backslash (or the trigraph ?" "?/), which would join the next line to it";
    for (const char *c = d; c + 1 < e; c++)
        if (c[0] == '/' && c[1] == '*') {
            const char *close = NULL;
            for (const char *x = c + 2; x + 1 < e && !close; x++) close = x[0] == '*' && x[1] == '/' ? x : NULL;
            if (!close) return "it opens a comment (/*) it does not close";
            c = close + 1;
        }
    return NULL;
}

/* The line of the define [d, d + n) at w (NULL: measured): "#define NAME
 * VALUE", VALUE 1 when none is given (as -D), or "#undef NAME"; its length. */
static size_t define_line(const char *d, size_t n, bool undef, char *w) {
    const char *eq = memchr(d, '=', n);
    size_t nl = eq ? (size_t)(eq - d) : n;
    const char *val = eq ? eq + 1 : "1";
    size_t vl = eq ? n - nl - 1 : 1;
    size_t len = undef ? 7 + n + 1 : 8 + nl + 1 + vl + 1;
    if (!w) return len;
    if (undef) {
        memcpy(w, "#undef ", 7);
        memcpy(w + 7, d, n);
    } else {
        memcpy(w, "#define ", 8);
        memcpy(w + 8, d, nl);
        w[8 + nl] = ' ';
        memcpy(w + 9 + nl, val, vl);
    }
    w[len - 1] = '\n';
    return len;
}

/* The lines of a configuration's defines string ("-DN=4 -D M -UX": words
 * separated by blanks) at w (NULL: measured, and checked); their length in *len. */
static ka_status config_lines(const char *cfg, char *w, size_t *len) {
    size_t at = 0;
    for (const char *s = skip_blanks(cfg, cfg + strlen(cfg)); *s;) {
        const char *word = s, *e = s;
        while (*e && *e != ' ' && *e != '\t') e++;
        bool opt = e - word >= 2 && word[0] == '-' && (word[1] == 'D' || word[1] == 'U'), undef = opt && word[1] == 'U';
        const char *d = word + 2;
        if (opt && e - word == 2) { /* "-D NAME": the next word */
            d = skip_blanks(e, e + strlen(e));
            for (e = d; *e && *e != ' ' && *e != '\t'; e++) {
            }
        }
        const char *why = !opt ? "it is not a -DNAME[=VALUE] or -UNAME option (blanks separate the options: a value "
                                 "cannot hold one)"
                        : d == e ? "a -D or -U without a name" : define_fault(d, (size_t)(e - d), undef);
        if (why)
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_kernel_config.defines \"%.200s\": '%.*s': %s", cfg,
                            (int)(e - word > 64 ? 64 : e - word), word, why);
        at += define_line(d, (size_t)(e - d), undef, w ? w + at : NULL);
        s = skip_blanks(e, e + strlen(e));
    }
    *len = at;
    return KA_OK;
}

/* The head of a build: prefix (NULL: none), then the lines of defs (n of
 * them) and of the configuration's string cfg (NULL: none), into *out, a new
 * string (NULL when empty). Every define is checked before anything is
 * allocated. */
static ka_status make_head(const char *prefix, const char *const *defs, uint32_t n, const char *cfg, char **out) {
    *out = NULL;
    size_t pl = prefix ? strlen(prefix) : 0, len = pl, cl = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *why = define_fault(defs[i], strlen(defs[i]), false);
        if (why)
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "ka_build_options.defines[%u] \"%.200s\": %s", i, defs[i], why);
        len += define_line(defs[i], strlen(defs[i]), false, NULL);
    }
    ka_status st = cfg ? config_lines(cfg, NULL, &cl) : KA_OK;
    if (st != KA_OK || len + cl == 0) return st;
    char *h = ka__alloc(len + cl + 1);
    if (!h) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    if (prefix) memcpy(h, prefix, pl);
    size_t at = pl;
    for (uint32_t i = 0; i < n; i++) at += define_line(defs[i], strlen(defs[i]), false, h + at);
    if (cfg) config_lines(cfg, h + len, &cl);
    h[len + cl] = 0;
    *out = h;
    return KA_OK;
}

/* The program's name as a #line file name: '"' and '\\' escaped, control
 * characters as '?'. */
static char *line_name(const char *name) {
    if (!name || !*name) name = "program";
    size_t n = 1;
    for (const char *s = name; *s; s++) n += *s == '"' || *s == '\\' ? 2 : 1;
    char *d = ka__alloc(n), *w = d;
    if (!d) return NULL;
    for (const char *s = name; *s; s++) {
        if (*s == '"' || *s == '\\') *w++ = '\\';
        *w++ = (unsigned char)*s < 32 ? '?' : *s;
    }
    *w = 0;
    return d;
}

/* The source line of position at (1-based). */
static unsigned line_of(const char *src, const char *at) {
    unsigned n = 1;
    for (const char *s = src; s < at; s++) n += *s == '\n';
    return n;
}

/* A line of the program's build log (p->log grows; the text stays NUL-terminated). */
static ka_status log_add(ka__program *p, const char *line) {
    size_t n = strlen(line), old = p->log ? p->log_len + 1 : 0, len = p->log_len + n + 1;
    char *l = ka__alloc(len + 1);
    if (!l) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    if (p->log) memcpy(l, p->log, p->log_len);
    memcpy(l + p->log_len, line, n);
    l[len - 1] = '\n';
    l[len] = 0;
    ka__free(p->log, old);
    p->log = l;
    p->log_len = len;
    return KA_OK;
}

/* What the build reads from each KA_KERNEL declaration of the source (kdecl.h,
 * textual): its KA_WORKGROUP, and a `return` that can skip a ka_barrier in
 * its body, which leaves the barrier's other work-items waiting on ones that
 * left (the group's result undefined): a warning in the build log and to
 * the logger; with KA_DEBUG=1 the build fails. */
static ka_status scan_kernels(ka__program *p) {
    const char *pos = p->source, *name;
    size_t nl;
    ka__kparam par[KA_MAX_ARGS];
    uint32_t n;
    while (ka__kdecl_next(&pos, &name, &nl, par, KA_MAX_ARGS, &n)) {
        uint32_t wg[3];
        const char *after, *b, *e;
        int r = ka__kdecl_workgroup(pos, wg, &after);
        if (r < 0)
            return ka__fail(KA_ERR_BUILD_FAILED,
                            "%s:%u: kernel '%.*s': KA_WORKGROUP takes three positive integer literals, "
                            "e.g. KA_WORKGROUP(64, 1, 1)",
                            p->name, line_of(p->source, after), (int)nl, name);
        bool dup = false;
        for (uint32_t i = 0; i < p->nwgdecl && !dup; i++) dup = p->wgdecl[i].len == nl && !memcmp(p->wgdecl[i].kname, name, nl);
        if (r > 0 && !dup) {
            struct ka__wgdecl *d = ka__alloc(sizeof *d * (p->nwgdecl + 1));
            if (!d) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
            if (p->nwgdecl) memcpy(d, p->wgdecl, sizeof *d * p->nwgdecl);
            ka__free(p->wgdecl, sizeof *d * p->nwgdecl);
            d[p->nwgdecl] = (struct ka__wgdecl){name, nl, {wg[0], wg[1], wg[2]}};
            p->wgdecl = d;
            p->nwgdecl++;
        }
        if (!ka__kdecl_body(after, &b, &e)) continue;
        pos = e;
        const char *ret = ka__kdecl_return_before_barrier(b, e);
        if (!ret) continue;
        char msg[512];
        snprintf(msg, sizeof msg,
                 "%s:%u: warning: kernel '%.*s': this `return` comes before a ka_barrier(): work-items that take it never "
                 "reach the barrier and the group's result is undefined; keep every work-item to the barrier and guard "
                 "the loads and stores instead (int live = ka_in_range(); ... if (live) ...)",
                 p->name, line_of(p->source, ret), (int)nl, name);
        ka_status st = log_add(p, msg);
        if (st != KA_OK) return st;
        if (ka__debug_enabled()) return ka__fail(KA_ERR_BUILD_FAILED, "KA_DEBUG=1: %s", msg);
        ka__warn("%s", msg);
    }
    return KA_OK;
}

/* Kernel name's KA_WORKGROUP, NULL if it declares none. */
static const uint32_t *declared_wg(const ka__program *p, const char *name) {
    size_t n = strlen(name);
    for (uint32_t i = 0; i < p->nwgdecl; i++)
        if (p->wgdecl[i].len == n && !memcmp(p->wgdecl[i].kname, name, n)) return p->wgdecl[i].wg;
    return NULL;
}

static void variant_free(ka__program *p, ka__variant *v);

static void program_free(ka__program *p) {
    while (p->variants) {
        ka__variant *n = p->variants->next;
        variant_free(p, p->variants);
        p->variants = n;
    }
    ka__strfree(p->source);
    ka__strfree(p->options);
    ka__strfree(p->head);
    ka__strfree(p->name);
    ka__free(p->log, p->log ? p->log_len + 1 : 0);
    ka__free(p->wgdecl, sizeof *p->wgdecl * p->nwgdecl);
    ka__free(p, sizeof *p);
}

static void variant_free(ka__program *p, ka__variant *v) {
    ka__build_release(p, v);
    pthread_mutex_destroy(&v->alt_lock);
    ka__strfree(v->options);
    ka__strfree(v->defines);
    ka__strfree(v->head);
    ka__free(v, sizeof *v);
}

static ka__variant *variant_find(ka__program *p, const ka__config_key *key, const char *defines) {
    for (ka__variant *v = p->variants; v; v = v->next)
        if (!memcmp(v->wg, key->wg, sizeof v->wg) && !memcmp(v->nd, key->nd, sizeof v->nd) && v->sg == key->sg &&
            v->defines_hash == key->defines_hash && !strcmp(v->defines ? v->defines : "", defines ? defines : ""))
            return v;
    return NULL;
}

static ka_status variant_build(ka__program *p, const ka__config_key *key, const char *defines, ka__variant **out) {
    ka__variant *v = ka__calloc(1, sizeof *v);
    if (!v) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(v->wg, key->wg, sizeof v->wg);
    memcpy(v->nd, key->nd, sizeof v->nd);
    v->sg = key->sg;
    v->defines_hash = key->defines_hash;
    pthread_mutex_init(&v->alt_lock, NULL);
    if (defines && *defines && !(v->defines = ka__strdup(defines))) {
        variant_free(p, v);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    ka_status st = make_head(p->head, NULL, 0, v->defines, &v->head);
    if (st != KA_OK) {
        variant_free(p, v);
        return st;
    }
    char extra[512];
    int n = snprintf(extra, sizeof extra, " -DKA_SUBGROUP_SIZE=%u", key->sg);
    if (key->wg[0])
        n += snprintf(extra + n, sizeof extra - (size_t)n, " -DKA_STATIC_WG0=%u -DKA_STATIC_WG1=%u -DKA_STATIC_WG2=%u",
                      key->wg[0], key->wg[1], key->wg[2]);
    if (key->nd[0])
        snprintf(extra + n, sizeof extra - (size_t)n, " -DKA_STATIC_ND0=%llu -DKA_STATIC_ND1=%llu -DKA_STATIC_ND2=%llu",
                 (unsigned long long)key->nd[0], (unsigned long long)key->nd[1], (unsigned long long)key->nd[2]);
    /* The back-end's own options first (OpenCL: -cl-std, -cl-kernel-arg-info). */
    const char *base = ka__be_build_options(p->dev);
    size_t len = (base ? strlen(base) + 1 : 0) + strlen(p->options) + strlen(extra) + 1;
    if (!(v->options = ka__alloc(len))) {
        variant_free(p, v);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    snprintf(v->options, len, "%s%s%s%s", base ? base : "", base ? " " : "", p->options, extra);
    st = ka__build_variant(p, v);
    if (st != KA_OK) {
        variant_free(p, v);
        return st;
    }
    p->builds++;
    v->next = p->variants;
    p->variants = v;
    *out = v;
    return KA_OK;
}

static ka_status normalize(const ka__device *d, const ka_kernel_config *cfg, ka__config_key *key) {
    memset(key, 0, sizeof *key); /* padding too: the key is hashed as bytes */
    key->sg = d->info.subgroup_width;
    if (!cfg) return KA_OK;
    if (cfg->workgroup[0] | cfg->workgroup[1] | cfg->workgroup[2]) {
        uint64_t prod = 1;
        for (int i = 0; i < 3; i++) {
            key->wg[i] = cfg->workgroup[i] ? cfg->workgroup[i] : 1;
            prod *= key->wg[i];
            if (d->info.max_workgroup[i] && key->wg[i] > d->info.max_workgroup[i])
                return ka__fail(KA_ERR_INVALID_WORKGROUP, "static workgroup[%d] = %u exceeds the device's %u",
                                i, key->wg[i], d->info.max_workgroup[i]);
        }
        if (d->info.max_workgroup_size && prod > d->info.max_workgroup_size)
            return ka__fail(KA_ERR_INVALID_WORKGROUP, "static work-group of %llu items exceeds the device's %u",
                            (unsigned long long)prod, d->info.max_workgroup_size);
    }
    if (cfg->ndrange[0] | cfg->ndrange[1] | cfg->ndrange[2])
        for (int i = 0; i < 3; i++) key->nd[i] = cfg->ndrange[i] ? cfg->ndrange[i] : 1;
    if (cfg->subgroup_size) {
        bool ok = false;
        for (uint32_t i = 0; i < d->info.num_subgroup_sizes; i++) ok |= d->info.subgroup_sizes[i] == cfg->subgroup_size;
        if (!ok) {
            char list[96] = "none";
            int n = 0;
            for (uint32_t i = 0; i < d->info.num_subgroup_sizes && n < 80; i++)
                n += snprintf(list + n, sizeof list - (size_t)n, "%s%u", i ? ", " : "", d->info.subgroup_sizes[i]);
            return ka__fail(KA_ERR_UNSUPPORTED, "sub-group size %u not supported by %s (sizes: %s)",
                            cfg->subgroup_size, d->info.name, list);
        }
        key->sg = cfg->subgroup_size;
    }
    if (cfg->defines && *cfg->defines) key->defines_hash = ka__hash(cfg->defines, strlen(cfg->defines), 1) | 1;
    return KA_OK;
}

static ka_status program_build(ka_device dev, const char *source, const ka_build_options *opts,
                               const char *extra_dir, ka_program *out) {
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    out->id = 0;
    ka__device *d = ka__resolve(dev.id, KA__T_DEVICE);
    if (!d) return ka__fail_handle(KA__T_DEVICE, ka__call);
    if (!source) return ka__fail(KA_ERR_INVALID_ARGUMENT, "source is NULL");
    for (uint32_t i = 0; opts && i < opts->num_defines; i++)
        if (!opts->defines || !opts->defines[i] || !*opts->defines[i])
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "define %u is NULL or empty", i);
    for (uint32_t i = 0; opts && i < opts->num_include_dirs; i++) {
        if (!opts->include_dirs || !opts->include_dirs[i] || !*opts->include_dirs[i])
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "include directory %u is NULL or empty", i);
        if (bad_path(opts->include_dirs[i]))
            return ka__fail(KA_ERR_INVALID_ARGUMENT, "include directory '%s' has a blank or a quote",
                            opts->include_dirs[i]);
    }
    ka__program *p = ka__calloc(1, sizeof *p);
    if (!p) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    p->dev = d;
    ka_status st = KA_ERR_OUT_OF_MEMORY;
    p->asserts = ka__src_has_word(source, "ka_assert");
    p->includes = ka__src_has_include(source);
    if (!(p->source = ka__strdup(source)) || !(p->options = compose_options(opts, p->asserts, extra_dir)) ||
        !(p->name = line_name(opts ? opts->name : NULL))) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    if ((st = make_head(NULL, opts ? opts->defines : NULL, opts ? opts->num_defines : 0, NULL, &p->head)) != KA_OK)
        goto fail;
    if ((st = scan_kernels(p)) != KA_OK) goto fail;
    ka__config_key key;
    normalize(d, NULL, &key);
    ka__variant *v;
    if ((st = variant_build(p, &key, NULL, &v)) != KA_OK) goto fail;
    pthread_mutex_init(&p->lock, NULL);
    p->id = ka__handle_new(KA__T_PROGRAM, p);
    if (!p->id) {
        pthread_mutex_destroy(&p->lock);
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for a handle");
        goto fail;
    }
    atomic_fetch_add(&d->live, 1);
    out->id = p->id;
    return KA_OK;
fail:
    program_free(p);
    return st;
}

ka_status ka_program_build(ka_device dev, const char *source, const ka_build_options *opts, ka_program *out) {
    KA__ENTRY();
    return program_build(dev, source, opts, NULL, out);
}

/* Kernel sources past this are refused (as `ka build` refuses them). */
#define KA__SOURCE_MAX ((size_t)16 << 20)

ka_status ka_program_build_file(ka_device dev, const char *path, const ka_build_options *opts, ka_program *out) {
    KA__ENTRY();
    if (out) out->id = 0;
    if (!path || !*path) return ka__fail(KA_ERR_INVALID_ARGUMENT, "path is NULL or empty");
    /* The file's directory, for #include "..." beside it, as absolute as path. */
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) : 1;
    char *dir = ka__alloc(dlen + 2);
    if (!dir) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    if (slash) memcpy(dir, path, dlen), dir[dlen] = 0;
    else strcpy(dir, ".");
    if (slash && dlen == 0) strcpy(dir, "/");
    ka_status st = KA_OK;
    char *text = NULL;
    size_t cap = 0;
    FILE *f = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        st = ka__fail(KA_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto out;
    }
    /* Checked before the open: opening a FIFO would wait for a writer. */
    if (!S_ISREG(sb.st_mode) || sb.st_size <= 0 || (uint64_t)sb.st_size > KA__SOURCE_MAX) {
        st = ka__fail(KA_ERR_IO, "'%s' is %s", path,
                      !S_ISREG(sb.st_mode) ? "not a regular file" : sb.st_size <= 0 ? "empty" : "over 16 MiB");
        goto out;
    }
    if (!(f = fopen(path, "rb"))) {
        st = ka__fail(KA_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto out;
    }
    cap = (size_t)sb.st_size + 1;
    if (!(text = ka__alloc(cap))) {
        st = ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for %zu bytes of '%s'", cap - 1, path);
        goto out;
    }
    size_t got = fread(text, 1, cap - 1, f);
    if (got != cap - 1 || memchr(text, 0, got)) {
        st = ka__fail(KA_ERR_IO, "'%s': %s", path, ferror(f) ? strerror(errno) : got != cap - 1 ? "changed while read" : "holds a NUL byte, not text");
        goto out;
    }
    text[got] = 0;
    /* The directory is an -I option only where an #include may need it: a
     * file without one builds from a directory of any name. */
    bool inc = ka__src_has_include(text);
    if (inc && bad_path(dir)) {
        st = ka__fail(KA_ERR_INVALID_ARGUMENT, "the directory of '%s' has a blank or a quote (an #include "
                      "cannot be searched there)", path);
        goto out;
    }
    ka_build_options o = opts ? *opts : (ka_build_options){0};
    if (!o.name) o.name = path;
    st = program_build(dev, text, &o, inc ? dir : NULL, out);
out:
    if (f) fclose(f);
    if (text) ka__free(text, cap);
    ka__free(dir, dlen + 2);
    return st;
}

static void kernel_free(ka__kernel *k) {
    if (k->native) ka__be_kernel_release(k);
    if (k->id) ka__handle_free(k->id);
    ka__free(k->sig, sizeof(ka__argsig) * (k->nargs ? k->nargs : 1));
    ka__free(k->fast_tag, sizeof(uint64_t) * (k->nargs ? k->nargs : 1));
    ka__strfree(k->name);
    ka__strfree(k->native_name);
    ka__free(k, sizeof *k);
}

ka_status ka_program_release(ka_program prog) {
    KA__ENTRY();
    ka__program *p = ka__resolve(prog.id, KA__T_PROGRAM);
    /* Retired first (a ka_kernel_get in another thread returns before the
     * program goes), then each kernel (launches of it return first). */
    if (!p || !ka__handle_retire(prog.id))
        return ka__fail_handle(KA__T_PROGRAM, __func__);
    ka__handle_free(p->id);
    for (uint32_t i = 0; i < p->cap; i++)
        if (p->table[i]) ka__handle_retire(p->table[i]->id);
    for (uint32_t i = 0; i < p->cap; i++)
        if (p->table[i]) kernel_free(p->table[i]);
    ka__free(p->table, sizeof(ka__kernel *) * p->cap);
    atomic_fetch_sub(&p->dev->live, 1);
    pthread_mutex_destroy(&p->lock);
    program_free(p);
    return KA_OK;
}

ka_status ka_program_build_count(ka_program prog, uint32_t *count) {
    KA__ENTRY();
    if (!count) return ka__fail(KA_ERR_INVALID_ARGUMENT, "count is NULL");
    KA__PIN(ka__program, p, ps, prog, KA__T_PROGRAM);
    pthread_mutex_lock(&p->lock);
    *count = p->builds;
    pthread_mutex_unlock(&p->lock);
    ka__unpin(ps);
    return KA_OK;
}

ka_status ka_program_build_log(ka_program prog, const char **log) {
    KA__ENTRY();
    if (!log) return ka__fail(KA_ERR_INVALID_ARGUMENT, "log is NULL");
    *log = "";
    KA__PIN(ka__program, p, ps, prog, KA__T_PROGRAM);
    if (p->log) *log = p->log;
    ka__unpin(ps);
    return KA_OK;
}

ka_status ka_program_cache_hits(ka_program prog, uint32_t *hits) {
    KA__ENTRY();
    if (!hits) return ka__fail(KA_ERR_INVALID_ARGUMENT, "hits is NULL");
    KA__PIN(ka__program, p, ps, prog, KA__T_PROGRAM);
    *hits = atomic_load_explicit(&p->cache_hits, memory_order_relaxed);
    ka__unpin(ps);
    return KA_OK;
}

/* Default work-groups per dimensionality, within the kernel's and device's
 * limits. GPUs: rows of two warps, so each warp reads whole 128-byte lines
 * of a row-major array: 64 x 4 and 64 x 4 x 1 (measured on the 2-D and 3-D
 * stencils and the six-kernel step against 32 x 8, 128 x 2, 16 x 16 and
 * 8 x 8 x 4: docs/BENCHMARKS.md). CPUs: 256 items along dimension 0 first
 * (choose_workgroup gives what a short row leaves to the next dimensions):
 * a CPU driver runs a work-group as loops over its items, vectorized along
 * dimension 0, so long rows mean unit-stride vectors and few groups. On PoCL
 * (2 cores) a 1024 x 1024 stencil step took 839 us in 256 x 1 groups
 * against 1759 us in 16 x 16 ones. */
static void choose_auto(ka__kernel *k) {
    const ka_device_info *di = &k->prog->dev->info;
    static const uint32_t gpu[3][3] = {{256, 1, 1}, {64, 4, 1}, {64, 4, 1}};
    static const uint32_t cpu[3][3] = {{256, 1, 1}, {256, 256, 1}, {256, 256, 256}};
    k->auto_rows = di->is_cpu;
    const uint32_t (*pref)[3] = di->is_cpu ? cpu : gpu;
    for (int d = 0; d < 3; d++) {
        uint32_t *w = k->auto_wg[d];
        for (int i = 0; i < 3; i++) {
            w[i] = pref[d][i];
            if (di->max_workgroup[i] && w[i] > di->max_workgroup[i]) w[i] = di->max_workgroup[i];
        }
        /* CPU: dimension 0 holds the whole budget (the launch shares it out);
         * only it must fit the kernel's limit. */
        if (k->auto_rows) {
            if (w[0] > k->max_wg) w[0] = k->max_wg ? k->max_wg : 1;
            continue;
        }
        while ((uint64_t)w[0] * w[1] * w[2] > k->max_wg) {
            int big = w[0] >= w[1] && w[0] >= w[2] ? 0 : w[1] >= w[2] ? 1 : 2;
            if (w[big] == 1) break;
            w[big] /= 2;
        }
    }
}

static ka_status table_insert(ka__program *p, ka__kernel *k) {
    if ((p->count + 1) * 2 > p->cap) {
        uint32_t ncap = p->cap ? p->cap * 2 : 16;
        ka__kernel **nt = ka__calloc(ncap, sizeof *nt);
        if (!nt) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
        for (uint32_t i = 0; i < p->cap; i++) {
            ka__kernel *e = p->table[i];
            if (!e) continue;
            uint32_t j = (uint32_t)e->hash & (ncap - 1);
            while (nt[j]) j = (j + 1) & (ncap - 1);
            nt[j] = e;
        }
        ka__free(p->table, sizeof(ka__kernel *) * p->cap);
        p->table = nt;
        p->cap = ncap;
    }
    uint32_t j = (uint32_t)k->hash & (p->cap - 1);
    while (p->table[j]) j = (j + 1) & (p->cap - 1);
    p->table[j] = k;
    p->count++;
    return KA_OK;
}

static ka_status kernel_make(ka__program *p, const char *name, const ka__config_key *key, uint64_t h,
                             const char *defines, ka__kernel **out) {
    ka__variant *v = variant_find(p, key, defines);
    ka_status st;
    if (!v && (st = variant_build(p, key, defines, &v)) != KA_OK) return st;
    ka__kernel *k = ka__calloc(1, sizeof *k);
    if (!k) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    k->prog = p;
    k->var = v;
    k->hash = h;
    k->key = *key;
    /* The symbol the driver is asked for: ka_k_<name>, or ka_k_<alias> where
     * the back-end's rewrite gave a long name its alias (backend.h). */
    char alias[KA__ALIAS_LEN + 1];
    size_t len = strlen(name);
    const char *sym = name;
    if (len > KA__NAME_DIRECT_MAX && (p->dev->ops->flags & KA__BE_SHORT_SYMBOLS)) {
        ka__kernel_alias(name, len, alias);
        sym = alias;
    }
    size_t nl = strlen(sym) + sizeof KA__KERNEL_PREFIX;
    if (!(k->name = ka__strdup(name)) || !(k->native_name = ka__alloc(nl))) {
        kernel_free(k);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    snprintf(k->native_name, nl, "%s%s", KA__KERNEL_PREFIX, sym);
    if ((st = ka__be_kernel_create(k)) != KA_OK) {
        kernel_free(k);
        return st;
    }
    if (k->nargs > KA_MAX_ARGS) { /* ka_launch keeps one word per argument on its stack */
        st = ka__fail(KA_ERR_UNSUPPORTED, "kernel '%s' has %u arguments, at most %d are supported", name,
                      k->nargs, KA_MAX_ARGS);
        kernel_free(k);
        return st;
    }
    ka__kdecl_classes(p->source, name, k->sig, k->nargs);
    k->wg_declared = declared_wg(p, name) != NULL;
    choose_auto(k);
    /* The (kind, size) word of the ka_arg each argument most likely gets, so a
     * launch checks it with one compare (ka_arg starts with kind and size). */
    if (!(k->fast_tag = ka__calloc(k->nargs ? k->nargs : 1, sizeof(uint64_t)))) {
        kernel_free(k);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t i = 0; i < k->nargs; i++) {
        const ka__argsig *sg = &k->sig[i];
        ka_arg a = {0, 0, {0}};
        if (sg->kind == KA__SIG_BUFFER) a = ka_arg_buffer((ka_buffer){0});
        else if (sg->kind == KA__SIG_SCALAR && (sg->size == 1 || sg->size == 2 || sg->size == 4 || sg->size == 8))
            a.kind = sg->cls == KA__CLS_FLOAT ? KA_ARG_FLOAT : KA_ARG_INT, a.size = sg->size; /* ka_arg_i32, _f32... */
        /* An argument without a likely ka_arg (a struct, a size not known)
         * gets the tag of kind 0 (invalid) and size 0xffffffff: a zeroed
         * ka_arg does not match it and takes the full check; only garbage of
         * exactly that word passes, and the back-ends reject its kind. */
        if (!a.kind) a.size = UINT32_MAX;
        memcpy(&k->fast_tag[i], &a, sizeof(uint64_t));
    }
    if (!(k->id = ka__handle_new(KA__T_KERNEL, k))) {
        kernel_free(k);
        return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for a handle");
    }
    if ((st = table_insert(p, k)) != KA_OK) {
        kernel_free(k);
        return st;
    }
    *out = k;
    return KA_OK;
}

static ka_status kernel_get(ka__program *p, const char *name, const ka_kernel_config *cfg, ka_kernel *out);

/* The program is pinned for the call (a lookup, or a build of a variant). */
ka_status ka_kernel_get(ka_program prog, const char *name, const ka_kernel_config *cfg, ka_kernel *out) {
    KA__ENTRY();
    if (KA_UNLIKELY(!out || !name || !*name))
        return ka__fail(KA_ERR_INVALID_ARGUMENT, "name and out are required");
    out->id = 0;
    KA__PIN(ka__program, p, ps, prog, KA__T_PROGRAM);
    ka_status st = kernel_get(p, name, cfg, out);
    ka__unpin(ps);
    return st;
}

static ka_status kernel_get(ka__program *p, const char *name, const ka_kernel_config *cfg, ka_kernel *out) {
    ka__config_key key;
    ka_kernel_config eff;
    /* A KA_WORKGROUP declaration is the default configuration's work-group;
     * a configuration that fixes another is refused. */
    const uint32_t *dw = p->nwgdecl ? declared_wg(p, name) : NULL;
    if (KA_UNLIKELY(dw != NULL)) {
        if (cfg && (cfg->workgroup[0] | cfg->workgroup[1] | cfg->workgroup[2])) {
            for (int i = 0; i < 3; i++)
                if ((cfg->workgroup[i] ? cfg->workgroup[i] : 1) != dw[i])
                    return ka__fail(KA_ERR_INVALID_WORKGROUP,
                                    "kernel '%s' declares KA_WORKGROUP(%u, %u, %u); the configuration asks "
                                    "for (%u, %u, %u)",
                                    name, dw[0], dw[1], dw[2], cfg->workgroup[0], cfg->workgroup[1], cfg->workgroup[2]);
        } else {
            if (cfg) eff = *cfg;
            else memset(&eff, 0, sizeof eff);
            memcpy(eff.workgroup, dw, sizeof eff.workgroup);
            cfg = &eff;
        }
    }
    ka_status st = normalize(p->dev, cfg, &key);
    if (st != KA_OK) return st;
    size_t nlen = strlen(name);
    uint64_t h = ka__hash(&key, sizeof key, ka__hash(name, nlen, 0));
    const char *defines = cfg && cfg->defines && *cfg->defines ? cfg->defines : NULL;
    pthread_mutex_lock(&p->lock);
    for (uint32_t j = (uint32_t)h & (p->cap - 1), n = 0; p->cap && n < p->cap; j = (j + 1) & (p->cap - 1), n++) {
        ka__kernel *k = p->table[j];
        if (!k) break;
        if (k->hash == h && !memcmp(&k->key, &key, sizeof key) && !strcmp(k->name, name) &&
            !strcmp(k->var->defines ? k->var->defines : "", defines ? defines : "")) {
            out->id = k->id;
            pthread_mutex_unlock(&p->lock);
            return KA_OK;
        }
    }
    ka__kernel *k = NULL;
    st = kernel_make(p, name, &key, h, defines, &k);
    if (st == KA_OK) out->id = k->id;
    pthread_mutex_unlock(&p->lock);
    return st;
}

ka_status ka_kernel_get_info(ka_kernel kernel, ka_kernel_info *out) {
    KA__ENTRY();
    if (!out) return ka__fail(KA_ERR_INVALID_ARGUMENT, "out is NULL");
    KA__PIN(ka__kernel, k, ks, kernel, KA__T_KERNEL);
    memset(out, 0, sizeof *out);
    out->num_args = k->nargs;
    out->max_workgroup_size = k->max_wg;
    out->preferred_workgroup_multiple = k->pref_multiple;
    memcpy(out->static_workgroup, k->key.wg, sizeof out->static_workgroup);
    memcpy(out->static_ndrange, k->key.nd, sizeof out->static_ndrange);
    out->subgroup_size = k->key.sg;
    out->local_mem_bytes = k->local_mem;
    ka__unpin(ks);
    return KA_OK;
}
