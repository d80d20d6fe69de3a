/* The source the host back-end compiles, in two passes, each after the
 * program's defines as #define lines (the variant's head, which the core
 * composes for every back-end). The scan pass is the C prelude, a marker
 * and the user's source, run through the
 * preprocessor with KA__SCAN defined: each KA_KERNEL expands to a marker,
 * its name and its parameter list as a string (include/ka_kernel_c.h), then
 * its preprocessed body. So kernels that macros generate are found, and
 * kernels the preprocessor drops (#ifdef KA_STATIC_WG0) are not. The build
 * pass is the prelude, then for every kernel found a macro
 * KA__ENTRIES_<name> holding its entry functions, then `#line 1` and the
 * user's source: KA_KERNEL(name, ...) expands KA__ENTRIES_<name> between a
 * prototype of the body and its definition.
 *
 * Entries, each with external visibility, taking the launch's constants and
 * an array of pointers to the argument values; one of the first three per
 * kernel, by what its preprocessed body uses:
 *   ka__rows_<name>(c, a, r0, r1, c0, c1)   rows [r0, r1) of the padded range
 *       (row = g1 + gsize1 * g2), columns [c0, c1); for kernels without
 *       barriers or local memory. In-range lanes run in a loop of their own
 *       where the compiler is told ka_in_range() holds, so the body's early
 *       return folds away and the loop vectorizes along dimension 0.
 *   ka__groups_<name>(c, a, q0, q1)         work-groups [q0, q1) (linear), items
 *       in order; for kernels with local memory and no barriers.
 *   ka__item_<name>(c, a, g0, g1, g2)       one work-item; run as fibers for
 *       kernels with barriers (a barrier in a helper counts for every kernel).
 *   ka__nargs_<name>, ka__argsz_<name>[], ka__argkind_<name>[] (enum ka__sig),
 *   ka__argnames_<name> (NUL-separated)     the parameters. */
#include "host_internal.h"
#include "kdecl.h"

#include <stdio.h>
#include <string.h>


#define MAX_KERNELS 256
#define MAX_LOCALS 16

typedef struct kinfo {
    const char *name;
    size_t nl;
    uint32_t n;
    ka__kparam par[KA_MAX_ARGS];
    const char *body, *body_end; /* [ '{', past '}' ) */
    enum ka__hpath path;
    bool tls; /* a helper reads indices from thread-local storage */
    uint32_t nlocal;
    const char *local[MAX_LOCALS][2]; /* KA_LOCAL declarations: [begin, ';') in the scan's text */
} kinfo;

/* Past the '}' matching the '{' at s, else the source's end. */
static const char *match_brace(const char *s) {
    const char *m = ka__src_match_brace(s);
    return m ? m : s + strlen(s);
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

/* A string literal at s (the scan's parameter list) unescaped into dst;
 * returns past it, or NULL when s holds none. */
static const char *unquote(const char *s, char *dst, size_t *len) {
    if (*s != '"') return NULL;
    size_t n = 0;
    for (s++; *s && *s != '"'; s++) {
        if (*s == '\\' && s[1]) s++;
        if (dst) dst[n] = *s;
        n++;
    }
    if (*s != '"') return NULL;
    *len = n;
    return s + 1;
}

static const char *skip_space(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    return s;
}

/* The KA_LOCAL declarations of k's body: after each marker, up to its ';'. */
static void find_locals(kinfo *k) {
    k->nlocal = 0;
    for (const char *s = k->body; s && k->nlocal < MAX_LOCALS;) {
        s = ka__src_find_word(s, "ka__scan_local", 14);
        if (!s || s >= k->body_end) break;
        const char *e = s;
        int depth = 0;
        while (e < k->body_end && (*e != ';' || depth)) {
            if (*e == '(' || *e == '[' || *e == '{') depth++;
            else if (*e == ')' || *e == ']' || *e == '}') depth--;
            e++;
        }
        k->local[k->nlocal][0] = s;
        k->local[k->nlocal++][1] = e;
        s = e;
    }
}

/* The kernels of the preprocessed text pre: names, parameters (parsed from
 * "KA_KERNEL(name, params)" texts written into arena, or measured when arena
 * is NULL), paths. Returns the count; *arena_len the text's length. */
static uint32_t scan(const char *pre, kinfo *ks, uint32_t cap, char *arena, size_t *arena_len, bool *helper_idx) {
    const char *s = strstr(pre, "ka__scan_user");
    size_t used = 0;
    uint32_t nk = 0;
    bool helper_barrier = false;
    *helper_idx = false;
    if (!s) {
        *arena_len = 0;
        return 0;
    }
    s += 13;
    const char *decl = s; /* where the current top-level declaration began */
    while (*s) {
        const char *t = ka__src_skip(s);
        if (t == s && *s == '{') {
            /* A helper's body (kernels' bodies are skipped below): a barrier
             * there counts for every kernel; an index counts unless the
             * helper takes the context (KA_CTX_PARAM: a ka__hctx parameter). */
            const char *end = match_brace(s);
            helper_barrier |= ka__kdecl_has(s, end, "ka__barrier");
            if (!ka__kdecl_has(decl, s, "ka__hctx"))
                *helper_idx |= ka__kdecl_has(s, end, "ka__g0") || ka__kdecl_has(s, end, "ka__g1") ||
                               ka__kdecl_has(s, end, "ka__g2") || ka__kdecl_has(s, end, "ka__c");
            decl = s = end;
            continue;
        }
        if (t != s || !ka__ident_char(*s)) {
            if (t == s && *s == ';') decl = s + 1;
            s = t != s ? t : s + 1;
            continue;
        }
        const char *w = s;
        while (ka__ident_char(*s)) s++;
        /* a barrier or an index in a macro's expansion outside any function */
        helper_barrier |= (size_t)(s - w) == 11 && !memcmp(w, "ka__barrier", 11);
        if ((size_t)(s - w) != 15 || memcmp(w, "ka__scan_kernel", 15)) continue;
        const char *nb = skip_space(s), *ne = nb;
        while (ka__ident_char(*ne)) ne++;
        size_t plen;
        const char *q = unquote(skip_space(ne), NULL, &plen);
        if (ne == nb || !q) continue;
        const char *e = skip_space(q);
        if (strncmp(e, "ka__scan_end", 12)) continue;
        s = e + 12;
        /* "KA_KERNEL(" name ", " params ")" */
        size_t nl = (size_t)(ne - nb), tl = 10 + nl + 2 + plen + 1;
        kinfo *k = &ks[nk < cap ? nk : cap - 1];
        k->n = 0;
        k->body = k->body_end = NULL;
        if (arena) {
            char *d = arena + used;
            memcpy(d, "KA_KERNEL(", 10);
            memcpy(d + 10, nb, nl);
            memcpy(d + 10 + nl, ", ", 2);
            unquote(skip_space(ne), d + 12 + nl, &plen);
            d[tl - 1] = ')';
            /* a string, for the parser: the NUL after it */
            d[tl] = 0;
            const char *pos = d, *name;
            size_t pnl;
            k->name = d + 10;
            k->nl = nl;
            if (plen && !ka__kdecl_next(&pos, &name, &pnl, k->par, KA_MAX_ARGS, &k->n)) k->n = UINT32_MAX;
        }
        used += tl + 1;
        find_body(s, &k->body, &k->body_end);
        decl = s = k->body_end > s ? k->body_end : s;
        bool dup = false;
        for (uint32_t i = 0; arena && i < nk && !dup; i++) dup = ks[i].nl == k->nl && !memcmp(ks[i].name, k->name, k->nl);
        if (!dup && nk < cap) nk++;
    }
    *arena_len = used;
    for (uint32_t i = 0; i < nk; i++) {
        kinfo *k = &ks[i];
        k->path = KA__HP_ROWS;
        if (helper_barrier || ka__kdecl_has(k->body, k->body_end, "ka__barrier")) k->path = KA__HP_ITEMS;
        else if (ka__kdecl_has(k->body, k->body_end, "ka__scan_local")) k->path = KA__HP_GROUPS;
        find_locals(k);
        for (uint32_t j = 0; k->path == KA__HP_ROWS && k->n != UINT32_MAX && j < k->n; j++)
            if (ka__kdecl_has(k->par[j].type, k->par[j].type_end, "KA_LOCAL_ARG")) k->path = KA__HP_GROUPS;
    }
    return nk;
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
    if (k->tls) puts_(o, "ka__tls_set(ka__c, ka__g0, ka__g1, ka__g2), ");
    puts_(o, "ka__body_");
    put_name(o, k);
    puts_(o, g);
    for (uint32_t i = 0; i < k->n; i++) {
        puts_(o, ", ka__p");
        put_u(o, i);
    }
    puts_(o, ")");
}

#define G_ARGS "(ka__c, ka__g0, ka__g1, ka__g2, 0"
#define G_ARGS_IN "(ka__c, ka__g0, ka__g1, ka__g2, 1" /* known in range */
#define EXPORT "__attribute__((visibility(\"default\"), used)) "

/* A parameter's kind (enum ka__sig): a pointer or KA_CONST(T) a buffer,
 * KA_LOCAL_ARG(T) local memory, anything else a value. */
static unsigned kind_of(const ka__kparam *p) {
    if (ka__kdecl_has(p->type, p->type_end, "KA_LOCAL_ARG")) return KA__SIG_LOCAL;
    if (memchr(p->type, '*', (size_t)(p->type_end - p->type)) || ka__kdecl_has(p->type, p->type_end, "KA_CONST"))
        return KA__SIG_BUFFER;
    return KA__SIG_SCALAR;
}

/* The end of the declarator's name in [b, e): the last identifier before
 * the first '[' (an array's size follows it). */
static const char *name_end(const char *b, const char *e, const char **nb) {
    const char *br = memchr(b, '[', (size_t)(e - b));
    const char *x = br ? br : e;
    while (x > b && !ka__ident_char(x[-1])) x--;
    const char *n = x;
    while (n > b && ka__ident_char(n[-1])) n--;
    *nb = n;
    return x;
}

/* ka__localsz_<name>: the bytes of the kernel's KA_LOCAL arrays, each as
 * sizeof of its declaration without the name ("float t[64]": float[64]). */
static void put_local_size(out *o, const kinfo *k) {
    puts_(o, EXPORT "const unsigned long ka__localsz_");
    put_name(o, k);
    puts_(o, " = 0");
    for (uint32_t i = 0; i < k->nlocal; i++) {
        const char *b = k->local[i][0], *e = k->local[i][1], *type_end = NULL;
        /* declarators split at the commas outside brackets */
        for (const char *seg = b; seg < e;) {
            const char *c = seg;
            int depth = 0;
            while (c < e && (*c != ',' || depth)) {
                if (*c == '(' || *c == '[' || *c == '{') depth++;
                else if (*c == ')' || *c == ']' || *c == '}') depth--;
                c++;
            }
            const char *nb, *ne = name_end(seg, c, &nb), *init = memchr(ne, '=', (size_t)(c - ne));
            if (!type_end) type_end = nb;
            puts_(o, " + sizeof(");
            put_type(o, b, type_end);
            put_type(o, seg == b ? type_end : seg, nb); /* a later declarator's own '*' */
            put_type(o, ne, init ? init : c);
            puts_(o, ")");
            seg = c < e ? c + 1 : c;
        }
    }
    puts_(o, "; \\\n");
}

static void put_entries(out *o, const kinfo *k, enum ka__hpath path) {
    puts_(o, "#define KA__ENTRIES_");
    put_name(o, k);
    if (k->n == UINT32_MAX) {
        puts_(o, " _Static_assert(0, \"libka: the parameters of kernel ");
        put_name(o, k);
        puts_(o, " cannot be read (each needs a type and a name)\");\n");
        return;
    }
    puts_(o, " \\\n" EXPORT "const unsigned ka__nargs_");
    put_name(o, k);
    puts_(o, " = ");
    put_u(o, k->n);
    puts_(o, "; \\\n" EXPORT "const unsigned ka__argsz_");
    put_name(o, k);
    puts_(o, "[] = {");
    for (uint32_t i = 0; i < k->n; i++) {
        puts_(o, i ? ", sizeof(" : "sizeof(");
        put_type(o, k->par[i].type, k->par[i].type_end);
        puts_(o, ")");
    }
    puts_(o, k->n ? "}; \\\n" : "0}; \\\n");
    puts_(o, EXPORT "const unsigned char ka__argkind_");
    put_name(o, k);
    puts_(o, "[] = {");
    for (uint32_t i = 0; i < k->n; i++) {
        if (i) puts_(o, ", ");
        put_u(o, kind_of(&k->par[i]));
    }
    puts_(o, k->n ? "}; \\\n" : "0}; \\\n");
    puts_(o, EXPORT "const char ka__argnames_");
    put_name(o, k);
    puts_(o, "[] = \"");
    for (uint32_t i = 0; i < k->n; i++) {
        if (i) puts_(o, "\\0");
        put(o, k->par[i].name, (size_t)(k->par[i].name_end - k->par[i].name));
    }
    puts_(o, "\"; \\\n");
    put_local_size(o, k);
    if (path == KA__HP_ROWS) {
        /* The in-range lanes and the padded ones in two functions: padded
         * lanes are rare, and the function of the hot loop holds that loop
         * alone, in which ka_in_range() is the constant 1. */
        puts_(o, "static __attribute__((noinline, cold)) void ka__pad_");
        put_name(o, k);
        puts_(o, "(const ka__hctx *ka__c, void *const *ka__a, ka_size_t ka__r0, ka_size_t ka__r1, ka_size_t ka__c0, "
                 "ka_size_t ka__c1) { \\\n");
        put_unpack(o, k);
        puts_(o, "    for (ka_size_t ka__r = ka__r0; ka__r < ka__r1; ka__r++) { \\\n"
                 "        const ka_size_t ka__g1 = ka__r % ka__c->gsize[1], ka__g2 = ka__r / ka__c->gsize[1]; \\\n"
                 "        ka_size_t ka__e = ka__c0; \\\n"
                 "        if (ka__g1 < ka__c->nd.y && ka__g2 < ka__c->nd.z && ka__c->nd.x > ka__e) \\\n"
                 "            ka__e = ka__c1 < ka__c->nd.x ? ka__c1 : ka__c->nd.x; \\\n"
                 "        for (ka_size_t ka__g0 = ka__e; ka__g0 < ka__c1; ka__g0++) ");
        put_call(o, k, G_ARGS);
        puts_(o, "; \\\n    } \\\n} \\\n");
        puts_(o, "static __attribute__((noinline)) void ka__inrange_");
        put_name(o, k);
        puts_(o, "(const ka__hctx *ka__in, void *const *ka__a, ka_size_t ka__r0, ka_size_t ka__r1, ka_size_t ka__c0, "
                 "ka_size_t ka__c1) { \\\n"
                 "    const ka__hctx ka__cv = *ka__in; const ka__hctx *const ka__c = &ka__cv; \\\n");
        put_unpack(o, k);
        puts_(o, "    for (ka_size_t ka__r = ka__r0; ka__r < ka__r1; ka__r++) { \\\n"
                 "        const ka_size_t ka__g1 = ka__r % ka__c->gsize[1], ka__g2 = ka__r / ka__c->gsize[1]; \\\n"
                 "        if (ka__g1 >= ka__c->nd.y || ka__g2 >= ka__c->nd.z) continue; \\\n"
                 "        const ka_size_t ka__hi = ka__c1 < ka__c->nd.x ? ka__c1 : ka__c->nd.x; \\\n"
                 "        for (ka_size_t ka__g0 = ka__c0; ka__g0 < ka__hi; ka__g0++) { \\\n"
                 "            ");
        put_call(o, k, G_ARGS_IN);
        puts_(o, "; \\\n"
                 "        } \\\n"
                 "    } \\\n"
                 "} \\\n");
        puts_(o, EXPORT "void ka__rows_");
        put_name(o, k);
        puts_(o, "(const ka__hctx *ka__c, void *const *ka__a, ka_size_t ka__r0, ka_size_t ka__r1, ka_size_t ka__c0, "
                 "ka_size_t ka__c1) { \\\n"
                 "    ka__inrange_");
        put_name(o, k);
        puts_(o, "(ka__c, ka__a, ka__r0, ka__r1, ka__c0, ka__c1); \\\n"
                 "    if (__builtin_expect(ka__c->gsize[0] > ka__c->nd.x || ka__c->gsize[1] > ka__c->nd.y || "
                 "ka__c->gsize[2] > ka__c->nd.z, 0)) \\\n"
                 "        ka__pad_");
        put_name(o, k);
        puts_(o, "(ka__c, ka__a, ka__r0, ka__r1, ka__c0, ka__c1); \\\n} \\\n");
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

/* pre NULL: the scan pass's source; else the build pass's, with the entries
 * of the kernels in pre (the scan pass's output). The defines' lines (head)
 * come first, as -D options would. */
static size_t compose(const char *head, const char *user, const char *pre, const char *name, char *dst, kinfo *ks,
                      char *arena) {
    out o = {dst, 0};
    if (head) puts_(&o, head);
    puts_(&o, ka__prelude_c);
    if (!pre) {
        puts_(&o, "\nka__scan_user\n");
    } else {
        puts_(&o, "\n" EXPORT "void (*ka__barrier_fn)(void);\n");
        size_t alen;
        bool tls;
        uint32_t nk = scan(pre, ks, MAX_KERNELS, arena, &alen, &tls);
        for (uint32_t i = 0; i < nk; i++) ks[i].tls = tls;
        bool scratch = false;
        for (uint32_t i = 0; i < nk; i++)
            for (uint32_t j = 0; ks[i].n != UINT32_MAX && j < ks[i].n; j++) scratch |= kind_of(&ks[i].par[j]) == KA__SIG_LOCAL;
        if (scratch)
            puts_(&o, "static _Thread_local char ka__lscratch[KA__LSCRATCH] __attribute__((aligned(64)));\n");
        for (uint32_t i = 0; i < nk; i++) put_entries(&o, &ks[i], ks[i].path);
    }
    /* A name, so the compiler's log never shows the prelude's lines as the user's. */
    puts_(&o, "#line 1 \"");
    puts_(&o, name ? name : "<program source>");
    puts_(&o, "\"\n");
    puts_(&o, user);
    put(&o, "\n", 2); /* with the terminating NUL */
    return o.len;
}

ka_status ka__host_compose(const char *head, const char *user, const char *pre, const char *name, char **src,
                           size_t *len) {
    kinfo *ks = NULL;
    char *arena = NULL;
    size_t alen = 0;
    if (pre) {
        ks = ka__alloc(sizeof(kinfo) * MAX_KERNELS);
        bool tls;
        if (ks) scan(pre, ks, MAX_KERNELS, NULL, &alen, &tls);
        if (ks && !(arena = ka__alloc(alen + 1))) {
            ka__free(ks, sizeof(kinfo) * MAX_KERNELS);
            ks = NULL;
        }
        if (!ks) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    size_t n = compose(head, user, pre, name, NULL, ks, arena);
    char *s = ka__alloc(n);
    if (s) compose(head, user, pre, name, s, ks, arena);
    if (ks) ka__free(ks, sizeof(kinfo) * MAX_KERNELS);
    if (arena) ka__free(arena, alen + 1);
    if (!s) return ka__fail(KA_ERR_OUT_OF_MEMORY, "out of memory for the host source");
    *src = s;
    *len = n;
    return KA_OK;
}
