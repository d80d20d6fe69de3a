/* KA_KERNEL(name, params...) declarations read from a program's source, for
 * what a driver does not report: a back-end whose driver gives only sizes
 * (CUDA) takes parameter names and kinds from them (ka__kdecl_signature),
 * the OpenCL back-end the types whose size it asks the compiler for (and
 * rewrites the declarations themselves). The scan is
 * textual: comments and literals are skipped, the preprocessor is not run (a
 * declaration in an `#if 0` block is found); callers treat what it finds as a
 * hint that may be absent. */
#ifndef KA_KDECL_H
#define KA_KDECL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objects.h"

typedef struct ka__kparam {
    const char *type, *type_end; /* everything before the name, trimmed */
    const char *name, *name_end;
} ka__kparam;

/* A character of an identifier or a number. */
static inline bool ka__ident_char(char c) {
    return c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9');
}
/* Past the comment or string/character literal that starts at s (an
 * unterminated literal ends at its line); s itself when none starts there. */
const char *ka__src_skip(const char *s);
/* Past the '}' matching the '{' at s (comments and literals skipped); NULL
 * when the source ends first. */
const char *ka__src_match_brace(const char *s);
/* The first whole identifier w (n characters) at or after s, outside comments
 * and literals: a pointer just past it, or NULL when there is none. */
const char *ka__src_find_word(const char *s, const char *w, size_t n);

/* The next declaration at or after *pos (outside comments and literals): its name and up to cap parameters
 * (*n is the count; more than cap, or a parameter without a name, skips the
 * declaration). Advances *pos past it; false when there is none. */
bool ka__kdecl_next(const char **pos, const char **name, size_t *name_len, ka__kparam *par, uint32_t cap, uint32_t *n);
/* The declaration of kernel kname; false if none is found. */
bool ka__kdecl_find(const char *src, const char *kname, ka__kparam *par, uint32_t cap, uint32_t *n);
/* The parameter count of kernel kname's declaration: KA_KERNEL(kname, ...)
 * (at most KA_MAX_ARGS parameters), or KA_KERNEL_NOARGS(kname) (0); false if
 * neither is found. */
bool ka__kdecl_count(const char *src, const char *kname, uint32_t *n);
/* A type spelled only with scalar type words (int, unsigned long, ka_f32...). */
bool ka__kdecl_scalar_type(const char *b, const char *e);
/* The alias of kernel name [name, name + n) (objects.h) into out, which holds
 * KA__ALIAS_LEN + 1 bytes; NUL-terminated. */
void ka__kernel_alias(const char *name, size_t n, char *out);
/* Whether src uses the word w outside comments and literals (ka_assert). */
bool ka__src_has_word(const char *src, const char *w);
/* Whether src may read another file: a directive #include, #include_next,
 * #import or #embed (# also spelled %: or ??=), or __has_include or
 * __has_embed. Translation phases 1 to 3 as a C preprocessor applies them
 * (line splices, comments as blanks, string and character literals, raw
 * strings), once for each dialect the compilers speak (trigraphs or not, raw
 * strings or not...): a directive any of them sees counts. A directive in an
 * `#if 0` block counts too: a false finding only turns the kernel cache off. */
bool ka__src_has_include(const char *src);
/* Whether [b, e) contains the word w. */
bool ka__kdecl_has(const char *b, const char *e, const char *w);

/* What a parameter's declared type is spelled with (ka__kdecl_traits). */
enum {
    KA__KT_STAR = 1u << 0,      /* a '*' */
    KA__KT_ARRAY = 1u << 1,     /* a '[' */
    KA__KT_SCALAR = 1u << 2,    /* scalar type words only (ka__kdecl_scalar_type) */
    KA__KT_LOCAL_ARG = 1u << 3, /* KA_LOCAL_ARG(T): dynamic local memory */
    KA__KT_CONST = 1u << 4,     /* KA_CONST(T): a read-only buffer */
    KA__KT_SPACE = 1u << 5,     /* KA_GLOBAL or KA_LOCAL */
};
uint32_t ka__kdecl_traits(const ka__kparam *p);
/* Names and, where certain, kinds of kernel kname's nargs parameters from its
 * declaration in src, over sig whose sizes the driver reported: a pointer or
 * KA_CONST(T) of 8 bytes is a buffer, KA_LOCAL_ARG(T) of 8 bytes local
 * memory, a parameter spelled only with scalar type words a scalar; anything
 * else (a typedef, a struct) stays as it was. Nothing is set unless a
 * declaration is found with exactly nargs parameters. */
void ka__kdecl_signature(const char *src, const char *kname, ka__argsig *sig, uint32_t nargs);
/* Each scalar parameter's type class (float, double, ka_f32, ka_f64: float;
 * other scalar type words: integer) and type text into sig, from kernel
 * kname's declaration in src; nothing unless it has exactly nargs
 * parameters. Any back-end, after kernel_create. */
void ka__kdecl_classes(const char *src, const char *kname, ka__argsig *sig, uint32_t nargs);
/* KA_WORKGROUP(x, y, z) right after a declaration's ')' at end (blanks and
 * comments between): 1 and wg set, *after past it; 0 when there is none
 * (*after at the next token); -1 when it is not three positive integer
 * literals. */
int ka__kdecl_workgroup(const char *end, uint32_t wg[3], const char **after);
/* The body that starts at s (blanks and comments first): *b at its '{', *e
 * past the matching '}'; false when s does not open one. */
bool ka__kdecl_body(const char *s, const char **b, const char **e);
/* The first `return` of [b, e) that some ka_barrier, ka_barrier_local or
 * ka_barrier_global follows in the text, else NULL: the work-items that
 * take it would miss the barrier. */
const char *ka__kdecl_return_before_barrier(const char *b, const char *e);
#endif
