/* libka kernel dialect: the OpenCL C prelude.
 * Prepended by libka to every program built for an OpenCL device (whose
 * KA_KERNEL declarations libka rewrites first: see KA__KERNEL_OPEN). The CUDA
 * prelude (ka_kernel_cuda.h) gives the same names the same meaning.
 * docs/KERNELS.md documents every construct, with its OpenCL and CUDA mapping.
 * Build-time defines set by libka for a configuration:
 *   KA_STATIC_WG0..2     static work-group size (when the configuration fixes it)
 *   KA_STATIC_ND0..2     static ndrange
 *   KA_SUBGROUP_SIZE     required sub-group size (0 = the device has none) */
#ifndef KA_KERNEL_CL_H
#define KA_KERNEL_CL_H
#define KA_OPENCL 1
#define KA_DEVICE_CODE 1

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define KA_HAS_DOUBLE 1
#endif
#if defined(cl_khr_int64_base_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif
#if defined(cl_khr_int64_extended_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#endif
#if defined(cl_khr_int64_base_atomics) && defined(cl_khr_int64_extended_atomics)
#define KA_HAS_ATOMIC64 1
#endif
#if defined(cl_khr_subgroups) || defined(cl_intel_subgroups) || (defined(__opencl_c_subgroups) && __OPENCL_C_VERSION__ >= 300)
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#define KA_HAS_SUBGROUPS 1
#endif
#if defined(cl_khr_subgroup_shuffle)
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#define KA_HAS_SUBGROUP_SHUFFLE 1
#endif
#if defined(cl_khr_subgroup_shuffle_relative)
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle_relative : enable
#endif

/* ---- qualifiers -------------------------------------------------------- */
/* The hidden first argument is the logical ndrange (x,y,z) and dims (w). It
 * is spelled ulong4, not a typedef: PoCL preallocates argument storage only
 * when it knows every argument's size, and a typedef hides it (measured: a
 * malloc and free per clSetKernelArg otherwise). */
typedef ulong4 ka_nd_t;

#ifndef KA_SUBGROUP_SIZE
#define KA_SUBGROUP_SIZE 0
#endif
#if defined(KA_STATIC_WG0)
#define KA__WG_ATTR __attribute__((reqd_work_group_size(KA_STATIC_WG0, KA_STATIC_WG1, KA_STATIC_WG2)))
#else
#define KA__WG_ATTR
#endif
#if defined(cl_intel_required_subgroup_size) && KA_SUBGROUP_SIZE > 0
#pragma OPENCL EXTENSION cl_intel_required_subgroup_size : enable
#define KA__SG_ATTR __attribute__((intel_reqd_sub_group_size(KA_SUBGROUP_SIZE)))
#else
#define KA__SG_ATTR
#endif
/* KA_KERNEL(name, params...): a kernel; libka passes the logical ndrange first.
 * OpenCL C 1.2 has no variadic macros (s6.9.e; NVIDIA's compiler rejects
 * them), so libka rewrites each declaration before the build: the token
 * sequence `KA_KERNEL(name,` becomes `KA__KERNEL_OPEN(name),`, which expands
 * to `__kernel ... void name(const ulong4 ka__nd,` (a macro whose expansion
 * opens the parameter list the user's text closes). Lines and the rest of
 * the text are unchanged. A KA_KERNEL that libka could not rewrite (no
 * comma after the name, or the word reached through another macro) is a
 * build error naming an unknown type, libka_could_not_rewrite_this_KA_KERNEL. */
/* The compiled name is ka_k_<name>, which libka looks up, so a kernel may be
 * named like a built-in (step, min); pasted, never macro-expanded: PoCL's
 * header defines step as _cl_step. */
#define KA__KERNEL_OPEN(name) __kernel KA__WG_ATTR KA__SG_ATTR void ka_k_##name(const ulong4 ka__nd
#define KA_KERNEL libka_could_not_rewrite_this_KA_KERNEL KA__KERNEL_UNKNOWN_TYPE
#define KA_KERNEL_NOARGS(name) __kernel KA__WG_ATTR KA__SG_ATTR void ka_k_##name(const ulong4 ka__nd KA__ASSERT_PARAMS)
/* A program that calls ka_assert is built with KA__ASSERT: its kernels take
 * the queue's assertion record and their own handle last (libka's rewrite
 * puts KA__ASSERT_PARAMS before each KA_KERNEL's closing parenthesis). */
#ifdef KA__ASSERT
#define KA__ASSERT_PARAMS , __global uint *ka__arec, ulong ka__akid
#else
#define KA__ASSERT_PARAMS
#endif
#define KA_GLOBAL __global
/* Local storage declared at kernel scope: KA_LOCAL float tile[64]; */
#define KA_LOCAL __local
#define KA_CONSTANT __constant
/* Read-only, non-aliased global argument (KernelAbstractions' @Const):
 * KA_CONST(float) x  ->  const float *restrict x in global memory. */
#define KA_CONST(T) __global const T *restrict
#define KA_RESTRICT restrict
/* Local memory passed at launch: a KA_LOCAL_ARG(T) parameter takes ka_arg_local(bytes). */
#define KA_LOCAL_ARG(T) __local T *
/* A pointer to local memory as a helper function's parameter type. */
#define KA_LOCAL_PTR(T) __local T *
#define KA_DEVICE_FN static inline
#define KA_INLINE inline

/* ---- indices ----------------------------------------------------------- */
typedef ulong ka_size_t;
#define ka_global_id(d) ((ka_size_t)get_global_id(d))
#define ka_local_id(d) ((ka_size_t)get_local_id(d))
#define ka_group_id(d) ((ka_size_t)get_group_id(d))
#define ka_num_groups(d) ((ka_size_t)get_num_groups(d))
#if defined(KA_STATIC_WG0)
#define ka_group_size(d) ((ka_size_t)((d) == 0 ? KA_STATIC_WG0 : (d) == 1 ? KA_STATIC_WG1 : (d) == 2 ? KA_STATIC_WG2 : 1))
#else
#define ka_group_size(d) ((ka_size_t)get_local_size(d))
#endif
/* ka_ndrange, the linear indices, KA_CTX, KA_UNROLL, the scalar type names. */
#include "ka_kernel_common.h"
/* All three dimensions: get_global_id is a built-in here, with no id
 * arithmetic to skip past ka_ndims() as the CUDA prelude does. */
#define ka_in_range() (ka_global_id(0) < ka_ndrange(0) && ka_global_id(1) < ka_ndrange(1) && ka_global_id(2) < ka_ndrange(2))

/* ---- synchronization --------------------------------------------------- */
#define ka_barrier() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#define ka_barrier_local() barrier(CLK_LOCAL_MEM_FENCE)
#define ka_barrier_global() barrier(CLK_GLOBAL_MEM_FENCE)
#define ka_fence() mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* ---- atomics (return the old value) ------------------------------------ */
#define KA__OVL __attribute__((overloadable)) static inline
/* F: OpenCL's prefix for the width, atomic_ (32-bit) or atom_ (64-bit extensions). */
#define KA__ATOMICS(T, AS, F)                                                                    \
    KA__OVL T ka_atomic_add(volatile AS T *p, T v) { return F##add(p, v); }                      \
    KA__OVL T ka_atomic_sub(volatile AS T *p, T v) { return F##sub(p, v); }                      \
    KA__OVL T ka_atomic_min(volatile AS T *p, T v) { return F##min(p, v); }                      \
    KA__OVL T ka_atomic_max(volatile AS T *p, T v) { return F##max(p, v); }                      \
    KA__OVL T ka_atomic_and(volatile AS T *p, T v) { return F##and(p, v); }                      \
    KA__OVL T ka_atomic_or(volatile AS T *p, T v) { return F##or(p, v); }                        \
    KA__OVL T ka_atomic_xor(volatile AS T *p, T v) { return F##xor(p, v); }                      \
    KA__OVL T ka_atomic_xchg(volatile AS T *p, T v) { return F##xchg(p, v); }                    \
    KA__OVL T ka_atomic_cmpxchg(volatile AS T *p, T cmp, T v) { return F##cmpxchg(p, cmp, v); }  \
    KA__OVL T ka_atomic_load(volatile AS T *p) { return F##or(p, (T)0); }                        \
    KA__OVL void ka_atomic_store(volatile AS T *p, T v) { (void)F##xchg(p, v); }
KA__ATOMICS(int, __global, atomic_)
KA__ATOMICS(uint, __global, atomic_)
KA__ATOMICS(int, __local, atomic_)
KA__ATOMICS(uint, __local, atomic_)
#ifdef KA_HAS_ATOMIC64
KA__ATOMICS(long, __global, atom_)
KA__ATOMICS(ulong, __global, atom_)
KA__ATOMICS(long, __local, atom_)
KA__ATOMICS(ulong, __local, atom_)
#ifdef KA_HAS_DOUBLE
/* Double add: a compare-exchange loop on the 64-bit pattern; xchg, load and
 * store through the 64-bit integer atomics. */
#define KA__ATOMICD(AS)                                                                          \
    KA__OVL double ka_atomic_add(volatile AS double *p, double v) {                              \
        volatile AS ulong *u = (volatile AS ulong *)p;                                           \
        ulong old = *u, assumed;                                                                 \
        do {                                                                                     \
            assumed = old;                                                                       \
            old = atom_cmpxchg(u, assumed, as_ulong(as_double(assumed) + v));                    \
        } while (old != assumed);                                                                \
        return as_double(old);                                                                   \
    }                                                                                            \
    KA__OVL double ka_atomic_xchg(volatile AS double *p, double v) {                             \
        return as_double(atom_xchg((volatile AS ulong *)p, as_ulong(v)));                        \
    }                                                                                            \
    KA__OVL double ka_atomic_load(volatile AS double *p) {                                       \
        return as_double(atom_or((volatile AS ulong *)p, (ulong)0));                             \
    }                                                                                            \
    KA__OVL void ka_atomic_store(volatile AS double *p, double v) {                              \
        (void)atom_xchg((volatile AS ulong *)p, as_ulong(v));                                    \
    }
KA__ATOMICD(__global)
KA__ATOMICD(__local)
#define KA_HAS_ATOMIC_DOUBLE_ADD 1
#endif
#endif
/* Float add: OpenCL C 1.2 has none, so a compare-exchange loop on the bits. */
#define KA__ATOMICF(AS)                                                                          \
    KA__OVL float ka_atomic_add(volatile AS float *p, float v) {                                 \
        volatile AS uint *u = (volatile AS uint *)p;                                             \
        uint old = *u, assumed;                                                                  \
        do {                                                                                     \
            assumed = old;                                                                       \
            old = atomic_cmpxchg(u, assumed, as_uint(as_float(assumed) + v));                    \
        } while (old != assumed);                                                                \
        return as_float(old);                                                                    \
    }                                                                                            \
    KA__OVL float ka_atomic_xchg(volatile AS float *p, float v) { return atomic_xchg(p, v); }    \
    KA__OVL float ka_atomic_load(volatile AS float *p) { return as_float(atomic_or((volatile AS uint *)p, 0u)); } \
    KA__OVL void ka_atomic_store(volatile AS float *p, float v) { (void)atomic_xchg(p, v); }
KA__ATOMICF(__global)
KA__ATOMICF(__local)

/* ---- sub-groups -------------------------------------------------------- */
#ifdef KA_HAS_SUBGROUPS
#define ka_subgroup_size() ((uint)get_sub_group_size())
#define ka_subgroup_max_size() ((uint)get_max_sub_group_size())
#define ka_subgroup_id() ((uint)get_sub_group_id())
#define ka_subgroup_local_id() ((uint)get_sub_group_local_id())
#define ka_num_subgroups() ((uint)get_num_sub_groups())
#define ka_subgroup_barrier() sub_group_barrier(CLK_LOCAL_MEM_FENCE)
#define ka_subgroup_broadcast(x, lane) sub_group_broadcast((x), (lane))
#define ka_subgroup_reduce_add(x) sub_group_reduce_add(x)
#define ka_subgroup_reduce_min(x) sub_group_reduce_min(x)
#define ka_subgroup_reduce_max(x) sub_group_reduce_max(x)
#define ka_subgroup_any(p) sub_group_any(p)
#define ka_subgroup_all(p) sub_group_all(p)
#if defined(KA_HAS_SUBGROUP_SHUFFLE)
#define ka_subgroup_shuffle(x, lane) sub_group_shuffle((x), (lane))
#define ka_subgroup_shuffle_xor(x, mask) sub_group_shuffle_xor((x), (mask))
#if defined(cl_khr_subgroup_shuffle_relative)
#define ka_subgroup_shuffle_down(x, delta) sub_group_shuffle_down((x), (delta))
#define ka_subgroup_shuffle_up(x, delta) sub_group_shuffle_up((x), (delta))
#else /* cl_khr_subgroup_shuffle alone (PoCL 5): the same lanes by index; lanes
       * that would read outside the sub-group get undefined values either way */
#define ka_subgroup_shuffle_down(x, delta) sub_group_shuffle((x), get_sub_group_local_id() + (delta))
#define ka_subgroup_shuffle_up(x, delta) sub_group_shuffle((x), get_sub_group_local_id() - (delta))
#endif
#elif defined(cl_intel_subgroups)
#define KA_HAS_SUBGROUP_SHUFFLE 1
#define ka_subgroup_shuffle(x, lane) intel_sub_group_shuffle((x), (lane))
#define ka_subgroup_shuffle_xor(x, mask) intel_sub_group_shuffle_xor((x), (mask))
#define ka_subgroup_shuffle_down(x, delta) intel_sub_group_shuffle_down((x), (x), (delta))
#define ka_subgroup_shuffle_up(x, delta) intel_sub_group_shuffle_up((x), (x), (delta))
#endif
#endif

/* ---- math and conversions ---------------------------------------------- */
/* The OpenCL built-ins (sqrt, exp, sin, fma, fmin, ...) are the dialect's.
 * Conversions with rounding: ka_convert_<int type>_<mode>(x), mode one of
 * rte (nearest even), rtz (toward zero), rtp (up), rtn (down), saturating;
 * NaN gives 0, as OpenCL's _sat conversions must (NVIDIA's OpenCL gave
 * INT64_MIN for long and ulong: the select costs one comparison). */
#define KA__CONV(T)                                                       \
    KA__OVL T ka_convert_##T##_rte(float x) { return isnan(x) ? (T)0 : convert_##T##_sat_rte(x); } \
    KA__OVL T ka_convert_##T##_rtz(float x) { return isnan(x) ? (T)0 : convert_##T##_sat_rtz(x); } \
    KA__OVL T ka_convert_##T##_rtp(float x) { return isnan(x) ? (T)0 : convert_##T##_sat_rtp(x); } \
    KA__OVL T ka_convert_##T##_rtn(float x) { return isnan(x) ? (T)0 : convert_##T##_sat_rtn(x); }
KA__CONV(char)
KA__CONV(uchar)
KA__CONV(short)
KA__CONV(ushort)
KA__CONV(int)
KA__CONV(uint)
KA__CONV(long)
KA__CONV(ulong)
#ifdef KA_HAS_DOUBLE
#define KA__CONVD(T)                                                      \
    KA__OVL T ka_convert_##T##_rte(double x) { return isnan(x) ? (T)0 : convert_##T##_sat_rte(x); } \
    KA__OVL T ka_convert_##T##_rtz(double x) { return isnan(x) ? (T)0 : convert_##T##_sat_rtz(x); } \
    KA__OVL T ka_convert_##T##_rtp(double x) { return isnan(x) ? (T)0 : convert_##T##_sat_rtp(x); } \
    KA__OVL T ka_convert_##T##_rtn(double x) { return isnan(x) ? (T)0 : convert_##T##_sat_rtn(x); }
KA__CONVD(char)
KA__CONVD(uchar)
KA__CONVD(short)
KA__CONVD(ushort)
KA__CONVD(int)
KA__CONVD(uint)
KA__CONVD(long)
KA__CONVD(ulong)
#endif

/* ctz: an OpenCL C 2.0 built-in, missing from OpenCL C 1.x compilers (PoCL
 * 3.1 declares it for 2.0 only). Trailing zeros = the bits below the lowest
 * set one: popcount((x & -x) - 1), which is the type's width for 0. */
#if !defined(__OPENCL_CPP_VERSION__) && (!defined(__OPENCL_C_VERSION__) || __OPENCL_C_VERSION__ < 200)
#define KA__CTZ(T, U) KA__OVL T ka__ctz(T x) { return (T)popcount((U)(((U)x & (U)((U)0 - (U)x)) - (U)1)); }
KA__CTZ(char, uchar)
KA__CTZ(uchar, uchar)
KA__CTZ(short, ushort)
KA__CTZ(ushort, ushort)
KA__CTZ(int, uint)
KA__CTZ(uint, uint)
KA__CTZ(long, ulong)
KA__CTZ(ulong, ulong)
#undef ctz
#define ctz ka__ctz
#endif

/* ka_i8: OpenCL C's char is signed (the others are in ka_kernel_common.h). */
typedef char ka_i8;

/* KA_PRINTF(fmt, ...): object-like, so no variadic macro is needed. */
#define KA_PRINTF printf

/* ka_assert(cond), in a kernel's body: the first work-item of the queue to
 * fail one records the line, its global id and the kernel; it goes on. The
 * next wait on the queue returns KA_ERR_KERNEL_FAILED (docs/KERNELS.md). */
#ifdef KA__ASSERT
void ka__assert_fail(__global uint *r, ulong kid, uint line);
void ka__assert_fail(__global uint *r, ulong kid, uint line) {
    if (atomic_cmpxchg((volatile __global uint *)r, 0u, 1u) != 0u) return;
    r[1] = line;
    for (uint d = 0; d < 3; d++) {
        ulong g = get_global_id(d);
        r[2 + 2 * d] = (uint)g;
        r[3 + 2 * d] = (uint)(g >> 32);
    }
    r[8] = (uint)kid;
    r[9] = (uint)(kid >> 32);
}
#define ka_assert(c) do { if (!(c)) ka__assert_fail(ka__arec, ka__akid, __LINE__); } while (0)
#endif

#endif
/* ---- user source follows ---- */
