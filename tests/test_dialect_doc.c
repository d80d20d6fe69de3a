/* docs/KERNELS.md is the dialect's contract, and this test holds the dialect
 * to it: it reads the constructs and functions the document lists (the first
 * column of the Declarations, Indices, Synchronization, Atomics and Sub-groups
 * tables, and the lists of "Math and conversions"), and for each one runs a
 * kernel calling it on the default device ($KA_DEVICE, else PoCL), checking a
 * known result. It fails when a listed name is missing from the prelude,
 * gives a wrong result, has no test case here, or when a test case here names
 * something the document does not list; and when the document cannot be read
 * or yields fewer names than it does today (a parser that silently finds
 * nothing must not pass). Names that exist only where a capability does
 * (sub-groups, double, 64-bit atomics, printf) are reported as skipped, with
 * the reason, on devices without it.
 *
 * Two more checks, without a device of their kind:
 *   - cuda_prelude_nvrtc: every generated program compiles with the CUDA
 *     prelude through NVRTC (no GPU needed), when libnvrtc is installed;
 *   - opencl_strict_c12: every program libka handed to the OpenCL compiler in
 *     this process (captured at clCreateProgramWithSource) is compiled by
 *     clang as strict OpenCL C 1.2 (-pedantic-errors: no variadic macros) for
 *     NVIDIA's and SPIR's extension sets, and as OpenCL C 2.0 for SPIR (the
 *     prelude's sub-group branch), when clang is installed.
 *
 * Usage: test_dialect_doc [KERNELS.md [ka_kernel_cuda.h [clang]]] (CMake
 * compiles in the source tree's paths and the clang it found). */
#define _GNU_SOURCE
#include "test_util.h"

#include <CL/cl.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static const char *g_doc_path, *g_cuda_prelude_path, *g_clang;

/* ---- a bump allocator for generated text (nothing to free) --------------- */
static char g_pool[1 << 22];
static size_t g_pool_used;

static char *pool_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *pool_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *p = g_pool + g_pool_used;
    int n = vsnprintf(p, sizeof g_pool - g_pool_used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof g_pool - g_pool_used) {
        fprintf(stderr, "test_dialect_doc: text pool full\n");
        abort();
    }
    g_pool_used += (size_t)n + 1;
    return p;
}

/* A growing string on the heap. */
typedef struct str {
    char *s;
    size_t len, cap;
} str;

static void str_add(str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void str_add(str *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) abort();
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
}

/* ======================= reading docs/KERNELS.md ========================== */

enum { SEC_DECL, SEC_INDEX, SEC_SYNC, SEC_ATOMIC, SEC_SUBGROUP, SEC_MATH, NSEC };
static const struct {
    const char *heading, *tag;
    int min_names; /* what the document lists today: fewer is a parse failure */
} sections[NSEC] = {
    [SEC_DECL] = {"## Declarations", "declarations", 16},
    [SEC_INDEX] = {"## Indices", "indices", 13},
    [SEC_SYNC] = {"## Synchronization", "synchronization", 4},
    [SEC_ATOMIC] = {"## Atomics", "atomics", 11},
    [SEC_SUBGROUP] = {"## Sub-groups", "subgroups", 16},
    [SEC_MATH] = {"## Math and conversions", "math", 139},
};

#define MAX_NAMES 512
typedef struct docname {
    char name[64];
    int sec, line;
} docname;
static docname g_names[MAX_NAMES];
static int g_nnames;
static char g_parse_error[512];

static int find_name(const char *n) {
    for (int i = 0; i < g_nnames; i++)
        if (!strcmp(g_names[i].name, n)) return i;
    return -1;
}

static bool add_name(const char *n, size_t len, int sec, int line) {
    if (len == 0 || len >= sizeof g_names[0].name) {
        snprintf(g_parse_error, sizeof g_parse_error, "line %d: bad name '%.*s'", line, (int)len, n);
        return false;
    }
    char tmp[64];
    memcpy(tmp, n, len);
    tmp[len] = 0;
    if (find_name(tmp) >= 0) return true; /* listed twice (min, max...): one entry */
    if (g_nnames == MAX_NAMES) {
        snprintf(g_parse_error, sizeof g_parse_error, "more than %d names", MAX_NAMES);
        return false;
    }
    docname *d = &g_names[g_nnames++];
    memcpy(d->name, tmp, len + 1);
    d->sec = sec;
    d->line = line;
    return true;
}

static bool name_char(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

/* The backticked spans of [b, e): calls fn(span, len) for each. */
typedef bool (*span_fn)(const char *s, size_t n, void *ctx);
static bool each_span(const char *b, const char *e, span_fn fn, void *ctx) {
    for (const char *p = b; p < e; p++) {
        if (*p != '`') continue;
        const char *q = memchr(p + 1, '`', (size_t)(e - p - 1));
        if (!q) return true;
        if (!fn(p + 1, (size_t)(q - p - 1), ctx)) return false;
        p = q;
    }
    return true;
}

/* A table's first cell: each span's leading name, `a_b/c/d` standing for
 * a_b, a_c, a_d; only names of the dialect (ka_..., KA_...) count. */
typedef struct cellctx {
    int sec, line;
} cellctx;
static bool cell_span(const char *s, size_t n, void *vctx) {
    cellctx *c = vctx;
    size_t k = 0;
    while (k < n && (name_char(s[k]) || s[k] == '/')) k++;
    if (k < 3 || (strncmp(s, "ka_", 3) && strncmp(s, "KA_", 3))) return true;
    const char *slash = memchr(s, '/', k);
    if (!slash) return add_name(s, k, c->sec, c->line);
    size_t base = (size_t)(slash - s), prefix = base;
    while (prefix > 0 && s[prefix - 1] != '_') prefix--;
    if (!prefix) {
        snprintf(g_parse_error, sizeof g_parse_error, "line %d: '%.*s': no prefix for the alternatives", c->line, (int)k, s);
        return false;
    }
    if (!add_name(s, base, c->sec, c->line)) return false;
    for (const char *a = slash + 1; a <= s + k;) {
        const char *z = a;
        while (z < s + k && *z != '/') z++;
        char tmp[64];
        int len = snprintf(tmp, sizeof tmp, "%.*s%.*s", (int)prefix, s, (int)(z - a), a);
        if (len <= 0 || (size_t)len >= sizeof tmp || !add_name(tmp, (size_t)len, c->sec, c->line)) return false;
        a = z + 1;
    }
    return true;
}

/* "Math and conversions": list items "- **Label** (remark): `a`, `b`, ...";
 * an item whose label L appears as <L> in another item's name gives the
 * values that name is expanded with. */
#define MAX_ITEMS 32
#define MAX_SPANS 64
typedef struct item {
    char label[32];
    int line, n;
    char span[MAX_SPANS][64];
} item;
typedef struct itemctx {
    item *it;
} itemctx;
static bool item_span(const char *s, size_t n, void *vctx) {
    item *it = ((itemctx *)vctx)->it;
    size_t k = 0;
    while (k < n && (name_char(s[k]) || s[k] == '<' || s[k] == '>')) k++;
    if (!k || k >= sizeof it->span[0] || it->n == MAX_SPANS) {
        snprintf(g_parse_error, sizeof g_parse_error, "line %d: span '%.*s' is not a name", it->line, (int)n, s);
        return false;
    }
    memcpy(it->span[it->n], s, k);
    it->span[it->n++][k] = 0;
    return true;
}

static bool parse_item(const char *text, int line, item *it) {
    memset(it, 0, sizeof *it);
    it->line = line;
    const char *p = strstr(text, "**"), *q = p ? strstr(p + 2, "**") : NULL;
    if (!p || !q || (size_t)(q - p - 2) >= sizeof it->label) {
        snprintf(g_parse_error, sizeof g_parse_error, "line %d: a list item without a **label**", line);
        return false;
    }
    memcpy(it->label, p + 2, (size_t)(q - p - 2));
    p = q + 2;
    while (*p == ' ') p++;
    if (*p == '(') {
        int depth = 0;
        for (; *p; p++)
            if (*p == '(') depth++;
            else if (*p == ')' && --depth == 0) break;
        if (*p) p++;
    }
    if (*p != ':') {
        snprintf(g_parse_error, sizeof g_parse_error, "line %d: list item '%s': expected ':' after the label", line, it->label);
        return false;
    }
    itemctx c = {it};
    return each_span(p + 1, p + strlen(p), item_span, &c);
}

static bool expand(const char *tmpl, const item *items, int nitems, int sec, int line) {
    const char *lt = strchr(tmpl, '<');
    if (!lt) {
        for (const char *c = tmpl; *c; c++)
            if (!name_char(*c)) {
                snprintf(g_parse_error, sizeof g_parse_error, "line %d: '%s' is not a name", line, tmpl);
                return false;
            }
        return add_name(tmpl, strlen(tmpl), sec, line);
    }
    const char *gt = strchr(lt, '>');
    if (!gt) {
        snprintf(g_parse_error, sizeof g_parse_error, "line %d: '%s': unclosed <", line, tmpl);
        return false;
    }
    for (int i = 0; i < nitems; i++) {
        if (strlen(items[i].label) != (size_t)(gt - lt - 1) || strncmp(items[i].label, lt + 1, (size_t)(gt - lt - 1))) continue;
        if (!items[i].n) break;
        for (int v = 0; v < items[i].n; v++) {
            char next[64];
            int len = snprintf(next, sizeof next, "%.*s%s%s", (int)(lt - tmpl), tmpl, items[i].span[v], gt + 1);
            if (len <= 0 || (size_t)len >= sizeof next || !expand(next, items, nitems, sec, line)) return false;
        }
        return true;
    }
    snprintf(g_parse_error, sizeof g_parse_error, "line %d: '%s': no list item **%.*s** gives its values", line, tmpl,
             (int)(gt - lt - 1), lt + 1);
    return false;
}

static bool is_placeholder(const char *label, const item *items, int nitems) {
    char ph[40];
    snprintf(ph, sizeof ph, "<%.32s>", label);
    for (int i = 0; i < nitems; i++)
        for (int s = 0; s < items[i].n; s++)
            if (strstr(items[i].span[s], ph)) return true;
    return false;
}

static bool parse_doc(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(g_parse_error, sizeof g_parse_error, "cannot open %s", path);
        return false;
    }
    static item items[MAX_ITEMS];
    int nitems = 0, sec = -1, lineno = 0;
    char line[4096];
    str cur = {0}; /* the list item being read */
    int cur_line = 0;
    bool ok = true;
    for (;;) {
        bool eof = !fgets(line, sizeof line, f);
        if (!eof) lineno++;
        size_t len = eof ? 0 : strlen(line);
        if (len && line[len - 1] == '\n') line[--len] = 0;
        const char *t = line;
        while (*t == ' ') t++;
        bool item_start = !eof && sec == SEC_MATH && !strncmp(t, "- **", 4);
        bool continuation = !eof && sec == SEC_MATH && cur.len && !item_start && line[0] == ' ' && *t;
        if (cur.len && !continuation) { /* the item ends */
            if (nitems == MAX_ITEMS) {
                snprintf(g_parse_error, sizeof g_parse_error, "more than %d list items", MAX_ITEMS);
                ok = false;
                break;
            }
            if (!(ok = parse_item(cur.s, cur_line, &items[nitems++]))) break;
            cur.len = 0;
        }
        if (eof) break;
        if (continuation) {
            str_add(&cur, " %s", t);
            continue;
        }
        if (item_start) {
            str_add(&cur, "%s", t);
            cur_line = lineno;
            continue;
        }
        if (!strncmp(line, "## ", 3)) {
            sec = -1;
            for (int s = 0; s < NSEC; s++)
                if (!strcmp(line, sections[s].heading)) sec = s;
            continue;
        }
        if (sec >= 0 && sec != SEC_MATH && line[0] == '|') {
            const char *end = line + 1;
            while (*end && !(*end == '|' && end[-1] != '\\')) end++;
            cellctx c = {sec, lineno};
            if (!(ok = each_span(line + 1, end, cell_span, &c))) break;
        }
    }
    fclose(f);
    free(cur.s);
    if (!ok) return false;
    for (int i = 0; i < nitems; i++) {
        if (is_placeholder(items[i].label, items, nitems)) continue;
        for (int s = 0; s < items[i].n; s++)
            if (!expand(items[i].span[s], items, nitems, SEC_MATH, items[i].line)) return false;
    }
    for (int s = 0; s < NSEC; s++) {
        int n = 0;
        for (int i = 0; i < g_nnames; i++) n += g_names[i].sec == s;
        if (n < sections[s].min_names) {
            snprintf(g_parse_error, sizeof g_parse_error,
                     "section \"%s\": %d names read, at least %d expected (the document's format changed?)",
                     sections[s].heading, n, sections[s].min_names);
            return false;
        }
    }
    return true;
}

/* ============================== test cases ================================ */
/* Each kernel runs over the range 5 x 7 x 7 in work-groups of 2 x 3 x 4 (padded
 * to 6 x 9 x 8). Every work-item evaluates every case (so barriers and
 * sub-group functions are reached in uniform control flow); the one at global
 * id (3, 5, 6) stores the results: local id (1, 2, 2), group id (1, 1, 1).
 * In the generated code:
 *   KF(c) KD(c) KI(c) KU(c) KL(c) KUL(c)  the constant c as a float, double,
 *       int, uint, long or ulong computed at run time (not folded away);
 *   KT  float, or double in a case's double twin (KF becomes KD there);
 *   P   this work-item's own global ulong for the case, NB the next
 *       work-item's (same group); LQ this work-item's own local ulong;
 *   ll, gl  local and group linear ids; me  whether this is the storing item. */
enum { K_I, K_F, K_D, K_NOARGS, K_PRINTF };
enum {
    N_DOUBLE = 1,  /* KA_HAS_DOUBLE */
    N_A64 = 2,     /* KA_HAS_ATOMIC64 */
    N_ADBL = 4,    /* KA_HAS_ATOMIC_DOUBLE_ADD */
    N_SG = 8,      /* KA_HAS_SUBGROUPS */
    N_SHUF = 16,   /* KA_HAS_SUBGROUP_SHUFFLE */
    N_PRINTF = 32, /* has_printf */
    N_SYNC = 64,   /* a barrier after the case (it wrote shared local memory) */
};
static const struct {
    unsigned bit;
    const char *macro, *why;
} needs[] = {
    {N_DOUBLE, "KA_HAS_DOUBLE", "the device has no double (ka_device_info.has_double = 0)"},
    {N_A64, "KA_HAS_ATOMIC64", "the device has no 64-bit atomics (has_atomic64 = 0)"},
    {N_ADBL, "KA_HAS_ATOMIC_DOUBLE_ADD", "the device has no double atomics (has_double or has_atomic64 = 0)"},
    {N_SG, "KA_HAS_SUBGROUPS", "the device has no sub-groups (num_subgroup_sizes = 0)"},
    {N_SHUF, "KA_HAS_SUBGROUP_SHUFFLE", "the device has no sub-group shuffles (has_subgroup_shuffle = 0)"},
    {N_PRINTF, NULL, "the device has no printf (has_printf = 0)"},
};

typedef struct tcase {
    const char *name, *pre, *expr;
    int kind;
    unsigned need;
    uint64_t want_i;
    double want_f, tol;
} tcase;

#define MAX_CASES 1024
static tcase g_cases[MAX_CASES];
static int g_ncases;

static void add_case(const char *name, int kind, unsigned need, const char *pre, const char *expr, uint64_t wi, double wf,
                     double tol) {
    if (g_ncases == MAX_CASES) {
        fprintf(stderr, "test_dialect_doc: too many cases\n");
        abort();
    }
    g_cases[g_ncases++] = (tcase){name, pre, expr, kind, need, wi, wf, tol};
}

/* Replaces the words KF and KT for a float (dbl false) or double instance. */
static const char *twin(const char *s, bool dbl) {
    if (!s) return NULL;
    str b = {0};
    str_add(&b, "%s", "");
    for (const char *p = s; *p;) {
        if (name_char(*p) && (p == s || !name_char(p[-1]))) {
            const char *e = p;
            while (name_char(*e)) e++;
            if (e - p == 2 && !strncmp(p, "KF", 2)) str_add(&b, "%s", dbl ? "KD" : "KF");
            else if (e - p == 2 && !strncmp(p, "KT", 2)) str_add(&b, "%s", dbl ? "double" : "float");
            else str_add(&b, "%.*s", (int)(e - p), p);
            p = e;
        } else {
            str_add(&b, "%c", *p++);
        }
    }
    char *r = pool_printf("%s", b.s);
    free(b.s);
    return r;
}

#define CI(n, need, pre, expr, want) add_case(n, K_I, need, pre, expr, (uint64_t)(want), 0, 0)
#define CF(n, need, pre, expr, want, tol) add_case(n, K_F, need, pre, expr, 0, want, tol)
#define CD(n, need, pre, expr, want, tol) add_case(n, K_D, (need) | N_DOUBLE, pre, expr, 0, want, tol)
/* float, and the same in double where the device has it */
#define CFD(n, pre, expr, want)                                            \
    do {                                                                   \
        CF(n, 0, twin(pre, false), twin(expr, false), want, 0);            \
        CD(n, 0, twin(pre, true), twin(expr, true), want, 0);              \
    } while (0)
#define FAST 2e-3 /* native_ and half_: implementation-defined precision */

static void cases_declarations(void) {
    CI("KA_KERNEL", 0, NULL, "1", 1);
    add_case("KA_KERNEL_NOARGS", K_NOARGS, 0, NULL, NULL, 0, 0, 0);
    CI("KA_GLOBAL", 0, "KA_GLOBAL ulong *g = P; *g = KUL(77);", "*g", 77);
    CI("KA_CONST", 0, NULL, "cin[2]", 30);
    CI("KA_RESTRICT", 0, "KA_GLOBAL ulong *KA_RESTRICT q = P; *q = KUL(9);", "*q + (ulong)rp[1]", 15);
    CI("KA_CONSTANT", 0, NULL, "kc[3]", 400);
    CI("KA_LOCAL", N_SYNC, "ka_t_l[ll] = (int)ll + KI(10); ka_barrier();", "ka_t_l[(ll + 1) % KA_T_WG]", 28);
    CI("KA_LOCAL_ARG", N_SYNC, "la[ll] = (int)ll * KI(3); ka_barrier();", "la[(ll + 1) % KA_T_WG]", 54);
    CI("KA_LOCAL_PTR", N_SYNC, "ka_t_l[ll] = (int)ll + KI(20); ka_barrier();", "ka_t_lget(ka_t_l, 3)", 23);
    CI("KA_DEVICE_FN", 0, NULL, "ka_t_twice(KI(21))", 42);
    CI("KA_INLINE", 0, NULL, "ka_t_inc(KI(41))", 42);
    CI("KA_CTX_PARAM", 0, NULL, "ka_t_ctx(KA_CTX, KI(1))", 246);
    CI("KA_CTX", 0, NULL, "ka_t_ctx(KA_CTX, KI(2))", 247);
    CI("KA_UNROLL", 0, "int s = 0;\n        KA_UNROLL for (int j = 0; j < 4; j++) s += j * KI(1);", "s", 6);
    CI("KA_UNROLL_N", 0, "int s = 0;\n        KA_UNROLL_N(2) for (int j = 0; j < 4; j++) s += j * KI(2);", "s", 12);
    add_case("KA_PRINTF", K_PRINTF, N_PRINTF, "if (me) KA_PRINTF(\"ka_doc printf %d\\n\", KI(42));", "1", 1, 0, 0);
}

static void cases_indices(void) {
    CI("ka_global_id", 0, NULL, "ka_global_id(0) + 10 * ka_global_id(1) + 100 * ka_global_id(2)", 653);
    CI("ka_local_id", 0, NULL, "ka_local_id(0) + 10 * ka_local_id(1) + 100 * ka_local_id(2)", 221);
    CI("ka_group_id", 0, NULL, "ka_group_id(0) + 10 * ka_group_id(1) + 100 * ka_group_id(2)", 111);
    CI("ka_group_size", 0, NULL, "ka_group_size(0) + 10 * ka_group_size(1) + 100 * ka_group_size(2)", 432);
    CI("ka_num_groups", 0, NULL, "ka_num_groups(0) + 10 * ka_num_groups(1) + 100 * ka_num_groups(2)", 233);
    CI("ka_ndrange", 0, NULL, "ka_ndrange(0) + 10 * ka_ndrange(1) + 100 * ka_ndrange(2)", 775);
    CI("ka_ndims", 0, NULL, "ka_ndims()", 3);
    /* the storing item is in range; the next one of its group, local id
     * (0, 0, 3), is global (2, 3, 7): a padded lane */
    CI("ka_in_range", 0, "*P = ka_in_range() ? 1u : 0u; ka_barrier_global();", "*P * 10 + *NB", 10);
    CI("ka_global_linear_id", 0, NULL, "ka_global_linear_id()", 3 + 5 * (5 + 7 * 6));
    CI("ka_local_linear_id", 0, NULL, "ka_local_linear_id()", 1 + 2 * (2 + 3 * 2));
    CI("ka_group_linear_id", 0, NULL, "ka_group_linear_id()", 1 + 3 * (1 + 3 * 1));
    CI("ka_group_linear_size", 0, NULL, "ka_group_linear_size()", 24);
    CI("ka_ndrange_linear", 0, NULL, "ka_ndrange_linear()", 245);
}

static void cases_synchronization(void) {
    CI("ka_barrier", N_SYNC, "ka_t_l[ll] = (int)ll + KI(100); ka_barrier();", "ka_t_l[(ll + 1) % KA_T_WG]", 118);
    CI("ka_barrier_local", N_SYNC, "ka_t_l[ll] = (int)ll + KI(200); ka_barrier_local();", "ka_t_l[(ll + 5) % KA_T_WG]", 222);
    CI("ka_barrier_global", 0, "*P = (ulong)ll + KUL(300); ka_barrier_global();", "*NB", 318);
    CI("ka_fence", 0, "*P = KUL(5); ka_fence();", "*P", 5);
}

/* Atomics: a fresh location per case, set to A; the operation with operand V
 * must return A and leave `want` (the stored value is read back). */
static const struct atype {
    const char *t, *k; /* the type, its constant macro */
    unsigned need;
    int64_t a, v; /* the type's bits */
} atypes[] = {
    {"int", "KI", 0, -5, 12},
    {"uint", "KU", 0, 0x80000005, 12},
    {"long", "KL", N_A64, -(INT64_C(5) << 33), INT64_C(12) << 33},
    {"ulong", "KUL", N_A64, (int64_t)UINT64_C(0x8000000500000000), INT64_C(12) << 32},
};

static uint64_t atomic_want(const struct atype *t, const char *op) {
    bool is32 = t->t[0] != 'l' && strcmp(t->t, "ulong"), sgn = t->t[0] != 'u';
    int64_t a = t->a, v = t->v, r;
    if (!strcmp(op, "add")) r = (int64_t)((uint64_t)a + (uint64_t)v);
    else if (!strcmp(op, "sub")) r = (int64_t)((uint64_t)a - (uint64_t)v);
    else if (!strcmp(op, "min")) r = sgn ? (a < v ? a : v) : ((uint64_t)a < (uint64_t)v ? a : v);
    else if (!strcmp(op, "max")) r = sgn ? (a > v ? a : v) : ((uint64_t)a > (uint64_t)v ? a : v);
    else if (!strcmp(op, "and")) r = a & v;
    else if (!strcmp(op, "or")) r = a | v;
    else if (!strcmp(op, "xor")) r = a ^ v;
    else if (!strcmp(op, "load")) r = a;
    else r = v; /* xchg, cmpxchg (compares equal), store */
    if (is32) return sgn ? (uint64_t)(int64_t)(int32_t)(uint32_t)r : (uint64_t)(uint32_t)r;
    return (uint64_t)r;
}

static void cases_atomics(void) {
    static const char *ops[] = {"add", "sub", "min", "max", "and", "or", "xor", "xchg", "cmpxchg", "load", "store"};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t t = 0; t < sizeof atypes / sizeof atypes[0]; t++)
            for (int local = 0; local < 2; local++) {
                const struct atype *at = &atypes[t];
                const char *ptr = local ? pool_printf("KA_LOCAL_PTR(%s) a = (KA_LOCAL_PTR(%s))LQ;", at->t, at->t)
                                        : pool_printf("KA_GLOBAL %s *a = (KA_GLOBAL %s *)P;", at->t, at->t);
                const char *A = pool_printf("%s(%lldLL)", at->k, (long long)at->a);
                const char *V = pool_printf("%s(%lldLL)", at->k, (long long)at->v);
                const char *call;
                if (!strcmp(ops[o], "cmpxchg")) call = pool_printf("%s o = ka_atomic_cmpxchg(a, %s, %s);", at->t, A, V);
                else if (!strcmp(ops[o], "load")) call = pool_printf("%s o = ka_atomic_load(a);", at->t);
                else if (!strcmp(ops[o], "store")) call = pool_printf("%s o = %s; ka_atomic_store(a, %s);", at->t, A, V);
                else call = pool_printf("%s o = ka_atomic_%s(a, %s);", at->t, ops[o], V);
                const char *pre = pool_printf("%s *a = %s;\n        %s", ptr, A, call);
                /* a wrong old value reads as 0x0BAD */
                const char *expr = pool_printf("o == %s ? (%s)*a : (%s)0x0BAD", A, at->t, at->t);
                CI(pool_printf("ka_atomic_%s", ops[o]), at->need, pre, expr, atomic_want(at, ops[o]));
            }
    /* float and double: add, xchg, load, store */
    static const struct {
        const char *op, *call;
        double want;
    } fops[] = {
        {"add", "KT o = ka_atomic_add(a, KF(2.25));", 3.75},
        {"xchg", "KT o = ka_atomic_xchg(a, KF(2.25));", 2.25},
        {"load", "KT o = ka_atomic_load(a);", 1.5},
        {"store", "KT o = KF(1.5); ka_atomic_store(a, KF(2.25));", 2.25},
    };
    for (size_t o = 0; o < sizeof fops / sizeof fops[0]; o++)
        for (int local = 0; local < 2; local++)
            for (int dbl = 0; dbl < 2; dbl++) {
                const char *pre = pool_printf("%s *a = KF(1.5);\n        %s",
                                              local ? "KA_LOCAL_PTR(KT) a = (KA_LOCAL_PTR(KT))LQ;"
                                                    : "KA_GLOBAL KT *a = (KA_GLOBAL KT *)P;",
                                              fops[o].call);
                const char *name = pool_printf("ka_atomic_%s", fops[o].op);
                const char *expr = "o == KF(1.5) ? *a : KF(-1)";
                if (dbl) CD(name, N_ADBL, twin(pre, true), twin(expr, true), fops[o].want, 0);
                else CF(name, 0, twin(pre, false), twin(expr, false), fops[o].want, 0);
            }
}

static void cases_subgroups(void) {
    /* No assumption on how work-items form sub-groups: relations that hold on any device. */
    CI("ka_subgroup_size", N_SG, NULL, "ka_subgroup_size() >= 1u && ka_subgroup_size() <= ka_subgroup_max_size()", 1);
    CI("ka_subgroup_max_size", N_SG, NULL, "ka_subgroup_max_size() >= 1u && ka_subgroup_max_size() <= 1024u", 1);
    CI("ka_subgroup_id", N_SG, NULL, "ka_subgroup_id() < ka_num_subgroups()", 1);
    CI("ka_subgroup_local_id", N_SG, NULL, "ka_subgroup_local_id() < ka_subgroup_size()", 1);
    CI("ka_num_subgroups", N_SG, NULL, "ka_num_subgroups() >= 1u && ka_num_subgroups() * ka_subgroup_max_size() >= KA_T_WG", 1);
    CI("ka_subgroup_barrier", N_SG | N_SYNC,
       "ka_t_l[ll] = (int)ll + KI(500); ka_subgroup_barrier();\n        uint peer = ka_subgroup_broadcast((uint)ll, 0u);",
       "ka_t_l[peer] == (int)peer + 500", 1);
    CI("ka_subgroup_broadcast", N_SG, NULL, "ka_subgroup_broadcast(KI(7) + (int)ka_subgroup_local_id(), 0u)", 7);
    CI("ka_subgroup_reduce_add", N_SG, "int r = ka_subgroup_reduce_add(KI(2));", "r == 2 * (int)ka_subgroup_size()", 1);
    CI("ka_subgroup_reduce_add", N_SG, "float r = ka_subgroup_reduce_add(KF(0.5));", "r == 0.5f * (float)ka_subgroup_size()", 1);
    CI("ka_subgroup_reduce_min", N_SG, NULL, "ka_subgroup_reduce_min(KI(10) + (int)ka_subgroup_local_id())", 10);
    CI("ka_subgroup_reduce_max", N_SG, "int r = ka_subgroup_reduce_max((int)ka_subgroup_local_id());",
       "r == (int)ka_subgroup_size() - 1", 1);
    CI("ka_subgroup_any", N_SG, "int t = ka_subgroup_any(ka_subgroup_local_id() == 0u), f = ka_subgroup_any(KI(0));",
       "(t != 0) * 10 + (f != 0)", 10);
    CI("ka_subgroup_all", N_SG,
       "int t = ka_subgroup_all(ka_subgroup_local_id() < ka_subgroup_size()), f = ka_subgroup_all(ka_subgroup_local_id() == 1000u);",
       "(t != 0) * 10 + (f != 0)", 10);
    const char *lane = "uint lid = ka_subgroup_local_id(); int x = KI(100) + (int)lid;\n        ";
    CI("ka_subgroup_shuffle", N_SG | N_SHUF, pool_printf("%sint y = ka_subgroup_shuffle(x, 0u);", lane), "y", 100);
    CI("ka_subgroup_shuffle_xor", N_SG | N_SHUF, pool_printf("%sint y = ka_subgroup_shuffle_xor(x, 1u);", lane),
       "(lid ^ 1u) < ka_subgroup_size() ? y == 100 + (int)(lid ^ 1u) : 1", 1);
    CI("ka_subgroup_shuffle_down", N_SG | N_SHUF, pool_printf("%sint y = ka_subgroup_shuffle_down(x, 1u);", lane),
       "lid + 1u < ka_subgroup_size() ? y == 101 + (int)lid : 1", 1);
    CI("ka_subgroup_shuffle_up", N_SG | N_SHUF, pool_printf("%sint y = ka_subgroup_shuffle_up(x, 1u);", lane),
       "lid >= 1u ? y == 99 + (int)lid : 1", 1);
}

static void cases_math(void) {
    /* Math, float and double, against the host's libm. */
    CFD("sqrt", NULL, "sqrt(KF(2))", sqrt(2));
    CFD("cbrt", NULL, "cbrt(KF(-27))", -3);
    CFD("rsqrt", NULL, "rsqrt(KF(4))", 0.5);
    CFD("exp", NULL, "exp(KF(1))", exp(1));
    CFD("exp2", NULL, "exp2(KF(3.5))", exp2(3.5));
    CFD("exp10", NULL, "exp10(KF(1.5))", exp10(1.5));
    CFD("expm1", NULL, "expm1(KF(0.125))", expm1(0.125));
    CFD("log", NULL, "log(KF(10))", log(10));
    CFD("log2", NULL, "log2(KF(10))", log2(10));
    CFD("log10", NULL, "log10(KF(2000))", log10(2000));
    CFD("log1p", NULL, "log1p(KF(0.5))", log1p(0.5));
    CFD("sin", NULL, "sin(KF(0.5))", sin(0.5));
    CFD("cos", NULL, "cos(KF(0.5))", cos(0.5));
    CFD("tan", NULL, "tan(KF(0.5))", tan(0.5));
    CFD("asin", NULL, "asin(KF(0.25))", asin(0.25));
    CFD("acos", NULL, "acos(KF(0.25))", acos(0.25));
    CFD("atan", NULL, "atan(KF(0.75))", atan(0.75));
    CFD("atan2", NULL, "atan2(KF(1), KF(-2))", atan2(1, -2));
    CFD("sinh", NULL, "sinh(KF(0.75))", sinh(0.75));
    CFD("cosh", NULL, "cosh(KF(0.75))", cosh(0.75));
    CFD("tanh", NULL, "tanh(KF(0.75))", tanh(0.75));
    CFD("asinh", NULL, "asinh(KF(1.5))", asinh(1.5));
    CFD("acosh", NULL, "acosh(KF(1.5))", acosh(1.5));
    CFD("atanh", NULL, "atanh(KF(0.5))", atanh(0.5));
    CFD("erf", NULL, "erf(KF(0.5))", erf(0.5));
    CFD("erfc", NULL, "erfc(KF(0.5))", erfc(0.5));
    CFD("tgamma", NULL, "tgamma(KF(4.5))", tgamma(4.5));
    CFD("fabs", NULL, "fabs(KF(-2.5))", 2.5);
    CFD("floor", NULL, "floor(KF(-2.5))", -3);
    CFD("ceil", NULL, "ceil(KF(-2.5))", -2);
    CFD("round", NULL, "round(KF(-2.5))", -3);
    CFD("trunc", NULL, "trunc(KF(-2.75))", -2);
    CFD("rint", NULL, "rint(KF(2.5))", 2);
    CFD("pow", NULL, "pow(KF(2), KF(0.5))", sqrt(2));
    CFD("pown", NULL, "pown(KF(1.5), KI(3))", 3.375);
    CFD("fmin", NULL, "fmin(KF(2), KF(-3))", -3);
    CFD("fmax", NULL, "fmax(KF(2), KF(-3))", 2);
    CFD("fmod", NULL, "fmod(KF(7.5), KF(2))", 1.5);
    CFD("fdim", NULL, "fdim(KF(5), KF(3))", 2);
    CFD("hypot", NULL, "hypot(KF(3), KF(4))", 5);
    CFD("copysign", NULL, "copysign(KF(2), KF(-1))", -2);
    CFD("fma", NULL, "fma(KF(2), KF(3), KF(0.5))", 6.5);
    /* More math */
    CFD("mad", NULL, "mad(KF(2), KF(3), KF(0.5))", 6.5);
    CFD("clamp", NULL, "clamp(KF(3.5), KF(0), KF(1)) + clamp(KF(-3.5), KF(0), KF(1))", 1);
    CFD("mix", NULL, "mix(KF(1), KF(3), KF(0.25))", 1.5);
    CFD("sign", NULL, "sign(KF(-2.5)) + 10 * sign(KF(0.5))", 9);
    CFD("step", NULL, "step(KF(1), KF(0.5)) + 10 * step(KF(1), KF(1.5))", 10);
    CFD("smoothstep", NULL, "smoothstep(KF(0), KF(2), KF(0.5))", 0.15625);
    CFD("degrees", NULL, "degrees(KF(0.5))", 0.5 * 180 / M_PI);
    CFD("radians", NULL, "radians(KF(90))", M_PI / 2);
    CFD("fract", "KT ip; KT f = fract(KF(2.75), &ip);", "f + 10 * ip", 20.75);
    CFD("sincos", "KT c; KT s = sincos(KF(0.5), &c);", "s + 10 * c", sin(0.5) + 10 * cos(0.5));
    CFD("powr", NULL, "powr(KF(2), KF(0.5))", sqrt(2));
    CFD("rootn", NULL, "rootn(KF(-8), KI(3))", -2);
    CFD("maxmag", NULL, "maxmag(KF(-3), KF(2))", -3);
    CFD("minmag", NULL, "minmag(KF(-3), KF(2))", 2);
    /* Fast, inexact */
    const struct {
        const char *f, *args;
        double want;
    } fast[] = {
        {"cos", "KF(0.5)", cos(0.5)},          {"divide", "KF(3), KF(4)", 0.75}, {"exp", "KF(1)", exp(1)},
        {"exp2", "KF(3.5)", exp2(3.5)},        {"exp10", "KF(1.5)", exp10(1.5)}, {"log", "KF(10)", log(10)},
        {"log2", "KF(10)", log2(10)},          {"log10", "KF(2000)", log10(2000)}, {"powr", "KF(2), KF(0.5)", sqrt(2)},
        {"recip", "KF(4)", 0.25},              {"rsqrt", "KF(4)", 0.5},          {"sin", "KF(0.5)", sin(0.5)},
        {"sqrt", "KF(2)", sqrt(2)},            {"tan", "KF(0.5)", tan(0.5)},
    };
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++)
        for (int h = 0; h < 2; h++)
            CF(pool_printf("%s_%s", h ? "half" : "native", fast[i].f), 0, NULL,
               pool_printf("%s_%s(%s)", h ? "half" : "native", fast[i].f, fast[i].args), fast[i].want, FAST);
    /* Integer: int and uint; some also long and ulong */
    CI("popcount", 0, NULL, "popcount(KI(0xF0F))", 8);
    CI("popcount", 0, NULL, "popcount(KU(0x80000001u))", 2);
    CI("popcount", 0, NULL, "popcount(KL(0x7F) << 40)", 7);
    CI("popcount", 0, NULL, "popcount(KUL(0xFFFFFFFFFFFFFFFFul))", 64);
    CI("clz", 0, NULL, "clz(KI(1))", 31);
    CI("clz", 0, NULL, "clz(KU(0x00F00000u))", 8);
    CI("clz", 0, NULL, "clz(KL(1))", 63);
    CI("clz", 0, NULL, "clz(KUL(1) << 40)", 23);
    CI("ctz", 0, NULL, "ctz(KI(8))", 3);
    CI("ctz", 0, NULL, "ctz(KI(-2147483647 - 1))", 31);
    CI("ctz", 0, NULL, "ctz(KU(0))", 32);
    CI("ctz", 0, NULL, "ctz(KL(1) << 40)", 40);
    CI("ctz", 0, NULL, "ctz(KUL(0))", 64);
    CI("mul_hi", 0, NULL, "mul_hi(KI(0x40000000), KI(-8))", -2);
    CI("mul_hi", 0, NULL, "mul_hi(KU(0x80000000u), KU(6))", 3);
    CI("mul_hi", 0, NULL, "mul_hi(KL(1) << 62, KL(8))", 2);
    CI("mul_hi", 0, NULL, "mul_hi(KUL(1) << 63, KUL(6))", 3);
    CI("mad_hi", 0, NULL, "mad_hi(KI(0x40000000), KI(8), KI(5))", 7);
    CI("mad_hi", 0, NULL, "mad_hi(KU(0x80000000u), KU(6), KU(1))", 4);
    CI("mul24", 0, NULL, "mul24(KI(1000), KI(-1000))", -1000000);
    CI("mul24", 0, NULL, "mul24(KU(1000), KU(3000))", 3000000);
    CI("mad24", 0, NULL, "mad24(KI(1000), KI(-1000), KI(7))", -999993);
    CI("mad24", 0, NULL, "mad24(KU(1000), KU(3000), KU(5))", 3000005);
    CI("add_sat", 0, NULL, "add_sat(KI(2147483647), KI(1))", 2147483647);
    CI("add_sat", 0, NULL, "add_sat(KU(0xFFFFFFF0u), KU(0x20))", 0xFFFFFFFFu);
    CI("sub_sat", 0, NULL, "sub_sat(KI(-2147483647), KI(2))", INT32_MIN);
    CI("sub_sat", 0, NULL, "sub_sat(KU(5), KU(7))", 0);
    CI("hadd", 0, NULL, "hadd(KI(-7), KI(4))", -2);
    CI("hadd", 0, NULL, "hadd(KU(0xFFFFFFFFu), KU(0xFFFFFFFDu))", 0xFFFFFFFEu);
    CI("rhadd", 0, NULL, "rhadd(KI(7), KI(4))", 6);
    CI("rhadd", 0, NULL, "rhadd(KU(0xFFFFFFFFu), KU(0xFFFFFFFEu))", 0xFFFFFFFFu);
    CI("rotate", 0, NULL, "rotate(KI(0x40000001), KI(2))", 5);
    CI("rotate", 0, NULL, "rotate(KU(0x80000001u), KU(4))", 0x18);
    CI("rotate", 0, NULL, "rotate((KL(1) << 62) | KL(1), KL(3))", 10);
    CI("rotate", 0, NULL, "rotate(KUL(0x8000000000000001ul), KUL(4))", 0x18);
    CI("abs_diff", 0, NULL, "abs_diff(KI(-5), KI(7))", 12);
    CI("abs_diff", 0, NULL, "abs_diff(KU(3), KU(10))", 7);
    CI("min", 0, NULL, "min(KI(3), KI(-5))", -5);
    CI("min", 0, NULL, "min(KU(3), KU(0x80000000u))", 3);
    CI("min", 0, NULL, "min(KL(3), -(KL(1) << 40))", -(INT64_C(1) << 40));
    CI("min", 0, NULL, "min(KUL(3), KUL(1) << 63)", 3);
    CI("max", 0, NULL, "max(KI(3), KI(-5))", 3);
    CI("max", 0, NULL, "max(KU(3), KU(0x80000000u))", 0x80000000u);
    CI("max", 0, NULL, "max(KL(3), -(KL(1) << 40))", 3);
    CI("max", 0, NULL, "max(KUL(3), KUL(1) << 63)", UINT64_C(1) << 63);
    /* Selection */
    CI("select", 0, NULL, "select(KI(10), KI(20), KI(1)) + select(KI(10), KI(20), KI(0))", 30);
    CF("select", 0, NULL, "select(KF(1.5), KF(2.5), KI(0)) + 10 * select(KF(1.5), KF(2.5), KI(1))", 26.5, 0);
    CI("bitselect", 0, NULL, "bitselect(KU(0xF0F0u), KU(0xFF00u), KU(0x0FF0u))", 0xFF00);
    CI("bitselect", 0, NULL, "bitselect(KUL(0xF0F0ul) << 40, KUL(0xFF00ul) << 40, KUL(0x0FF0ul) << 40)", UINT64_C(0xFF00) << 40);
    CF("bitselect", 0, NULL, "bitselect(KF(1), KF(-1), as_float(KU(0x80000000u)))", -1, 0);
    /* Bit casts */
    CI("as_int", 0, NULL, "as_int(KF(-2))", (int32_t)0xC0000000);
    CI("as_uint", 0, NULL, "as_uint(KF(1))", 0x3F800000);
    CF("as_float", 0, NULL, "as_float(KU(0x40400000u)) + as_float(KI(0x40400000))", 6, 0);
    CI("as_long", N_DOUBLE, NULL, "as_long(KD(-2))", (int64_t)UINT64_C(0xC000000000000000));
    CI("as_ulong", N_DOUBLE, NULL, "as_ulong(KD(1))", UINT64_C(0x3FF0000000000000));
    CD("as_double", 0, NULL, "as_double(KUL(0x4008000000000000ul)) + as_double(KL(0x4008000000000000l))", 6, 0);
}

/* ka_convert_<T>_<mode>: the document's names, with two values each (a
 * rounding one, and a saturating one), from float and from double. */
static const struct ctype {
    const char *t;
    int64_t lo;
    uint64_t hi;
} ctypes[] = {
    {"char", INT8_MIN, INT8_MAX},     {"uchar", 0, UINT8_MAX},          {"short", INT16_MIN, INT16_MAX},
    {"ushort", 0, UINT16_MAX},        {"int", INT32_MIN, INT32_MAX},    {"uint", 0, UINT32_MAX},
    {"long", INT64_MIN, INT64_MAX},   {"ulong", 0, UINT64_MAX},
};

static bool add_conversion_cases(const char *name) {
    char t[16], m[8];
    if (sscanf(name, "ka_convert_%15[a-z]_%7[a-z]", t, m) != 2 || strlen(m) != 3) return false;
    const struct ctype *ct = NULL;
    for (size_t i = 0; i < sizeof ctypes / sizeof ctypes[0]; i++)
        if (!strcmp(ctypes[i].t, t)) ct = &ctypes[i];
    if (!ct) return false;
    double x, (*round_fn)(double);
    if (!strcmp(m, "rte")) x = 2.5, round_fn = rint;
    else if (!strcmp(m, "rtz")) x = 2.75, round_fn = trunc;
    else if (!strcmp(m, "rtp")) x = 2.25, round_fn = ceil;
    else if (!strcmp(m, "rtn")) x = 2.75, round_fn = floor;
    else return false;
    bool sgn = ct->lo < 0;
    if (sgn) x = -x;
    double r = round_fn(x);
    uint64_t want = sgn ? (uint64_t)(int64_t)r : (uint64_t)r;
    /* saturation: far beyond the type's range, below for signed types */
    uint64_t sat = sgn ? (uint64_t)ct->lo : ct->hi;
    const char *big = sgn ? "-1e30" : "1e30";
    for (int dbl = 0; dbl < 2; dbl++) {
        const char *k = dbl ? "KD" : "KF";
        unsigned need = dbl ? N_DOUBLE : 0;
        CI(name, need, NULL, pool_printf("%s(%s)", name, pool_printf("%s(%g)", k, x)), want);
        CI(name, need, NULL, pool_printf("%s(%s(%s))", name, k, big), sat);
    }
    return true;
}

/* ============================ generated source ============================ */
#define WG0 2
#define WG1 3
#define WG2 4
#define WGN (WG0 * WG1 * WG2)
#define ND0 5
#define ND1 7
#define ND2 7
#define ITEMS (6 * 9 * 8) /* padded */

static const char src_head[] =
    "#define KF(c) ((float)(c) * x1)\n"
    "#define KI(c) ((int)(c) * i1)\n"
    "#define KU(c) ((uint)(c) * (uint)i1)\n"
    "#define KL(c) ((long)(c) * (long)i1)\n"
    "#define KUL(c) ((ulong)(c) * (ulong)i1)\n"
    "#ifdef KA_HAS_DOUBLE\n"
    "#define KD(c) ((double)(c) * (double)x1)\n"
    "#endif\n"
    "KA_DEVICE_FN int ka_t_twice(int x) { return 2 * x; }\n"
    "static KA_INLINE int ka_t_inc(int x) { return x + 1; }\n"
    "KA_DEVICE_FN ulong ka_t_ctx(KA_CTX_PARAM, int x) { return (ulong)ka_ndrange_linear() + (ulong)x; }\n"
    "KA_DEVICE_FN int ka_t_lget(KA_LOCAL_PTR(int) p, int i) { return p[i]; }\n";

static bool has_word(const char *s, const char *w) {
    size_t n = strlen(w);
    for (const char *p = s ? strstr(s, w) : NULL; p; p = strstr(p + 1, w))
        if ((p == s || !name_char(p[-1])) && !name_char(p[n])) return true;
    return false;
}

/* Per documented name: cases passed, failed, skipped (with the first reason and failure). */
static struct nres {
    int pass, fail, skip;
    const char *why;
    char detail[600];
} g_res[MAX_NAMES];

/* Whether case c belongs to the program of section sec: of one name (only),
 * or of every name that did not fail to build alone. */
static bool case_in(const tcase *c, int sec, const char *only) {
    int i = find_name(c->name);
    return i >= 0 && g_names[i].sec == sec && (only ? !strcmp(only, c->name) : !g_res[i].fail);
}

static const ka_device_info *g_info;

/* The work-group size of a section's launch: WGN, except the sub-group
 * section on PoCL 5, which has no sub-groups in a work-group smaller than
 * its sub-group size (docs/KERNELS.md): there groups of that size (one
 * group of 1-D items; the range, ND0 * ND1 * ND2, fits in it). */
static uint32_t sg_max_size(void) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < g_info->num_subgroup_sizes; i++)
        if (g_info->subgroup_sizes[i] > m) m = g_info->subgroup_sizes[i];
    return m;
}
static bool pocl5(void) {
    return strstr(g_info->platform, "Portable Computing Language") && atoi(g_info->driver_version) >= 5;
}
static uint32_t section_wg(int sec) {
    uint32_t m = sg_max_size();
    if (sec == SEC_SUBGROUP && pocl5() && m > WGN && m <= ITEMS && m <= g_info->max_workgroup_size) return m;
    return WGN;
}

/* The program of a section (or of one name of it): one kernel, ka_doc_<tag>. */
static char *section_source(int sec, const char *only, int *ncases) {
    int nc = 0;
    for (int i = 0; i < g_ncases; i++) nc += case_in(&g_cases[i], sec, only) && g_cases[i].kind != K_NOARGS;
    str b = {0};
    str_add(&b, "#define KA_T_WG %u\n%s#define KA_T_NC %d\n", section_wg(sec), src_head, nc ? nc : 1);
    str_add(&b,
            "KA_KERNEL(ka_doc_%s, KA_GLOBAL ulong *ri, KA_GLOBAL float *rf, KA_GLOBAL ulong *rd, KA_GLOBAL ulong *scr,\n"
            "          KA_CONST(int) cin, KA_GLOBAL int *KA_RESTRICT rp, KA_CONSTANT int *kc, KA_LOCAL_ARG(int) la,\n"
            "          float x1, int i1) {\n"
            "    KA_LOCAL int ka_t_l[KA_T_WG];\n"
            "    KA_LOCAL ulong ka_t_lq[KA_T_WG];\n"
            "    const uint ll = (uint)ka_local_linear_id(), gl = (uint)ka_group_linear_id();\n"
            "    const int me = ka_ndrange(1) == 1 && ka_ndrange(2) == 1 ? ka_global_id(0) == 200\n"
            "                 : ka_global_id(0) == 3 && ka_global_id(1) == 5 && ka_global_id(2) == 6;\n"
            "    KA_GLOBAL ulong *P0 = scr + (gl * KA_T_WG + ll) * KA_T_NC;\n",
            sections[sec].tag);
    int k = 0;
    bool noargs = false;
    for (int i = 0; i < g_ncases; i++) {
        const tcase *c = &g_cases[i];
        if (!case_in(c, sec, only)) continue;
        if (c->kind == K_NOARGS) {
            noargs = true;
            continue;
        }
        int nif = 0;
        for (size_t n = 0; n < sizeof needs / sizeof needs[0]; n++)
            if ((c->need & needs[n].bit) && needs[n].macro) {
                str_add(&b, "#ifdef %s\n", needs[n].macro);
                nif++;
            }
        str_add(&b, "    { /* %s */\n", c->name);
        bool uses_p = has_word(c->pre, "P") || has_word(c->expr, "P");
        if (uses_p) str_add(&b, "        KA_GLOBAL ulong *P = P0 + %d;\n", k);
        if (has_word(c->pre, "NB") || has_word(c->expr, "NB"))
            str_add(&b, "        KA_GLOBAL ulong *NB = scr + (gl * KA_T_WG + (ll + 1) %% KA_T_WG) * KA_T_NC + %d;\n", k);
        if (has_word(c->pre, "LQ")) str_add(&b, "        KA_LOCAL_PTR(ulong) LQ = ka_t_lq + ll;\n");
        if (c->pre) str_add(&b, "        %s\n", c->pre);
        if (c->kind == K_F) str_add(&b, "        float v = (float)(%s);\n        if (me) rf[%d] = v;\n", c->expr, k);
        else if (c->kind == K_D) str_add(&b, "        double v = (double)(%s);\n        if (me) rd[%d] = as_ulong(v);\n", c->expr, k);
        else str_add(&b, "        ulong v = (ulong)(%s);\n        if (me) ri[%d] = v;\n", c->expr, k);
        str_add(&b, "    }\n");
        if (c->need & N_SYNC) str_add(&b, "    ka_barrier();\n");
        while (nif--) str_add(&b, "#endif\n");
        k++;
    }
    str_add(&b, "}\n");
    if (noargs) str_add(&b, "KA_KERNEL_NOARGS(ka_doc_noargs) { }\n");
    *ncases = k;
    return b.s;
}

/* ============ programs libka hands to the OpenCL compiler ================= */
/* Interposed (this executable's definitions come before the ICD loader's):
 * each source and its build options are kept for the strict check. */
#define MAX_CAPTURES 64
typedef struct capture {
    cl_program prog;
    char *src, *opts;
} capture;
static capture g_cap[MAX_CAPTURES];
static int g_ncap;
static pthread_mutex_t g_cap_lock = PTHREAD_MUTEX_INITIALIZER;

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithSource(cl_context ctx, cl_uint count, const char **strings,
                                                             const size_t *lengths, cl_int *err) {
    typedef cl_program (*fn)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
    fn real = (fn)dlsym(RTLD_NEXT, "clCreateProgramWithSource");
    cl_program p = real(ctx, count, strings, lengths, err);
    pthread_mutex_lock(&g_cap_lock);
    if (p && count == 1 && !lengths && g_ncap < MAX_CAPTURES) g_cap[g_ncap++] = (capture){p, strdup(strings[0]), NULL};
    pthread_mutex_unlock(&g_cap_lock);
    return p;
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program prog, cl_uint ndev, const cl_device_id *devs, const char *opts,
                                               void(CL_CALLBACK *notify)(cl_program, void *), void *user) {
    typedef cl_int (*fn)(cl_program, cl_uint, const cl_device_id *, const char *, void(CL_CALLBACK *)(cl_program, void *),
                         void *);
    fn real = (fn)dlsym(RTLD_NEXT, "clBuildProgram");
    pthread_mutex_lock(&g_cap_lock);
    for (int i = g_ncap - 1; i >= 0; i--)
        if (g_cap[i].prog == prog) {
            if (!g_cap[i].opts) g_cap[i].opts = strdup(opts ? opts : "");
            break;
        }
    pthread_mutex_unlock(&g_cap_lock);
    return real(prog, ndev, devs, opts, notify, user);
}

/* ================================ running ================================= */
static ka_device g_dev;
static ka_queue g_q;
static bool g_parsed;

static void name_fail(int n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void name_fail(int n, const char *fmt, ...) {
    if (!g_res[n].fail++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_res[n].detail, sizeof g_res[n].detail, fmt, ap);
        va_end(ap);
    }
}

static const char *unmet(unsigned need) {
    bool have[] = {g_info->has_double, g_info->has_atomic64, g_info->has_double && g_info->has_atomic64,
                   g_info->num_subgroup_sizes > 0, g_info->has_subgroup_shuffle, g_info->has_printf};
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
        if ((need & needs[i].bit) && !have[i]) return needs[i].why;
    return NULL;
}

/* The build log's first error line (or the start of the detail). */
static const char *first_error(const char *log) {
    static char line[300];
    const char *e = strstr(log, "error");
    const char *b = e ? e : log;
    while (e && b > log && b[-1] != '\n') b--;
    size_t n = strcspn(b, "\n");
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), b);
    return line;
}

static ka_buffer buffer_of(size_t bytes, int fill) {
    ka_buffer b;
    KA_OK_OR_FAIL(ka_buffer_create(g_dev, bytes, &b));
    void *h = malloc(bytes);
    assert_non_null(h);
    memset(h, fill, bytes);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, b, 0, h, bytes));
    free(h);
    return b;
}

/* Launches and waits; with out, stdout (fd 1) is captured meanwhile into *out (malloc'ed). */
static void launch_captured(ka_kernel k, const ka_range *r, const ka_arg *a, uint32_t na, char **out) {
    int saved = -1;
    FILE *tmp = NULL;
    if (out) {
        fflush(stdout);
        tmp = tmpfile();
        assert_non_null(tmp);
        saved = dup(1);
        assert_true(saved >= 0 && dup2(fileno(tmp), 1) == 1);
    }
    ka_event ev;
    ka_status st = ka_launch(g_q, k, r, a, na, &ev);
    if (st == KA_OK) st = ka_event_wait(ev, KA_WAIT_FOREVER), ka_event_release(ev);
    if (st == KA_OK) st = ka_queue_finish(g_q);
    if (out) {
        fflush(stdout);
        dup2(saved, 1);
        close(saved);
        off_t n = lseek(fileno(tmp), 0, SEEK_END); /* what fd 1 wrote into it */
        if (n < 0) n = 0;
        *out = calloc(1, (size_t)n + 1);
        assert_non_null(*out);
        if (n > 0 && pread(fileno(tmp), *out, (size_t)n, 0) != n) (*out)[0] = 0;
        fclose(tmp);
        fputs(*out, stdout); /* still shown in the test's output */
    }
    if (st != KA_OK) fail_msg("launch: %s\n%s", ka_status_name(st), ka_last_error());
}

static bool section_has(int sec, int kind) {
    for (int i = 0; i < g_ncases; i++)
        if (g_cases[i].kind == kind && case_in(&g_cases[i], sec, NULL)) return true;
    return false;
}

/* Builds and runs a section's program; records each case's outcome. */
static void run_section(int sec, const ka_kernel_config *cfg) {
    int nc;
    char *src = section_source(sec, NULL, &nc);
    ka_program prog;
    ka_status st = ka_program_build(g_dev, src, NULL, &prog);
    free(src);
    if (st != KA_OK) { /* find the names that do not build, and run the others */
        print_message("  the section's program does not build: %s\n%.3000s\n  building each name alone\n",
                      ka_status_name(st), ka_last_error());
        for (int n = 0; n < g_nnames; n++) {
            if (g_names[n].sec != sec) continue;
            int one;
            char *s1 = section_source(sec, g_names[n].name, &one);
            ka_program p1;
            if (ka_program_build(g_dev, s1, NULL, &p1) == KA_OK) ka_program_release(p1);
            else name_fail(n, "does not build: %s", first_error(ka_last_error()));
            free(s1);
        }
        src = section_source(sec, NULL, &nc);
        st = ka_program_build(g_dev, src, NULL, &prog);
        free(src);
        if (st != KA_OK) fail_msg("without the names that do not build alone, the program still does not build:\n%s",
                                  ka_last_error());
    }
    char kname[64];
    snprintf(kname, sizeof kname, "ka_doc_%s", sections[sec].tag);
    ka_kernel k;
    KA_OK_OR_FAIL(ka_kernel_get(prog, kname, cfg, &k));
    size_t n = (size_t)(nc ? nc : 1);
    ka_buffer ri = buffer_of(n * 8, 0xA5), rf = buffer_of(n * 4, 0xFF), rd = buffer_of(n * 8, 0xFF);
    ka_buffer scr = buffer_of((size_t)ITEMS * n * 8, 0);
    const int cin_h[4] = {10, 20, 30, 40}, rp_h[4] = {5, 6, 7, 8}, kc_h[4] = {100, 200, 300, 400};
    ka_buffer cin = buffer_of(sizeof cin_h, 0), rp = buffer_of(sizeof rp_h, 0), kc = buffer_of(sizeof kc_h, 0);
    KA_OK_OR_FAIL(ka_buffer_write(g_q, cin, 0, cin_h, sizeof cin_h));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, rp, 0, rp_h, sizeof rp_h));
    KA_OK_OR_FAIL(ka_buffer_write(g_q, kc, 0, kc_h, sizeof kc_h));
    ka_arg a[] = {ka_arg_buffer(ri), ka_arg_buffer(rf), ka_arg_buffer(rd), ka_arg_buffer(scr),
                  ka_arg_buffer(cin), ka_arg_buffer(rp), ka_arg_buffer(kc), ka_arg_local(section_wg(sec) * sizeof(int)),
                  ka_arg_f32(1.0f), ka_arg_i32(1)};
    /* Sub-groups in 1-D work-groups (of section_wg() items), the rest in
     * 3-D; item 200 of the 1-D range writes the results (`me` above). */
    ka_range r = sec == SEC_SUBGROUP ? (ka_range){.dims = 1, .size = {ND0 * ND1 * ND2}, .workgroup = {section_wg(sec)}}
                                     : (ka_range){.dims = 3, .size = {ND0, ND1, ND2}, .workgroup = {WG0, WG1, WG2}};
    bool want_printf = section_has(sec, K_PRINTF) && g_info->has_printf;
    char *printed = NULL;
    launch_captured(k, &r, a, 10, want_printf ? &printed : NULL);
    uint64_t *hi = malloc(n * 8), *hd = malloc(n * 8);
    float *hf = malloc(n * 4);
    assert_true(hi && hd && hf);
    KA_OK_OR_FAIL(ka_buffer_read(g_q, hi, ri, 0, n * 8));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, hf, rf, 0, n * 4));
    KA_OK_OR_FAIL(ka_buffer_read(g_q, hd, rd, 0, n * 8));
    int slot = 0;
    for (int i = 0; i < g_ncases; i++) {
        const tcase *c = &g_cases[i];
        if (!case_in(c, sec, NULL)) continue;
        int nm = find_name(c->name);
        int kslot = c->kind == K_NOARGS ? -1 : slot++;
        const char *why = unmet(c->need);
        if (why) {
            if (!g_res[nm].skip++) g_res[nm].why = why;
            continue;
        }
        if (c->kind == K_NOARGS) {
            ka_kernel k0;
            KA_OK_OR_FAIL(ka_kernel_get(prog, "ka_doc_noargs", NULL, &k0));
            launch_captured(k0, &(ka_range){.dims = 1, .size = {3}}, NULL, 0, NULL);
            g_res[nm].pass++;
            continue;
        }
        if (c->kind == K_F || c->kind == K_D) {
            double got;
            if (c->kind == K_F) got = hf[kslot];
            else memcpy(&got, &hd[kslot], sizeof got);
            double tol = c->tol ? c->tol : c->kind == K_F ? 1e-5 : 1e-12;
            double err = fabs(got - c->want_f), scale = fabs(c->want_f) > 1e-30 ? fabs(c->want_f) : 1;
            if (!(err <= tol * scale))
                name_fail(nm, "%s = %.17g, expected %.17g (tolerance %g)%s", c->expr, got, c->want_f, tol,
                          c->kind == K_D ? " [double]" : "");
            else g_res[nm].pass++;
            continue;
        }
        if (hi[kslot] != c->want_i) {
            name_fail(nm, "%s = %lld (0x%llx), expected %lld (0x%llx)%s", c->expr, (long long)hi[kslot],
                      (unsigned long long)hi[kslot], (long long)c->want_i, (unsigned long long)c->want_i,
                      hi[kslot] == 0xA5A5A5A5A5A5A5A5ull ? " [not computed: is the capability macro defined?]" : "");
            continue;
        }
        if (c->kind == K_PRINTF && !(printed && strstr(printed, "ka_doc printf 42\n"))) {
            name_fail(nm, "\"ka_doc printf 42\" was not printed (stdout had: \"%.200s\")", printed ? printed : "");
            continue;
        }
        g_res[nm].pass++;
    }
    free(printed);
    free(hi);
    free(hd);
    free(hf);
    ka_buffer bufs[] = {ri, rf, rd, scr, cin, rp, kc};
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++) KA_OK_OR_FAIL(ka_buffer_release(bufs[b]));
    KA_OK_OR_FAIL(ka_program_release(prog));
}

static int case_count(const char *name) {
    int n = 0;
    for (int i = 0; i < g_ncases; i++) n += !strcmp(g_cases[i].name, name);
    return n;
}

static void test_section(void **state) {
    int sec = (int)(intptr_t)*state;
    if (!g_parsed) fail_msg("docs/KERNELS.md could not be read: %s", g_parse_error);
    for (int n = 0; n < g_nnames; n++)
        if (g_names[n].sec == sec) memset(&g_res[n], 0, sizeof g_res[n]);
    run_section(sec, NULL);
    if (sec == SEC_INDEX) { /* again with the sizes compiled in (KA_STATIC_WG*, KA_STATIC_ND*) */
        ka_kernel_config cfg = {.workgroup = {WG0, WG1, WG2}, .ndrange = {ND0, ND1, ND2}};
        run_section(sec, &cfg);
    }
    int names = 0, passed = 0, failed = 0, skipped = 0;
    for (int n = 0; n < g_nnames; n++) {
        if (g_names[n].sec != sec) continue;
        struct nres *r = &g_res[n];
        names++;
        if (!case_count(g_names[n].name)) name_fail(n, "no test case in tests/test_dialect_doc.c");
        if (r->fail) {
            failed++;
            print_message("  %-26s FAILED: %s\n", g_names[n].name, r->detail);
        } else if (!r->pass) {
            skipped++;
            print_message("  %-26s skipped: %s\n", g_names[n].name, r->why ? r->why : "?");
        } else {
            passed++;
            if (r->skip)
                print_message("  %-26s ok (%d cases; %d skipped: %s)\n", g_names[n].name, r->pass, r->skip, r->why);
            else print_message("  %-26s ok (%d cases)\n", g_names[n].name, r->pass);
        }
    }
    print_message("%s: %d names (docs/KERNELS.md \"%s\"): %d passed, %d skipped, %d failed\n", sections[sec].tag, names,
                  sections[sec].heading + 3, passed, skipped, failed);
    /* PoCL 5 has no sub-groups in a work-group smaller than its sub-group
     * size (get_num_sub_groups() is 0; reductions, votes and shuffles go
     * wrong): a driver issue, docs/KERNELS.md. section_wg() avoids it; where
     * it cannot (a sub-group size past the range), reported and skipped. */
    uint32_t sg_max = sg_max_size();
    if (failed && sec == SEC_SUBGROUP && pocl5() && sg_max > section_wg(sec)) {
        print_message("  known driver issue: PoCL %d has no sub-groups in a work-group of %d items, smaller than its "
                      "sub-group size %u: %d names failed; skipped, not passed\n",
                      atoi(g_info->driver_version), (int)section_wg(sec), sg_max, failed);
        skip();
    }
    if (failed) fail_msg("%d of the section's %d names failed", failed, names);
    if (!passed) skip();
}

/* The document was read, each name has a case, each case a name. */
static void test_doc_names(void **state) {
    (void)state;
    if (!g_parsed) fail_msg("docs/KERNELS.md (%s) could not be read: %s", g_doc_path, g_parse_error);
    int bad = 0;
    for (int s = 0; s < NSEC; s++) {
        int n = 0;
        for (int i = 0; i < g_nnames; i++) n += g_names[i].sec == s;
        print_message("  %-34s %3d names (at least %d)\n", sections[s].heading, n, sections[s].min_names);
    }
    for (int i = 0; i < g_nnames; i++)
        if (!case_count(g_names[i].name)) {
            print_message("  docs/KERNELS.md:%d lists %s, which has no test case here\n", g_names[i].line, g_names[i].name);
            bad++;
        }
    for (int i = 0; i < g_ncases; i++)
        if (find_name(g_cases[i].name) < 0 && (i == 0 || strcmp(g_cases[i].name, g_cases[i - 1].name))) {
            print_message("  a test case calls %s, which docs/KERNELS.md does not list\n", g_cases[i].name);
            bad++;
        }
    print_message("docs/KERNELS.md: %d names, %d test cases\n", g_nnames, g_ncases);
    if (bad) fail_msg("%d names without a test case or test cases without a documented name", bad);
}

/* ==================== the CUDA prelude through NVRTC ====================== */
extern void __lsan_disable(void) __attribute__((weak));
extern void __lsan_enable(void) __attribute__((weak));

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    str b = {0};
    str_add(&b, "%s", "");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) str_add(&b, "%.*s", (int)n, buf);
    fclose(f);
    return b.s;
}

static void test_cuda_prelude_nvrtc(void **state) {
    (void)state;
    if (!g_parsed) fail_msg("docs/KERNELS.md could not be read: %s", g_parse_error);
    test_nvrtc nv;
    if (!test_nvrtc_open(&nv)) {
        print_message("skipped: libnvrtc not found (the CUDA prelude is checked where NVRTC is installed)\n");
        skip();
    }
    assert_true(nv.create && nv.compile && nv.logsize && nv.getlog && nv.destroy && nv.version);
    char *prelude = read_file(g_cuda_prelude_path);
    if (!prelude) fail_msg("cannot read %s", g_cuda_prelude_path);
    /* The prelude includes ka_kernel_common.h from its own directory. */
    const char *slash = strrchr(g_cuda_prelude_path, '/');
    const char *incl = slash ? pool_printf("--include-path=%.*s", (int)(slash - g_cuda_prelude_path), g_cuda_prelude_path)
                             : "--include-path=.";
    int maj = 0, min = 0;
    nv.version(&maj, &min);
    int failed = 0, built = 0;
    for (int sec = 0; sec <= NSEC; sec++) { /* NSEC: the indices again, static */
        int s = sec == NSEC ? SEC_INDEX : sec, nc;
        char *body = section_source(s, NULL, &nc);
        str src = {0};
        str_add(&src, "%s\n#line 1 \"kernel source\"\n%s", prelude, body);
        free(body);
        const char *opts[] = {"-std=c++17", "-arch=compute_75", incl, "-DKA_SUBGROUP_SIZE=32", "-DKA_STATIC_WG0=2",
                              "-DKA_STATIC_WG1=3", "-DKA_STATIC_WG2=4", "-DKA_STATIC_ND0=5", "-DKA_STATIC_ND1=7",
                              "-DKA_STATIC_ND2=7"};
        int nopt = sec == NSEC ? 10 : 4;
        if (__lsan_disable) __lsan_disable(); /* NVRTC's own allocations are not the test's */
        nvrtc_prog p = NULL;
        int r = nv.create(&p, src.s, "kernel.cu", 0, NULL, NULL);
        if (!r) r = nv.compile(p, nopt, opts);
        size_t ln = 0;
        char *log = NULL;
        if (p && !nv.logsize(p, &ln) && ln > 1 && (log = malloc(ln))) nv.getlog(p, log);
        if (p) nv.destroy(&p);
        if (__lsan_enable) __lsan_enable();
        free(src.s);
        built++;
        if (r) {
            failed++;
            print_message("  %s%s: NVRTC error %d\n%.4000s\n", sections[s].tag, sec == NSEC ? " (static sizes)" : "", r,
                          log ? log : "");
        } else {
            print_message("  %s%s: compiles with the CUDA prelude\n", sections[s].tag, sec == NSEC ? " (static sizes)" : "");
        }
        free(log);
    }
    free(prelude);
    print_message("NVRTC %d.%d: %d programs, %d failed\n", maj, min, built, failed);
    if (failed) fail_msg("%d programs do not compile with the CUDA prelude", failed);
}

/* ============== strict OpenCL C 1.2 (clang -pedantic-errors) ============== */
static int clang_check(const char *src, const char *opts, const char *target, char **log) {
    char path[] = "/tmp/ka_doc_XXXXXX.cl", errp[] = "/tmp/ka_doc_XXXXXX.txt";
    int fd = mkstemps(path, 3), fe = mkstemps(errp, 4);
    assert_true(fd >= 0 && fe >= 0);
    size_t n = strlen(src);
    assert_true(write(fd, src, n) == (ssize_t)n);
    close(fd);
    close(fe);
    str cmd = {0};
    str_add(&cmd, "'%s' -x cl %s -fsyntax-only -Xclang -finclude-default-header %s -pedantic-errors -Wno-newline-eof '%s' 2>'%s'",
            g_clang, opts, target, path, errp);
    int rc = system(cmd.s);
    free(cmd.s);
    *log = read_file(errp);
    unlink(path);
    unlink(errp);
    return rc;
}

static void test_opencl_strict_c12(void **state) {
    (void)state;
    if (!g_clang || !*g_clang) {
        print_message("skipped: clang was not found when the build was configured\n");
        skip();
    }
    if (access(g_clang, X_OK) != 0) { /* a build run on another machine */
        print_message("skipped: %s, found when the build was configured, is not on this machine\n", g_clang);
        skip();
    }
    if (!g_ncap) {
        print_message("skipped: no program was built for an OpenCL device in this run (the device: %s)\n", g_info->name);
        skip();
    }
    /* NVIDIA's extension set as clang knows it; SPIR with every extension,
     * which compiles the prelude's 64-bit atomic branches too; and SPIR as
     * OpenCL C 2.0 (the last -cl-std wins), for its sub-group branch. */
    const char *targets[] = {"--target=nvptx64-nvidia-nvcl", "--target=spir64", "--target=spir64 -cl-std=CL2.0"};
    char *log;
    /* The check must be able to fail: a variadic macro is an error in this mode. */
    int rc = clang_check("#define KA__V(...) __VA_ARGS__\n__kernel void k(void) { }\n", "-cl-std=CL1.2", targets[0], &log);
    if (rc == 0) fail_msg("clang -cl-std=CL1.2 -pedantic-errors accepts a variadic macro: the check would prove nothing");
    free(log);
    /* clang defines cl_intel_subgroups for SPIR, but in OpenCL C 1.2 clang 14
     * declares none of its functions and clang 15 not its shuffles: there,
     * SPIR goes without the extension. */
    rc = clang_check("__kernel void k(__global int *o) {\n#ifdef cl_intel_subgroups\n"
                     "    o[0] = (int)get_sub_group_size() + intel_sub_group_shuffle(o[1], 0u);\n#endif\n}\n",
                     "-cl-std=CL1.2", targets[1], &log);
    free(log);
    if (rc) {
        targets[1] = "--target=spir64 -Xclang -cl-ext=-cl_intel_subgroups,-cl_intel_subgroups_short";
        print_message("  this clang lacks cl_intel_subgroups' functions for SPIR in OpenCL C 1.2: that target goes"
                      " without the extension\n");
    }
    int checked = 0, failed = 0;
    for (int i = 0; i < g_ncap; i++) {
        bool dup = false;
        for (int j = 0; j < i; j++)
            dup |= !strcmp(g_cap[i].src, g_cap[j].src) && !strcmp(g_cap[i].opts ? g_cap[i].opts : "", g_cap[j].opts ? g_cap[j].opts : "");
        if (dup) continue;
        for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
            const char *opts = g_cap[i].opts ? g_cap[i].opts : "";
            rc = clang_check(g_cap[i].src, opts, targets[t], &log);
            checked++;
            if (rc != 0) {
                failed++;
                print_message("  program %d (options \"%s\"), %s: clang exit status %d\n%.4000s\n", i, opts,
                              targets[t], rc, log ? log : "");
            }
            free(log);
        }
    }
    print_message("strict OpenCL C 1.2 (%s -pedantic-errors): %d programs x targets, %d failed\n", g_clang, checked, failed);
    if (failed) fail_msg("%d programs are not strict OpenCL C 1.2", failed);
}

/* ================================== main ================================== */
static void define_cases(void) {
    cases_declarations();
    cases_indices();
    cases_synchronization();
    cases_atomics();
    cases_subgroups();
    cases_math();
    for (int i = 0; i < g_nnames; i++)
        if (!strncmp(g_names[i].name, "ka_convert_", 11)) add_conversion_cases(g_names[i].name);
}

int main(int argc, char **argv) {
    /* The paths CMake compiled in, or the command line's. */
    g_doc_path = argc > 1 ? argv[1] : KA_DOC_KERNELS_MD;
    g_cuda_prelude_path = argc > 2 ? argv[2] : KA_DOC_CUDA_PRELUDE;
    g_clang = argc > 3 ? argv[3] : KA_DOC_CLANG;
    /* Every build reaches the OpenCL compiler (no kernel cache), so the
     * strict check sees each program libka composes. */
    setenv("KA_CACHE", "0", 1);
    g_parsed = parse_doc(g_doc_path);
    if (!g_parsed) fprintf(stderr, "docs/KERNELS.md: %s\n", g_parse_error);
    define_cases();
    if (ka_device_open(NULL, &g_dev) || ka_device_get_info(g_dev, &g_info) || ka_queue_create(g_dev, NULL, &g_q)) {
        fprintf(stderr, "setup: %s\n", ka_last_error());
        return 1;
    }
    int rc;
    if (g_info->backend == KA_BACKEND_NULL) { /* $KA_DEVICE=null runs no kernels */
        fprintf(stderr, "the default device is the null device: skipped\n");
        rc = 77;
    } else {
        print_message("device: %s (%s)\n", g_info->name, g_info->selector);
        const struct CMUnitTest tests[] = {
            {"doc_names", test_doc_names, NULL, NULL, NULL},
            {"declarations", test_section, NULL, NULL, (void *)(intptr_t)SEC_DECL},
            {"indices", test_section, NULL, NULL, (void *)(intptr_t)SEC_INDEX},
            {"synchronization", test_section, NULL, NULL, (void *)(intptr_t)SEC_SYNC},
            {"atomics", test_section, NULL, NULL, (void *)(intptr_t)SEC_ATOMIC},
            {"subgroups", test_section, NULL, NULL, (void *)(intptr_t)SEC_SUBGROUP},
            {"math", test_section, NULL, NULL, (void *)(intptr_t)SEC_MATH},
            {"cuda_prelude_nvrtc", test_cuda_prelude_nvrtc, NULL, NULL, NULL},
            {"opencl_strict_c12", test_opencl_strict_c12, NULL, NULL, NULL},
        };
        rc = cmocka_run_group_tests_name("dialect_doc", tests, NULL, NULL);
    }
    ka_queue_release(g_q);
    ka_device_close(g_dev);
    for (int i = 0; i < g_ncap; i++) {
        free(g_cap[i].src);
        free(g_cap[i].opts);
    }
    return rc;
}
