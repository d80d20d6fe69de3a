/* The source the host back-end compiles: the C prelude, then for every
 * KA_KERNEL declaration of the user's source a macro KA__ENTRIES_<name>
 * holding the kernel's entry functions, then `#line 1` and the user's source.
 * KA_KERNEL(name, ...) expands KA__ENTRIES_<name> between a prototype of the
 * body and its definition (include/ka_kernel_c.h), so a kernel that the
 * preprocessor drops (#ifdef KA_STATIC_WG0) has no entries either.
 *
 * Entries, each with external visibility, taking the launch's constants and
 * an array of pointers to the argument values:
 *   ka__rows_<name>(c, a, r0, r1, c0, c1)   rows [r0, r1) of the padded range
 *       (row = g1 + gsize1 * g2), columns [c0, c1); for kernels without
 *       barriers or local memory. In-range lanes run in a loop of their own
 *       where the compiler is told ka_in_range() holds, so the body's early
 *       return folds away and the loop vectorizes along dimension 0.
 *   ka__groups_<name>(c, a, q0, q1)         work-groups [q0, q1) (linear), items
 *       in order; for kernels with local memory and no barriers.
 *   ka__item_<name>(c, a, g0, g1, g2)       one work-item; run as fibers for
 *       kernels with barriers.
 *   ka__argsz_<name>[]                      sizeof of each parameter's type. */
#include "host_internal.h"
#include "kdecl.h"

#include <stdio.h>
#include <string.h>

extern const char ka__prelude_c[];

#define MAX_KERNELS 256

typedef struct kinfo {
    const char *name;
    size_t nl;
    uint32_t n;
    ka__kparam par[KA_MAX_ARGS];
    const char *body, *body_end; /* [ '{', past '}' ) */
} kinfo;

/* Past the '}' matching the '{' at s (comments and literals skipped). */
static const char *match_brace(const char *s) {
    int depth = 0;
    while (*s) {
        const char *t = ka__src_skip(s);
        if (t != s) {
            s = t;
            continue;
        }
        if (*s == '{') depth++;
        else if (*s == '}' && --depth == 0) return s + 1;
        s++;
    }
    return s;
}

/* The body after a declaration's ')' at s: [*b, *e), empty when none follows. */
static void find_body(const char *s, const char **b, const char **e) {
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
        const char *t = ka__src_skip(s);
        if (t == s) break;
        s = t;
    }
    *b = *e = s;
    if (*s == '{') *e = match_brace(s);
}

/* KA_KERNEL_NOARGS(name) declarations, which kdecl does not read. */
static bool noargs_next(const char **pos, const char **name, size_t *nl) {
    for (const char *s = *pos; *s;) {
        const char *t = ka__src_skip(s);
        if (t != s || !ka__ident_char(*s)) {
            s = t != s ? t : s + 1;
            continue;
        }
        const char *w = s;
        while (ka__ident_char(*s)) s++;
        if (s - w != 16 || memcmp(w, "KA_KERNEL_NOARGS", 16)) continue;
        while (*s == ' ' || *s == '\t') s++;
        if (*s != '(') continue;
        s++;
        while (*s == ' ' || *s == '\t') s++;
        const char *nb = s;
        while (ka__ident_char(*s)) s++;
        const char *ne = s;
        while (*s == ' ' || *s == '\t') s++;
        if (ne == nb || *s != ')') continue;
        *name = nb;
        *nl = (size_t)(ne - nb);
        *pos = s + 1;
        return true;
    }
    *pos += strlen(*pos);
    return false;
}

/* Every kernel of src, the first declaration of each name; returns the count. */
static uint32_t scan(const char *src, kinfo *ks, uint32_t cap) {
    uint32_t nk = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *pos = src;
        for (;;) {
            kinfo *k = &ks[nk < cap ? nk : cap - 1];
            bool found = pass == 0 ? ka__kdecl_next(&pos, &k->name, &k->nl, k->par, KA_MAX_ARGS, &k->n)
                                   : noargs_next(&pos, &k->name, &k->nl);
            if (!found) break;
            if (pass == 1) k->n = 0;
            find_body(pos, &k->body, &k->body_end);
            bool dup = false;
            for (uint32_t i = 0; i < nk && !dup; i++) dup = ks[i].nl == k->nl && !memcmp(ks[i].name, k->name, k->nl);
            if (!dup && nk < cap) nk++;
        }
    }
    return nk;
}

static bool has_barrier(const char *b, const char *e) {
    return ka__kdecl_has(b, e, "ka_barrier") || ka__kdecl_has(b, e, "ka_barrier_local") ||
           ka__kdecl_has(b, e, "ka_barrier_global");
}

/* A barrier word outside every kernel's body: in a helper or a macro, which
 * any kernel may call, so every kernel takes the fiber path. */
static bool barrier_outside(const char *src, const kinfo *ks, uint32_t nk) {
    const char *s = src;
    while (*s) {
        const char *t = ka__src_skip(s);
        if (t != s) {
            s = t;
            continue;
        }
        if (!ka__ident_char(*s)) {
            s++;
            continue;
        }
        const char *w = s;
        while (ka__ident_char(*s)) s++;
        if (!has_barrier(w, s)) continue;
        bool inside = false;
        for (uint32_t i = 0; i < nk && !inside; i++) inside = w >= ks[i].body && w < ks[i].body_end;
        if (!inside) return true;
    }
    return false;
}

static enum ka__hpath path_of(const kinfo *k, bool helper_barrier) {
    if (helper_barrier || has_barrier(k->body, k->body_end)) return KA__HP_ITEMS;
    if (ka__kdecl_has(k->body, k->body_end, "KA_LOCAL")) return KA__HP_GROUPS;
    for (uint32_t i = 0; i < k->n; i++)
        if (ka__kdecl_has(k->par[i].type, k->par[i].type_end, "KA_LOCAL_ARG")) return KA__HP_GROUPS;
    return KA__HP_ROWS;
}

static enum ka__hpath ka__host_path_scan(const char *user, const char *kname, kinfo *ks);

enum ka__hpath ka__host_path_of(const char *user, const char *kname) {
    kinfo *ks = ka__alloc(sizeof(kinfo) * MAX_KERNELS);
    if (!ks) return KA__HP_ITEMS; /* correct for any kernel */
    enum ka__hpath r = ka__host_path_scan(user, kname, ks);
    ka__free(ks, sizeof(kinfo) * MAX_KERNELS);
    return r;
}

static enum ka__hpath ka__host_path_scan(const char *user, const char *kname, kinfo *ks) {
    uint32_t nk = scan(user, ks, MAX_KERNELS);
    bool hb = barrier_outside(user, ks, nk);
    size_t kl = strlen(kname);
    for (uint32_t i = 0; i < nk; i++)
        if (ks[i].nl == kl && !memcmp(ks[i].name, kname, kl)) return path_of(&ks[i], hb);
    return hb ? KA__HP_ITEMS : KA__HP_ROWS;
}

/* ---- text output: measure (out NULL), then write ------------------------- */
typedef struct out {
    char *p;
    size_t len;
} out;

static void put(out *o, const char *s, size_t n) {
    if (o->p) memcpy(o->p + o->len, s, n);
    o->len += n;
}
static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }
/* A parameter's type on one line: comments and newlines become spaces. */
static void put_type(out *o, const char *b, const char *e) {
    while (b < e) {
        const char *t = ka__src_skip(b);
        if (t != b && (*b == '/')) {
            put(o, " ", 1);
            b = t;
        } else if (*b == '\n' || *b == '\r' || *b == '\\') {
            put(o, " ", 1);
            b++;
        } else {
            put(o, b, 1);
            b++;
        }
    }
}
static void put_name(out *o, const kinfo *k) { put(o, k->name, k->nl); }
static void put_u(out *o, uint32_t v) {
    char b[16];
    int n = snprintf(b, sizeof b, "%u", v);
    put(o, b, (size_t)n);
}

/* The arguments unpacked into locals ka__p<i>, then the call's argument list. */
static void put_unpack(out *o, const kinfo *k) {
    for (uint32_t i = 0; i < k->n; i++) {
        const ka__kparam *p = &k->par[i];
        bool local = ka__kdecl_has(p->type, p->type_end, "KA_LOCAL_ARG");
        put_type(o, p->type, p->type_end);
        puts_(o, " ka__p");
        put_u(o, i);
        if (local) {
            puts_(o, " = (");
            put_type(o, p->type, p->type_end);
            puts_(o, ")(void *)(ka__lscratch + *(const ka_size_t *)ka__a[");
        } else {
            puts_(o, " = *(");
            put_type(o, p->type, p->type_end);
            puts_(o, " *)ka__a[");
        }
        put_u(o, i);
        puts_(o, local ? "]); \\\n" : "]; \\\n");
    }
}
static void put_call(out *o, const kinfo *k, const char *g) {
    puts_(o, "ka__body_");
    put_name(o, k);
    puts_(o, g);
    for (uint32_t i = 0; i < k->n; i++) {
        puts_(o, ", ka__p");
        put_u(o, i);
    }
    puts_(o, ")");
}

#define G_ARGS "(ka__c, ka__g0, ka__g1, ka__g2"
#define EXPORT "__attribute__((visibility(\"default\"), used)) "

static void put_entries(out *o, const kinfo *k, enum ka__hpath path) {
    puts_(o, "#define KA__ENTRIES_");
    put_name(o, k);
    puts_(o, " \\\n" EXPORT "const unsigned ka__argsz_");
    put_name(o, k);
    puts_(o, "[] = {");
    for (uint32_t i = 0; i < k->n; i++) {
        puts_(o, i ? ", sizeof(" : "sizeof(");
        put_type(o, k->par[i].type, k->par[i].type_end);
        puts_(o, ")");
    }
    puts_(o, k->n ? "}; \\\n" : "0}; \\\n");
    if (path == KA__HP_ROWS) {
        puts_(o, EXPORT "void ka__rows_");
        put_name(o, k);
        puts_(o, "(const ka__hctx *ka__in, void *const *ka__a, ka_size_t ka__r0, ka_size_t ka__r1, ka_size_t ka__c0, "
                 "ka_size_t ka__c1) { \\\n"
                 "    const ka__hctx ka__cv = *ka__in; const ka__hctx *const ka__c = &ka__cv; \\\n");
        put_unpack(o, k);
        puts_(o, "    for (ka_size_t ka__r = ka__r0; ka__r < ka__r1; ka__r++) { \\\n"
                 "        const ka_size_t ka__g1 = ka__r % ka__c->gsize[1], ka__g2 = ka__r / ka__c->gsize[1]; \\\n"
                 "        ka_size_t ka__e = ka__c0; \\\n"
                 "        if (ka__g1 < ka__c->nd.y && ka__g2 < ka__c->nd.z) { \\\n"
                 "            const ka_size_t ka__hi = ka__c1 < ka__c->nd.x ? ka__c1 : ka__c->nd.x; \\\n"
                 "            for (ka_size_t ka__g0 = ka__c0; ka__g0 < ka__hi; ka__g0++) { \\\n"
                 "                if (ka__g0 >= ka__c->nd.x) __builtin_unreachable(); \\\n                ");
        put_call(o, k, G_ARGS);
        puts_(o, "; \\\n"
                 "            } \\\n"
                 "            if (ka__hi > ka__e) ka__e = ka__hi; \\\n"
                 "        } \\\n"
                 "        for (ka_size_t ka__g0 = ka__e; ka__g0 < ka__c1; ka__g0++) ");
        put_call(o, k, G_ARGS);
        puts_(o, "; \\\n    } \\\n} \\\n");
    } else if (path == KA__HP_GROUPS) {
        puts_(o, EXPORT "void ka__groups_");
        put_name(o, k);
        puts_(o, "(const ka__hctx *ka__in, void *const *ka__a, ka_size_t ka__q0, ka_size_t ka__q1) { \\\n"
                 "    const ka__hctx ka__cv = *ka__in; const ka__hctx *const ka__c = &ka__cv; \\\n");
        put_unpack(o, k);
        puts_(o, "    const ka_size_t ka__n0 = ka__c->ngroups[0], ka__n1 = ka__c->ngroups[1]; \\\n"
                 "    for (ka_size_t ka__q = ka__q0; ka__q < ka__q1; ka__q++) { \\\n"
                 "        const ka_size_t ka__b0 = ka__q % ka__n0 * ka__c->lsize[0]; \\\n"
                 "        const ka_size_t ka__b1 = ka__q / ka__n0 % ka__n1 * ka__c->lsize[1]; \\\n"
                 "        const ka_size_t ka__b2 = ka__q / ka__n0 / ka__n1 * ka__c->lsize[2]; \\\n"
                 "        for (ka_size_t ka__g2 = ka__b2; ka__g2 < ka__b2 + ka__c->lsize[2]; ka__g2++) \\\n"
                 "        for (ka_size_t ka__g1 = ka__b1; ka__g1 < ka__b1 + ka__c->lsize[1]; ka__g1++) \\\n"
                 "        for (ka_size_t ka__g0 = ka__b0; ka__g0 < ka__b0 + ka__c->lsize[0]; ka__g0++) ");
        put_call(o, k, G_ARGS);
        puts_(o, "; \\\n    } \\\n} \\\n");
    } else {
        puts_(o, EXPORT "void ka__item_");
        put_name(o, k);
        puts_(o, "(const ka__hctx *ka__c, void *const *ka__a, ka_size_t ka__g0, ka_size_t ka__g1, ka_size_t ka__g2) { \\\n");
        put_unpack(o, k);
        puts_(o, "    ");
        put_call(o, k, G_ARGS);
        puts_(o, "; \\\n} \\\n");
    }
    puts_(o, "\n");
}

static size_t compose(const char *user, char *dst, kinfo *ks) {
    out o = {dst, 0};
    puts_(&o, ka__prelude_c);
    puts_(&o, "\n" EXPORT "void (*ka__barrier_fn)(void);\n");
    uint32_t nk = scan(user, ks, MAX_KERNELS);
    bool hb = barrier_outside(user, ks, nk), scratch = false;
    for (uint32_t i = 0; i < nk; i++)
        for (uint32_t j = 0; j < ks[i].n; j++)
            scratch |= ka__kdecl_has(ks[i].par[j].type, ks[i].par[j].type_end, "KA_LOCAL_ARG");
    if (scratch)
        puts_(&o, "static _Thread_local char ka__lscratch[KA__LSCRATCH] __attribute__((aligned(64)));\n");
    for (uint32_t i = 0; i < nk; i++) put_entries(&o, &ks[i], path_of(&ks[i], hb));
    /* A name, so the compiler's log never shows the prelude's lines as the user's. */
    puts_(&o, "#line 1 \"<program source>\"\n");
    puts_(&o, user);
    put(&o, "\n", 2); /* with the terminating NUL */
    return o.len;
}

ka_status ka__host_compose(const char *user, char **src, size_t *len) {
    kinfo *ks = ka__alloc(sizeof(kinfo) * MAX_KERNELS);
    if (!ks) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory");
    size_t n = compose(user, NULL, ks);
    char *s = ka__alloc(n);
    if (s) compose(user, s, ks);
    ka__free(ks, sizeof(kinfo) * MAX_KERNELS);
    if (!s) return ka__fail(KA_ERR_OUT_OF_MEMORY, "ka_program_build: out of memory for the host source");
    *src = s;
    *len = n;
    return KA_OK;
}
