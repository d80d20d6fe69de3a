/* KA_KERNEL declarations read from source text (kdecl.h). */
#include "kdecl.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

const char *ka__src_skip(const char *s) {
    if (s[0] == '/' && s[1] == '*') {
        const char *e = strstr(s + 2, "*/");
        return e ? e + 2 : s + strlen(s);
    }
    if (s[0] == '/' && s[1] == '/') {
        while (*s && *s != '\n') s += s[0] == '\\' && s[1] ? 2 : 1;
        return s;
    }
    if (*s == '"' || *s == '\'') {
        char q = *s++;
        while (*s && *s != q && *s != '\n') s += s[0] == '\\' && s[1] ? 2 : 1;
        return *s == q ? s + 1 : s;
    }
    return s;
}

bool ka__kdecl_has(const char *b, const char *e, const char *w) {
    size_t n = strlen(w);
    for (const char *s = b; s + n <= e; s++)
        if (!strncmp(s, w, n) && (s == b || !ka__ident_char(s[-1])) && (s + n == e || !ka__ident_char(s[n]))) return true;
    return false;
}

bool ka__kdecl_scalar_type(const char *s, const char *e) {
    static const char *const words[] = {"const", "volatile", "unsigned", "signed", "char", "short", "int", "long",
                                        "float", "double", "bool", "uchar", "ushort", "uint", "ulong", "size_t",
                                        "ka_size_t", "ka_i8", "ka_u8", "ka_i16", "ka_u16", "ka_i32", "ka_u32",
                                        "ka_i64", "ka_u64", "ka_f32", "ka_f64", "int8_t", "uint8_t", "int16_t",
                                        "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t"};
    bool any = false;
    while (s < e) {
        if (isspace((unsigned char)*s)) {
            s++;
            continue;
        }
        if (!ka__ident_char(*s)) return false;
        const char *w = s;
        while (s < e && ka__ident_char(*s)) s++;
        bool known = false;
        for (size_t i = 0; i < sizeof words / sizeof words[0] && !known; i++)
            known = strlen(words[i]) == (size_t)(s - w) && !strncmp(words[i], w, (size_t)(s - w));
        if (!known) return false;
        any = true;
    }
    return any;
}

/* The parameter list after "KA_KERNEL(name,": false unless every parameter
 * has a name and there are at most cap of them. *end: past the ')'. */
static bool parse_params(const char *s, ka__kparam *par, uint32_t cap, uint32_t *n_out, const char **end) {
    uint32_t n = 0;
    int depth = 0;
    const char *b = s;
    for (; *s; s++) {
        if (*s == '(') depth++;
        else if (*s == ')' && depth > 0) depth--;
        else if ((*s == ',' || *s == ')') && depth == 0) {
            if (n == cap) return false;
            par[n].type = b;
            par[n++].name_end = s;
            b = s + 1;
            if (*s == ')') break;
        }
    }
    if (!*s) return false;
    *end = s + 1;
    for (uint32_t i = 0; i < n; i++) {
        const char *e = par[i].name_end, *t = par[i].type;
        while (e > t && isspace((unsigned char)e[-1])) e--;
        const char *nb = e;
        while (nb > t && ka__ident_char(nb[-1])) nb--;
        if (nb == e || isdigit((unsigned char)*nb)) return false;
        while (t < nb && isspace((unsigned char)*t)) t++;
        const char *te = nb;
        while (te > t && isspace((unsigned char)te[-1])) te--;
        if (te == t) return false; /* a name without a type */
        par[i] = (ka__kparam){t, te, nb, e};
    }
    *n_out = n;
    return true;
}

bool ka__kdecl_next(const char **pos, const char **name, size_t *name_len, ka__kparam *par, uint32_t cap, uint32_t *n) {
    for (const char *s = *pos, *t; (s = ka__src_find_word(s, "KA_KERNEL", 9));) {
        t = s;
        while (isspace((unsigned char)*t)) t++;
        if (*t++ != '(') continue;
        while (isspace((unsigned char)*t)) t++;
        const char *nb = t;
        while (ka__ident_char(*t)) t++;
        if (t == nb) continue;
        const char *ne = t;
        while (isspace((unsigned char)*t)) t++;
        const char *end;
        if (*t != ',' || !parse_params(t + 1, par, cap, n, &end)) continue;
        *name = nb;
        *name_len = (size_t)(ne - nb);
        *pos = end;
        return true;
    }
    *pos += strlen(*pos);
    return false;
}

bool ka__kdecl_find(const char *src, const char *kname, ka__kparam *par, uint32_t cap, uint32_t *n) {
    size_t kl = strlen(kname), nl;
    const char *name;
    while (ka__kdecl_next(&src, &name, &nl, par, cap, n))
        if (nl == kl && !strncmp(name, kname, kl)) return true;
    return false;
}

/* A KA_KERNEL_NOARGS(kname) outside comments and literals. */
static bool find_noargs(const char *s, const char *kname) {
    size_t kl = strlen(kname);
    for (const char *t; (s = ka__src_find_word(s, "KA_KERNEL_NOARGS", 16));) {
        t = s;
        while (isspace((unsigned char)*t)) t++;
        if (*t++ != '(') continue;
        while (isspace((unsigned char)*t)) t++;
        if (strncmp(t, kname, kl) || ka__ident_char(t[kl])) continue;
        t += kl;
        while (isspace((unsigned char)*t)) t++;
        if (*t == ')') return true;
    }
    return false;
}

bool ka__kdecl_count(const char *src, const char *kname, uint32_t *n) {
    ka__kparam par[KA_MAX_ARGS];
    if (ka__kdecl_find(src, kname, par, KA_MAX_ARGS, n)) return true;
    *n = 0;
    return find_noargs(src, kname);
}

const char *ka__src_find_word(const char *s, const char *w, size_t n) {
    while (*s) {
        const char *t = ka__src_skip(s);
        if (t != s) {
            s = t;
        } else if (ka__ident_char(*s)) {
            const char *b = s;
            while (ka__ident_char(*s)) s++;
            if ((size_t)(s - b) == n && !memcmp(b, w, n)) return s;
        } else {
            s++;
        }
    }
    return NULL;
}

bool ka__src_has_word(const char *s, const char *w) { return ka__src_find_word(s, w, strlen(w)) != NULL; }

void ka__kernel_alias(const char *name, size_t n, char *out) {
    XXH128_hash_t h = XXH3_128bits(name, n);
    snprintf(out, KA__ALIAS_LEN + 1, "%s%016llx%016llx", KA__ALIAS_PREFIX, (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

uint32_t ka__kdecl_traits(const ka__kparam *p) {
    const char *b = p->type, *e = p->type_end;
    size_t n = (size_t)(e - b);
    return (memchr(b, '*', n) ? KA__KT_STAR : 0u) | (memchr(b, '[', n) ? KA__KT_ARRAY : 0u) |
           (ka__kdecl_scalar_type(b, e) ? KA__KT_SCALAR : 0u) | (ka__kdecl_has(b, e, "KA_LOCAL_ARG") ? KA__KT_LOCAL_ARG : 0u) |
           (ka__kdecl_has(b, e, "KA_CONST") ? KA__KT_CONST : 0u) |
           (ka__kdecl_has(b, e, "KA_GLOBAL") || ka__kdecl_has(b, e, "KA_LOCAL") ? KA__KT_SPACE : 0u);
}

void ka__kdecl_signature(const char *src, const char *kname, ka__argsig *sig, uint32_t nargs) {
    ka__kparam par[KA_MAX_ARGS];
    const char *name;
    size_t nl, kl = strlen(kname);
    uint32_t n;
    while (ka__kdecl_next(&src, &name, &nl, par, KA_MAX_ARGS, &n)) {
        if (nl != kl || strncmp(name, kname, kl) || n != nargs) continue;
        for (uint32_t i = 0; i < n; i++) {
            size_t len = (size_t)(par[i].name_end - par[i].name);
            if (len > sizeof sig[i].name - 1) len = sizeof sig[i].name - 1;
            memcpy(sig[i].name, par[i].name, len);
            sig[i].name[len] = 0;
            uint32_t t = ka__kdecl_traits(&par[i]);
            bool star = t & KA__KT_STAR, local = t & KA__KT_LOCAL_ARG, cnst = t & KA__KT_CONST;
            if (local && sig[i].size == 8) sig[i].kind = KA__SIG_LOCAL;
            else if ((star || cnst) && !local && sig[i].size == 8) sig[i].kind = KA__SIG_BUFFER;
            else if (!star && !local && !cnst && (t & KA__KT_SCALAR)) sig[i].kind = KA__SIG_SCALAR;
        }
        return;
    }
}

void ka__kdecl_classes(const char *src, const char *kname, ka__argsig *sig, uint32_t nargs) {
    ka__kparam par[KA_MAX_ARGS];
    uint32_t n;
    if (!ka__kdecl_find(src, kname, par, KA_MAX_ARGS, &n) || n != nargs) return;
    for (uint32_t i = 0; i < n; i++) {
        const char *b = par[i].type, *e = par[i].type_end;
        size_t len = (size_t)(e - b);
        if (len > sizeof sig[i].type - 1) len = sizeof sig[i].type - 1;
        memcpy(sig[i].type, b, len);
        sig[i].type[len] = 0;
        if (ka__kdecl_traits(&par[i]) != KA__KT_SCALAR) continue; /* a pointer, an array, local memory, a struct */
        bool fl = ka__kdecl_has(b, e, "float") || ka__kdecl_has(b, e, "double") || ka__kdecl_has(b, e, "ka_f32") ||
                  ka__kdecl_has(b, e, "ka_f64");
        sig[i].cls = fl ? KA__CLS_FLOAT : KA__CLS_INT;
    }
}

/* Past blanks and comments from s. */
static const char *skip_blank(const char *s) {
    for (;;) {
        while (isspace((unsigned char)*s)) s++;
        if (s[0] == '/' && (s[1] == '*' || s[1] == '/')) s = ka__src_skip(s);
        else return s;
    }
}

int ka__kdecl_workgroup(const char *end, uint32_t wg[3], const char **after) {
    const char *s = skip_blank(end);
    *after = s;
    if (strncmp(s, "KA_WORKGROUP", 12) || ka__ident_char(s[12])) return 0;
    s = skip_blank(s + 12);
    if (*s++ != '(') return -1;
    for (int i = 0; i < 3; i++) {
        s = skip_blank(s);
        if (!isdigit((unsigned char)*s)) return -1;
        unsigned long long v = 0;
        while (isdigit((unsigned char)*s) && v <= UINT32_MAX) v = v * 10 + (unsigned)(*s++ - '0');
        while (*s == 'u' || *s == 'U') s++;
        if (v == 0 || v > UINT32_MAX) return -1;
        wg[i] = (uint32_t)v;
        s = skip_blank(s);
        if (*s++ != (i < 2 ? ',' : ')')) return -1;
    }
    *after = s;
    return 1;
}

const char *ka__src_match_brace(const char *s) {
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
    return NULL;
}

bool ka__kdecl_body(const char *s, const char **b, const char **e) {
    s = skip_blank(s);
    if (*s != '{') return false;
    *b = s;
    return (*e = ka__src_match_brace(s)) != NULL;
}

const char *ka__kdecl_return_before_barrier(const char *b, const char *e) {
    const char *ret = NULL;
    for (const char *s = b; s < e;) {
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
        while (s < e && ka__ident_char(*s)) s++;
        size_t n = (size_t)(s - w);
        if (n == 6 && !memcmp(w, "return", 6)) {
            if (!ret) ret = w;
        } else if (ret && ((n == 10 && !memcmp(w, "ka_barrier", 10)) || (n == 16 && !memcmp(w, "ka_barrier_local", 16)) ||
                           (n == 17 && !memcmp(w, "ka_barrier_global", 17)))) {
            return ret;
        }
    }
    return NULL;
}

/* ---- include-like directives (ka__src_has_include) ----------------------- */

/* Where the compilers libka hands a source to read translation phases 1 to 3
 * differently, in ways that can put a directive inside or outside a comment
 * or literal: the scan runs once per combination, and any run that finds one
 * counts. */
enum {
    INC_TRIGRAPHS = 1,  /* ??= is #, ??/ a backslash: clang's OpenCL C and ISO C (PoCL); not gnu11 */
    INC_RAW = 2,        /* R"d(...)d" raw strings: gcc's gnu11, C++ (NVRTC); not clang's C */
    INC_SEPARATORS = 4, /* 1'000 is one number: C++14 (NVRTC), C23 */
    INC_SPACED = 8,     /* a backslash, blanks, a newline: a splice in gcc and clang, not in ISO C */
};

static bool inc_ident(char c) { return ka__ident_char(c) || c == '$' || (unsigned char)c >= 0x80; }

/* The character at *p after phases 1 and 2: a trigraph replaced (mode m), a
 * CR LF or a lone CR read as '\n', line splices removed. *p moves past it;
 * 0 at the end (*p stays). */
static char inc_get(const char **p, unsigned m) {
    static const char tri_from[] = "=/'()!<>-", tri_to[] = "#\\^[]|{}~";
    const char *s = *p, *t;
    for (;;) {
        char c = *s;
        size_t n = 1;
        if ((m & INC_TRIGRAPHS) && c == '?' && s[1] == '?' && s[2] && (t = strchr(tri_from, s[2])))
            c = tri_to[t - tri_from], n = 3;
        else if (c == '\r')
            c = '\n', n = s[1] == '\n' ? 2 : 1;
        if (c == '\\') {
            const char *q = s + n;
            while ((m & INC_SPACED) && (*q == ' ' || *q == '\t' || *q == '\f' || *q == '\v')) q++;
            if (*q == '\n' || *q == '\r') {
                s = q + (q[0] == '\r' && q[1] == '\n' ? 2 : 1);
                continue;
            }
        }
        *p = s + (c ? n : 0);
        return c;
    }
}

static char inc_peek(const char *p, unsigned m) { return inc_get(&p, m); }

/* Past the rest of a string or character literal closed by q (an
 * unterminated one ends at its line). */
static void inc_literal(const char **s, char q, unsigned m) {
    for (char c; (c = inc_peek(*s, m)) && c != '\n';) {
        inc_get(s, m);
        if (c == q) return;
        if (c == '\\' && inc_peek(*s, m) != '\n') inc_get(s, m);
    }
}

/* Past the rest of a raw string whose R" ends at *s (phases 1 and 2 do not
 * apply inside): false when it is not one (the caller reads an ordinary
 * string) or never ends (*s at the end). */
static bool inc_raw(const char **s) {
    const char *d = *s, *e = d;
    while (e - d <= 16 && *e && *e != '(' && !strchr(" ()\\\t\v\f\r\n\"", *e)) e++;
    if (*e != '(') return false;
    size_t dl = (size_t)(e - d);
    for (const char *t = e + 1; *t; t++)
        if (*t == ')' && !strncmp(t + 1, d, dl) && t[1 + dl] == '"') {
            *s = t + dl + 2;
            return true;
        }
    *s = e + strlen(e);
    return true;
}

/* One identifier or pp-number that starts with c (the rest read from *s): its
 * first characters into w (cap bytes), its length returned. */
static size_t inc_word(const char **s, char c, unsigned m, char *w, size_t cap) {
    bool num = (c >= '0' && c <= '9') || c == '.';
    size_t n = 0;
    for (char prev = 0;; prev = c) {
        if (n < cap) w[n] = c;
        n++;
        const char *t = *s;
        c = inc_get(&t, m);
        bool more = inc_ident(c) || (num && (c == '.' || ((c == '+' || c == '-') && prev && strchr("eEpP", prev)))) ||
                    (num && c == '\'' && (m & INC_SEPARATORS) && inc_ident(inc_peek(t, m)));
        if (!more) return n;
        *s = t;
    }
}

static bool inc_is(const char *w, size_t n, const char *word) { return n == strlen(word) && !memcmp(w, word, n); }

/* Whether src, read in mode m, has a line whose first token is # or %:
 * followed by include, include_next, import or embed, or an identifier that
 * starts with __has_include or __has_embed, outside comments and literals. */
static bool inc_scan(const char *s, unsigned m) {
    bool bol = true, hash = false; /* no token yet on this line; its first was # */
    if (!strncmp(s, "\xef\xbb\xbf", 3)) s += 3; /* a UTF-8 byte order mark */
    for (char c; (c = inc_get(&s, m));) {
        char nx = inc_peek(s, m);
        if (c == '\n') {
            bol = true, hash = false;
        } else if (c == ' ' || c == '\t' || c == '\f' || c == '\v') {
            /* a blank keeps the line's state */
        } else if (c == '/' && nx == '*') { /* a comment is a blank, over lines too */
            inc_get(&s, m);
            for (char a = 0, b;; a = b) {
                if (!(b = inc_get(&s, m))) return false;
                if (a == '*' && b == '/') break;
            }
        } else if (c == '/' && nx == '/') {
            while ((c = inc_peek(s, m)) && c != '\n') inc_get(&s, m);
        } else if (c == '#' || (c == '%' && nx == ':')) {
            if (c == '%') inc_get(&s, m);
            const char *t = s;
            char a = inc_get(&t, m), b = inc_peek(t, m);
            hash = bol && a != '#' && !(a == '%' && b == ':'); /* ## and %:%: are another token */
            bol = false;
        } else if (c == '"' || c == '\'') {
            inc_literal(&s, c, m);
            bol = hash = false;
        } else if (inc_ident(c) || (c == '.' && nx >= '0' && nx <= '9')) {
            char w[16];
            size_t n = inc_word(&s, c, m, w, sizeof w);
            if ((hash && (inc_is(w, n, "include") || inc_is(w, n, "include_next") || inc_is(w, n, "import") ||
                          inc_is(w, n, "embed"))) ||
                (n >= 13 && !memcmp(w, "__has_include", 13)) || (n >= 11 && !memcmp(w, "__has_embed", 11)))
                return true;
            if ((m & INC_RAW) && inc_peek(s, m) == '"' &&
                (inc_is(w, n, "R") || inc_is(w, n, "LR") || inc_is(w, n, "uR") || inc_is(w, n, "UR") || inc_is(w, n, "u8R"))) {
                inc_get(&s, m);
                if (!inc_raw(&s)) inc_literal(&s, '"', m);
            }
            bol = hash = false;
        } else {
            bol = hash = false;
        }
    }
    return false;
}

/* Whether a line splice may stand in src: a backslash or ??/ before a
 * newline (blanks between). Without one, a directive's words are spelled
 * whole. */
static bool inc_may_splice(const char *s) {
    for (const char *b = s; (b = strpbrk(b, "\\?")) != NULL;) {
        const char *q = *b == '\\' ? b + 1 : !strncmp(b, "?\?/", 3) ? b + 3 : NULL;
        b++;
        if (!q) continue;
        while (*q == ' ' || *q == '\t' || *q == '\f' || *q == '\v') q++;
        if (*q == '\n' || *q == '\r') return true;
    }
    return false;
}

bool ka__src_has_include(const char *src) {
    if (!inc_may_splice(src) && !strstr(src, "include") && !strstr(src, "import") && !strstr(src, "embed"))
        return false;
    /* Only the modes whose construct occurs in src can read it differently. */
    unsigned rel = (strstr(src, "??") ? INC_TRIGRAPHS : 0u) | (strchr(src, '\'') ? INC_SEPARATORS : 0u) |
                   (strstr(src, "R\"") || strstr(src, "R\\") ? INC_RAW : 0u) | (strchr(src, '\\') ? INC_SPACED : 0u);
    for (unsigned m = 0;; m = (m - rel) & rel) { /* every subset of rel */
        if (inc_scan(src, m)) return true;
        if (m == rel) return false;
    }
}
