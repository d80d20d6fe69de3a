/* libka kernel dialect: the C prelude of the host back-end.
 * Prepended by libka to every program built for the host device, which the
 * system C compiler (gcc or clang, C11 with GNU extensions) compiles into a
 * shared object. Every construct of docs/KERNELS.md has the meaning it has in
 * ka_kernel_cl.h. A kernel's body becomes an always-inline function
 * ka__body_NAME whose first parameters are the context (KA_CTX_PARAM: the
 * launch's constants and the work-item's global index as scalars); libka
 * appends the entry functions that loop over work-items and call it, so the
 * compiler sees the index as an induction variable and vectorizes along
 * dimension 0. Build-time defines set by libka:
 *   KA_STATIC_WG0..2, KA_STATIC_ND0..2  a static variant's sizes
 *   KA__LSCRATCH                        bytes of dynamic local memory per thread
 * Index functions need the context: a helper using any of them (not only
 * ka_ndrange and the linear ids, as on OpenCL) takes KA_CTX_PARAM. */
#ifndef KA_KERNEL_C_H
#define KA_KERNEL_C_H
#define KA_C_HOST 1
#define KA_DEVICE_CODE 1
#define KA_HAS_DOUBLE 1
#define KA_HAS_ATOMIC64 1
#define KA_HAS_ATOMIC_DOUBLE_ADD 1
#ifndef KA_SUBGROUP_SIZE
#define KA_SUBGROUP_SIZE 0
#endif

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- scalar types ------------------------------------------------------- */
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef signed char ka_i8;
typedef unsigned long ka_size_t;

/* The launch's constants, shared by every work-item; libka fills it
 * (src/backends/host/host_kernel.h has the same layout). */
typedef struct ka_nd_t {
    ka_size_t x, y, z, w;
} ka_nd_t;
typedef struct ka__hctx {
    ka_nd_t nd;           /* logical range (x, y, z) and dimensions (w) */
    ka_size_t gsize[3];   /* padded global size */
    ka_size_t lsize[3];   /* work-group size */
    ka_size_t ngroups[3]; /* work-groups per dimension */
    uint *arec;           /* the queue's ka_assert record */
    ka_size_t akid;       /* the kernel's handle */
} ka__hctx;

#if defined(KA_STATIC_WG0)
#ifndef KA_STATIC_WG1
#define KA_STATIC_WG1 1
#endif
#ifndef KA_STATIC_WG2
#define KA_STATIC_WG2 1
#endif
#endif
#if defined(KA_STATIC_ND0)
#ifndef KA_STATIC_ND1
#define KA_STATIC_ND1 1
#endif
#ifndef KA_STATIC_ND2
#define KA_STATIC_ND2 1
#endif
#endif

/* OpenCL C's qualifier spellings, so sources that use them directly still
 * compile (a bare __kernel is not a libka kernel: ka_kernel_get refuses it). */
#define __kernel static inline __attribute__((unused))
#define __global
#define __constant const
#define __private

/* ---- declarations --------------------------------------------------------- */
#define KA__BODY(name) static inline __attribute__((always_inline, unused)) void ka__body_##name
/* The body's prototype, the entry functions libka generated for the kernel
 * (KA__ENTRIES_name, defined before the user's source), the body. */
#ifdef KA__SCAN /* libka's scan pass: which compiler, each kernel's name and parameters' text */
ka__scan_cc __clang__

#define KA_KERNEL(name, ...) ka__scan_kernel name #__VA_ARGS__ ka__scan_end
#define KA_KERNEL_NOARGS(name) ka__scan_kernel name "" ka__scan_end
#else
#define KA_KERNEL(name, ...) \
    KA__BODY(name)(KA_CTX_PARAM, __VA_ARGS__); KA__ENTRIES_##name KA__BODY(name)(KA_CTX_PARAM, __VA_ARGS__)
#define KA_KERNEL_NOARGS(name) KA__BODY(name)(KA_CTX_PARAM); KA__ENTRIES_##name KA__BODY(name)(KA_CTX_PARAM)
#endif
#define KA_GLOBAL
/* A work-group's items all run in one thread (in order, or as fibers of
 * that thread when the kernel has barriers), and a thread runs one group
 * at a time: a thread-local array is the group's local memory. */
#ifdef KA__SCAN /* libka's scan pass: what the kernel declares there (its local memory size) */
#define KA_LOCAL ka__scan_local
#else
#define KA_LOCAL static _Thread_local
#endif
#define KA_CONSTANT const
#define KA_CONST(T) const T *restrict
#define KA_RESTRICT restrict
#define KA_LOCAL_ARG(T) T *
#define KA_LOCAL_PTR(T) T *
#define KA_DEVICE_FN static inline __attribute__((unused))
#define KA_INLINE inline

/* ---- indices -------------------------------------------------------------- */
#define ka__nd (ka__c->nd)
#define ka_global_id(d) ((ka_size_t)((d) == 0 ? ka__g0 : (d) == 1 ? ka__g1 : (d) == 2 ? ka__g2 : 0))
#if defined(KA_STATIC_WG0)
#define ka_group_size(d) ((ka_size_t)((d) == 0 ? KA_STATIC_WG0 : (d) == 1 ? KA_STATIC_WG1 : (d) == 2 ? KA_STATIC_WG2 : 1))
#else
#define ka_group_size(d) ((ka_size_t)((d) >= 0 && (d) < 3 ? ka__c->lsize[(d) < 3 ? (d) : 0] : 1))
#endif
/* Groups are whole (the range is padded): global = group * size + local. */
#define ka_local_id(d) (ka_global_id(d) % ka_group_size(d))
#define ka_group_id(d) (ka_global_id(d) / ka_group_size(d))
#define ka_num_groups(d) ((ka_size_t)((d) >= 0 && (d) < 3 ? ka__c->ngroups[(d) < 3 ? (d) : 0] : 1))
/* ka_ndrange, the linear indices, KA_UNROLL, the scalar type names; then
 * this prelude's own context and unrolling. */
#include "ka_kernel_common.h"
#undef KA_CTX_PARAM
#undef KA_CTX
#define KA_CTX_PARAM const ka__hctx *restrict ka__c, const ka_size_t ka__g0, const ka_size_t ka__g1, const ka_size_t ka__g2, const int ka__inr
#define KA_CTX ka__c, ka__g0, ka__g1, ka__g2, ka__inr
#undef KA_UNROLL
#undef KA_UNROLL_N
#if defined(__clang__)
#define KA_UNROLL KA__PRAGMA(unroll)
#define KA_UNROLL_N(n) KA__PRAGMA(unroll n)
#else
#define KA_UNROLL KA__PRAGMA(GCC unroll 65534)
#define KA_UNROLL_N(n) KA__PRAGMA(GCC unroll n)
#endif
/* ka__inr: 1 where the entry function knows the item is in range (the
 * rows path's in-range loop), a constant once the body is inlined; GCC
 * cannot derive it from the loop's bounds, and the check left in the loop
 * costs the vectorized loop much of its speed. */
#define ka_in_range() \
    (ka__inr || (ka_global_id(0) < ka_ndrange(0) && ka_global_id(1) < ka_ndrange(1) && ka_global_id(2) < ka_ndrange(2)))

/* A helper without KA_CTX_PARAM that uses an index reads these: the entry
 * functions set them before each work-item where the program has such a
 * helper (a kernel's own parameters of the same names hide them). */
static _Thread_local const ka__hctx *ka__c;
static _Thread_local ka_size_t ka__g0, ka__g1, ka__g2;
static const int ka__inr = 0; /* such a helper checks the range */
static inline __attribute__((always_inline, unused)) void ka__tls_set(const ka__hctx *c, ka_size_t g0, ka_size_t g1,
                                                                      ka_size_t g2) {
    ka__c = c;
    ka__g0 = g0;
    ka__g1 = g1;
    ka__g2 = g2;
}

/* ---- synchronization ------------------------------------------------------ */
/* Set by libka after loading: the fiber barrier of its execution engine. The
 * work-item's own values of the helpers' indices come back after it (the
 * group's other items ran in this thread meanwhile). */
extern void (*ka__barrier_fn)(void);
static inline __attribute__((unused)) void ka__barrier(void) {
    const ka__hctx *c = ka__c;
    ka_size_t g0 = ka__g0, g1 = ka__g1, g2 = ka__g2;
    __asm__ __volatile__("" ::: "memory");
    __atomic_load_n(&ka__barrier_fn, __ATOMIC_RELAXED)(); /* set once by libka; atomic for race checkers */
    __asm__ __volatile__("" ::: "memory");
    ka__tls_set(c, g0, g1, g2);
}
#define ka_barrier() ka__barrier()
#define ka_barrier_local() ka__barrier()
#define ka_barrier_global() ka__barrier()
#define ka_fence() __atomic_thread_fence(__ATOMIC_SEQ_CST)

/* ---- atomics (relaxed; return the old value) ------------------------------ */
#define KA__FN static inline __attribute__((always_inline, unused))
#define KA__AINT(S, T)                                                                                     \
    KA__FN T ka__aadd_##S(void *p, T v) { return __atomic_fetch_add((T *)p, v, __ATOMIC_RELAXED); }       \
    KA__FN T ka__asub_##S(void *p, T v) { return __atomic_fetch_sub((T *)p, v, __ATOMIC_RELAXED); }       \
    KA__FN T ka__aand_##S(void *p, T v) { return __atomic_fetch_and((T *)p, v, __ATOMIC_RELAXED); }       \
    KA__FN T ka__aor_##S(void *p, T v) { return __atomic_fetch_or((T *)p, v, __ATOMIC_RELAXED); }         \
    KA__FN T ka__axor_##S(void *p, T v) { return __atomic_fetch_xor((T *)p, v, __ATOMIC_RELAXED); }       \
    KA__FN T ka__axchg_##S(void *p, T v) { return __atomic_exchange_n((T *)p, v, __ATOMIC_RELAXED); }     \
    KA__FN T ka__aload_##S(void *p) { return __atomic_load_n((T *)p, __ATOMIC_RELAXED); }                 \
    KA__FN void ka__astore_##S(void *p, T v) { __atomic_store_n((T *)p, v, __ATOMIC_RELAXED); }           \
    KA__FN T ka__acas_##S(void *p, T cmp, T v) {                                                           \
        __atomic_compare_exchange_n((T *)p, &cmp, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);               \
        return cmp;                                                                                        \
    }                                                                                                      \
    KA__FN T ka__amin_##S(void *p, T v) {                                                                  \
        T old = __atomic_load_n((T *)p, __ATOMIC_RELAXED);                                                 \
        while (v < old && !__atomic_compare_exchange_n((T *)p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
            ;                                                                                              \
        return old;                                                                                        \
    }                                                                                                      \
    KA__FN T ka__amax_##S(void *p, T v) {                                                                  \
        T old = __atomic_load_n((T *)p, __ATOMIC_RELAXED);                                                 \
        while (v > old && !__atomic_compare_exchange_n((T *)p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
            ;                                                                                              \
        return old;                                                                                        \
    }
KA__AINT(i, int)
KA__AINT(u, uint)
KA__AINT(l, long)
KA__AINT(ul, ulong)
KA__AINT(ll, long long)
KA__AINT(ull, unsigned long long)
/* float and double: a compare-exchange loop on the bit pattern, as OpenCL's prelude. */
#define KA__AFLT(S, T, U)                                                                                  \
    KA__FN T ka__aadd_##S(void *p, T v) {                                                                  \
        U old = __atomic_load_n((U *)p, __ATOMIC_RELAXED), nw;                                             \
        T f;                                                                                               \
        do {                                                                                               \
            memcpy(&f, &old, sizeof f);                                                                    \
            f += v;                                                                                        \
            memcpy(&nw, &f, sizeof nw);                                                                    \
        } while (!__atomic_compare_exchange_n((U *)p, &old, nw, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));   \
        memcpy(&f, &old, sizeof f);                                                                        \
        return f;                                                                                          \
    }                                                                                                      \
    KA__FN T ka__axchg_##S(void *p, T v) {                                                                 \
        U u, o;                                                                                            \
        memcpy(&u, &v, sizeof u);                                                                          \
        o = __atomic_exchange_n((U *)p, u, __ATOMIC_RELAXED);                                              \
        memcpy(&v, &o, sizeof v);                                                                          \
        return v;                                                                                          \
    }                                                                                                      \
    KA__FN T ka__aload_##S(void *p) {                                                                      \
        U o = __atomic_load_n((U *)p, __ATOMIC_RELAXED);                                                   \
        T v;                                                                                               \
        memcpy(&v, &o, sizeof v);                                                                          \
        return v;                                                                                          \
    }                                                                                                      \
    KA__FN void ka__astore_##S(void *p, T v) {                                                             \
        U u;                                                                                               \
        memcpy(&u, &v, sizeof u);                                                                          \
        __atomic_store_n((U *)p, u, __ATOMIC_RELAXED);                                                     \
    }
KA__AFLT(f, float, uint)
KA__AFLT(d, double, ulong)
/* By the pointee's type (lvalue conversion drops its qualifiers). */
#define KA__AGEN(op, p) \
    _Generic(*(p), int: ka__a##op##_i, uint: ka__a##op##_u, long: ka__a##op##_l, ulong: ka__a##op##_ul, \
             long long: ka__a##op##_ll, unsigned long long: ka__a##op##_ull, float: ka__a##op##_f, double: ka__a##op##_d)
#define KA__AGENI(op, p) \
    _Generic(*(p), int: ka__a##op##_i, uint: ka__a##op##_u, long: ka__a##op##_l, ulong: ka__a##op##_ul, \
             long long: ka__a##op##_ll, unsigned long long: ka__a##op##_ull)
#define ka_atomic_add(p, v) KA__AGEN(add, p)((void *)(p), (v))
#define ka_atomic_xchg(p, v) KA__AGEN(xchg, p)((void *)(p), (v))
#define ka_atomic_load(p) KA__AGEN(load, p)((void *)(p))
#define ka_atomic_store(p, v) KA__AGEN(store, p)((void *)(p), (v))
#define ka_atomic_sub(p, v) KA__AGENI(sub, p)((void *)(p), (v))
#define ka_atomic_min(p, v) KA__AGENI(min, p)((void *)(p), (v))
#define ka_atomic_max(p, v) KA__AGENI(max, p)((void *)(p), (v))
#define ka_atomic_and(p, v) KA__AGENI(and, p)((void *)(p), (v))
#define ka_atomic_or(p, v) KA__AGENI(or, p)((void *)(p), (v))
#define ka_atomic_xor(p, v) KA__AGENI(xor, p)((void *)(p), (v))
#define ka_atomic_cmpxchg(p, c, v) KA__AGENI(cas, p)((void *)(p), (c), (v))

#include "ka_kernel_c_math.h"

/* KA_PRINTF(fmt, ...): the process's stdout. */
#define KA_PRINTF printf

/* ka_assert(cond): the first failing work-item of the queue records the line,
 * its global id and the kernel in the queue's record (a wait reads it: wait.c). */
KA__FN void ka__assert_fail(const ka__hctx *c, ka_size_t g0, ka_size_t g1, ka_size_t g2, uint line) {
    uint zero = 0;
    if (!__atomic_compare_exchange_n(c->arec, &zero, 1u, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
    ka_size_t g[3] = {g0, g1, g2};
    c->arec[1] = line;
    for (int d = 0; d < 3; d++) {
        c->arec[2 + 2 * d] = (uint)g[d];
        c->arec[3 + 2 * d] = (uint)(g[d] >> 32);
    }
    c->arec[8] = (uint)c->akid;
    c->arec[9] = (uint)(c->akid >> 32);
}
#define ka_assert(cond) do { if (!(cond)) ka__assert_fail(ka__c, ka__g0, ka__g1, ka__g2, __LINE__); } while (0)

#endif
/* ---- user source follows ---- */
