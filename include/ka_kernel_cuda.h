/* libka kernel dialect: the CUDA prelude.
 * Compiled by NVRTC (C++17) in front of every program built for a CUDA device;
 * gives the names of ka_kernel_cl.h the same meaning. NVRTC has no standard
 * headers, so only ka_kernel_common.h is included (inline in libka's copy).
 * Build-time defines set by libka:
 *   KA_STATIC_WG0..2     static work-group size (adds __launch_bounds__)
 *   KA_STATIC_ND0..2     static ndrange
 *   KA_SUBGROUP_SIZE     required sub-group size (always 32 here: a warp)
 * docs/KERNELS.md documents every construct. Differences from OpenCL C:
 *   - KA_LOCAL is __shared__, a storage class: it declares local arrays
 *     (KA_LOCAL float tile[256];); a helper's pointer-to-local parameter is
 *     spelled KA_LOCAL_PTR(T) (a plain T * here).
 *   - KA_CONSTANT is const: it qualifies pointer parameters; a program-scope
 *     table needs __device__ (or __constant__) in CUDA.
 *   - Sub-group (warp) functions must be reached by every live lane of the
 *     warp, as OpenCL requires (uniform control flow). */
#ifndef KA_KERNEL_CUDA_H
#define KA_KERNEL_CUDA_H
#define KA_CUDA 1
#define KA_DEVICE_CODE 1
#define KA_HAS_DOUBLE 1
#define KA_HAS_ATOMIC64 1
#define KA_HAS_SUBGROUPS 1
#define KA_HAS_SUBGROUP_SHUFFLE 1

/* ---- OpenCL's type names ----------------------------------------------- */
/* OpenCL long/ulong are 64-bit, as long is on 64-bit Linux (LP64). */
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

/* ka_i8: char's signedness is the compiler's choice in C++, and a type of its
 * own (the other ka_ names are in ka_kernel_common.h). */
typedef signed char ka_i8;

/* ---- qualifiers -------------------------------------------------------- */
/* Hidden first argument: logical ndrange (x, y, z) and dims (w); 32 bytes. */
struct ka_nd_t {
    unsigned long long x, y, z, w;
};

#if defined(KA_STATIC_WG0)
#ifndef KA_STATIC_WG1
#define KA_STATIC_WG1 1
#endif
#ifndef KA_STATIC_WG2
#define KA_STATIC_WG2 1
#endif
#define KA__WG_ATTR __launch_bounds__((KA_STATIC_WG0) * (KA_STATIC_WG1) * (KA_STATIC_WG2))
#else
#define KA__WG_ATTR
#endif
#if defined(KA_STATIC_ND0)
#ifndef KA_STATIC_ND1
#define KA_STATIC_ND1 1
#endif
#ifndef KA_STATIC_ND2
#define KA_STATIC_ND2 1
#endif
#endif

#ifndef KA_SUBGROUP_SIZE
#define KA_SUBGROUP_SIZE 32
#endif
/* OpenCL C's qualifier spellings, so sources that use them directly still
 * compile (a bare __kernel is not a libka kernel: ka_kernel_get refuses it). */
#define __kernel extern "C" __global__
#define __global
#define __constant const
#define __private

/* KA_KERNEL(name, params...): a kernel; libka passes the logical ndrange first.
 * The kernel is a template over the launch's dimension count (KA__D, see
 * ka__gid below), instantiated here for 1, 2 and 3 dimensions: three entry
 * points ka_k_<name><1..3> (C++-mangled), of which a launch takes the one of
 * its dimensions, so the index code of dimensions it lacks is compiled out.
 * The instantiations precede the body (the user's braces follow the macro).
 * The name is pasted, never macro-expanded, so a kernel may be named like a
 * built-in (min, max). KA__DIMS_GENERIC (a define) keeps the dimension count
 * a run-time value in every instantiation: the code before dimension
 * variants, for comparing them. */
#ifdef KA__DIMS_GENERIC
#define KA__DPARAM KA__DT
#else
#define KA__DPARAM KA__D
#endif
/* KA__KERNEL_DECL takes the pasted ka_k_<name>: a name passed on unpasted
 * would be macro-expanded on the way. */
#define KA__INSTANTIATE(fn, D, params) template __global__ void fn<D> params;
#define KA__KERNEL_DECL(fn, params)                                                                               \
    template <int KA__DPARAM> __global__ void KA__WG_ATTR fn params;                                             \
    KA__INSTANTIATE(fn, 1, params) KA__INSTANTIATE(fn, 2, params) KA__INSTANTIATE(fn, 3, params)                 \
    template <int KA__DPARAM> __global__ void KA__WG_ATTR fn params
#define KA_KERNEL(name, ...) KA__KERNEL_DECL(ka_k_##name, (const ka_nd_t ka__nd, __VA_ARGS__ KA__ASSERT_PARAMS))
#define KA_KERNEL_NOARGS(name) KA__KERNEL_DECL(ka_k_##name, (const ka_nd_t ka__nd KA__ASSERT_PARAMS))
/* A program that calls ka_assert is built with KA__ASSERT: its kernels take
 * the queue's assertion record and their own handle last. */
#ifdef KA__ASSERT
#define KA__ASSERT_PARAMS , unsigned int *ka__arec, unsigned long long ka__akid
#else
#define KA__ASSERT_PARAMS
#endif
#define KA_GLOBAL
/* Local storage declared at kernel scope: KA_LOCAL float tile[64]; */
#define KA_LOCAL __shared__
#define KA_CONSTANT const
/* Read-only, non-aliased global argument: KA_CONST(float) x -> const float *__restrict__ x. */
#define KA_CONST(T) const T *__restrict__
#define KA_RESTRICT __restrict__
/* A pointer to local memory as a helper function's parameter type. */
#define KA_LOCAL_PTR(T) T *
#define KA_DEVICE_FN static __device__ inline
#define KA_INLINE __device__ inline
#define KA__FN __device__ __forceinline__ /* not static: unused ones draw no warning */

/* Dynamic local memory. KA_LOCAL_ARG(T) p is a kernel parameter holding a
 * byte offset into the block's dynamic shared memory: libka passes each
 * KA_ARG_LOCAL's offset (16-byte aligned) and launches with their total.
 * Use it as a T*: p[i], p + i, or pass it where a T* is expected. */
extern __shared__ __align__(16) unsigned char ka__dyn_local[];
template <typename T> struct ka_local_ptr {
    unsigned long long off;
    __device__ __forceinline__ T *get() const { return reinterpret_cast<T *>(ka__dyn_local + off); }
    __device__ __forceinline__ operator T *() const { return get(); }
    template <typename I> __device__ __forceinline__ T &operator[](I i) const { return get()[i]; }
};
#define KA_LOCAL_ARG(T) ka_local_ptr<T>

/* ---- indices ----------------------------------------------------------- */
typedef unsigned long ka_size_t;
KA__FN ka_size_t ka_local_id(unsigned d) { return d == 0 ? threadIdx.x : d == 1 ? threadIdx.y : d == 2 ? threadIdx.z : 0; }
KA__FN ka_size_t ka_group_id(unsigned d) { return d == 0 ? blockIdx.x : d == 1 ? blockIdx.y : d == 2 ? blockIdx.z : 0; }
KA__FN ka_size_t ka_num_groups(unsigned d) { return d == 0 ? gridDim.x : d == 1 ? gridDim.y : d == 2 ? gridDim.z : 1; }
#if defined(KA_STATIC_WG0)
KA__FN ka_size_t ka_group_size(unsigned d) {
    return d == 0 ? (KA_STATIC_WG0) : d == 1 ? (KA_STATIC_WG1) : d == 2 ? (KA_STATIC_WG2) : 1;
}
#define KA__GROUP_LINEAR_SIZE ((unsigned)((KA_STATIC_WG0) * (KA_STATIC_WG1) * (KA_STATIC_WG2)))
#else
KA__FN ka_size_t ka_group_size(unsigned d) { return d == 0 ? blockDim.x : d == 1 ? blockDim.y : d == 2 ? blockDim.z : 1; }
#define KA__GROUP_LINEAR_SIZE (blockDim.x * blockDim.y * blockDim.z)
#endif
/* Dimensionality variants. KA__D is the launch's dimension count where it
 * is known when the kernel is compiled (1, 2 or 3), else 0 (read from the
 * hidden range at run time). A dimension past it is one item (global id 0,
 * size 1), its ids constants. Ids are computed in 32 bits but in a 1-D
 * launch's dimension 0: dimensions 1 and 2 fit (CUDA's grid), and the
 * back-end refuses a 2- or 3-D range whose dimension 0 does not (padded, at
 * most 2^32 - 1 items). Helpers (KA_CTX_PARAM) see 0.
 * Template parameters have reserved names: a build's -D defines reach here. */
enum { KA__D = 0 }; /* outside a kernel's body: a helper's (KA_CTX_PARAM) */
template <int KA__N> KA__FN ka_size_t ka__gid(unsigned d) {
    if constexpr (KA__N == 0) return ka_group_id(d) * ka_group_size(d) + ka_local_id(d);
    else if (d >= (unsigned)KA__N) return 0;
    else if (d == 0 && KA__N == 1) return ka_group_id(0) * ka_group_size(0) + ka_local_id(0); /* 64 bits */
    else return (unsigned)ka_group_id(d) * (unsigned)ka_group_size(d) + (unsigned)ka_local_id(d);
}
template <int KA__N> KA__FN ka_size_t ka__ndr(const ka_nd_t &nd, unsigned d) {
    if constexpr (KA__N != 0)
        if (d >= (unsigned)KA__N) return 1;
    return d == 0 ? nd.x : d == 1 ? nd.y : d == 2 ? nd.z : 1;
}
template <int KA__N> KA__FN bool ka__in_range(const ka_nd_t &nd) {
    if constexpr (KA__N == 0) /* a uniform test of the dimension count, then the ids it needs */
        return ka__gid<0>(0) < nd.x && (nd.w < 2 || (ka__gid<0>(1) < nd.y && (nd.w < 3 || ka__gid<0>(2) < nd.z)));
    else
        return (KA__N == 1 ? ka__gid<KA__N>(0) < nd.x : (unsigned)ka__gid<KA__N>(0) < (unsigned)nd.x) & (KA__N < 2 || (unsigned)ka__gid<KA__N>(1) < (unsigned)nd.y) &
               (KA__N < 3 || (unsigned)ka__gid<KA__N>(2) < (unsigned)nd.z); /* one branch, as `x >= n || y >= n` */
}
#define ka_global_id(d) ka__gid<KA__D>(d)
#define KA__OWN_NDRANGE 1
#if !defined(KA_STATIC_ND0)
#define ka_ndrange(d) ka__ndr<KA__D>(ka__nd, (d))
#endif
#define ka_ndims() ((uint)(KA__D ? KA__D : ka__nd.w))
/* ka_ndrange, the linear indices, KA_CTX, KA_UNROLL, the scalar type names. */
#include "ka_kernel_common.h"
#define ka_in_range() ka__in_range<KA__D>(ka__nd)

/* ---- synchronization --------------------------------------------------- */
/* __syncthreads orders both shared and global accesses within the block. */
#define ka_barrier() __syncthreads()
#define ka_barrier_local() __syncthreads()
#define ka_barrier_global() __syncthreads()
#define ka_fence() __threadfence()

/* ---- atomics (return the old value) ------------------------------------ */
/* Overloads for int, uint, long, ulong, long long, unsigned long long, and
 * add/xchg/load/store on float and double; on global or local (shared) memory
 * alike. ka_atomic_load/store are volatile accesses: aligned 32- and 64-bit
 * loads and stores are single-copy atomic, and volatile bypasses L1. */
#define KA__ATOMIC(T, U, SU)                                                                                  \
    KA__FN T ka_atomic_add(volatile T *p, T v) { return (T)atomicAdd((U *)p, (U)v); }                         \
    KA__FN T ka_atomic_sub(volatile T *p, T v) { return (T)atomicAdd((U *)p, (U)0 - (U)v); }                  \
    KA__FN T ka_atomic_min(volatile T *p, T v) { return (T)atomicMin((SU *)p, (SU)v); }                       \
    KA__FN T ka_atomic_max(volatile T *p, T v) { return (T)atomicMax((SU *)p, (SU)v); }                       \
    KA__FN T ka_atomic_and(volatile T *p, T v) { return (T)atomicAnd((U *)p, (U)v); }                         \
    KA__FN T ka_atomic_or(volatile T *p, T v) { return (T)atomicOr((U *)p, (U)v); }                           \
    KA__FN T ka_atomic_xor(volatile T *p, T v) { return (T)atomicXor((U *)p, (U)v); }                         \
    KA__FN T ka_atomic_xchg(volatile T *p, T v) { return (T)atomicExch((U *)p, (U)v); }                       \
    KA__FN T ka_atomic_cmpxchg(volatile T *p, T cmp, T v) { return (T)atomicCAS((U *)p, (U)cmp, (U)v); }    \
    KA__FN T ka_atomic_load(volatile T *p) { return *p; }                                                     \
    KA__FN void ka_atomic_store(volatile T *p, T v) { *p = v; }
/* (type, unsigned type for add/bitwise/xchg/cas, type whose order min/max use) */
KA__ATOMIC(int, unsigned int, int)
KA__ATOMIC(unsigned int, unsigned int, unsigned int)
KA__ATOMIC(long, unsigned long long, long long)
KA__ATOMIC(unsigned long, unsigned long long, unsigned long long)
KA__ATOMIC(long long, unsigned long long, long long)
KA__ATOMIC(unsigned long long, unsigned long long, unsigned long long)
#undef KA__ATOMIC
KA__FN float ka_atomic_add(volatile float *p, float v) { return atomicAdd((float *)p, v); }
KA__FN float ka_atomic_xchg(volatile float *p, float v) { return atomicExch((float *)p, v); }
KA__FN float ka_atomic_load(volatile float *p) { return *p; }
KA__FN void ka_atomic_store(volatile float *p, float v) { *p = v; }
/* Native double add from sm_60 (every GPU NVRTC 12+ targets); a CAS loop below. */
KA__FN double ka_atomic_add(volatile double *p, double v) {
#if __CUDA_ARCH__ >= 600
    return atomicAdd((double *)p, v);
#else
    unsigned long long *u = (unsigned long long *)p, old = *u, assumed;
    do {
        assumed = old;
        old = atomicCAS(u, assumed, (unsigned long long)__double_as_longlong(__longlong_as_double((long long)assumed) + v));
    } while (old != assumed);
    return __longlong_as_double((long long)old);
#endif
}
KA__FN double ka_atomic_xchg(volatile double *p, double v) {
    return __longlong_as_double((long long)atomicExch((unsigned long long *)p, (unsigned long long)__double_as_longlong(v)));
}
KA__FN double ka_atomic_load(volatile double *p) { return *p; }
KA__FN void ka_atomic_store(volatile double *p, double v) { *p = v; }
#define KA_HAS_ATOMIC_DOUBLE_ADD 1

/* ---- sub-groups: warps of 32 -------------------------------------------- */
/* Lanes are numbered by the local linear id, as CUDA forms warps. The last
 * warp of a block whose size is not a multiple of 32 is partial: its size and
 * the shuffle mask count only the lanes that exist. */
KA__FN uint ka__local_linear(void) { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
#define ka_subgroup_max_size() 32u
#define ka_subgroup_id() (ka__local_linear() >> 5)
#define ka_subgroup_local_id() (ka__local_linear() & 31u)
#define ka_num_subgroups() ((KA__GROUP_LINEAR_SIZE + 31u) >> 5)
KA__FN uint ka_subgroup_size(void) {
    uint left = KA__GROUP_LINEAR_SIZE - (ka__local_linear() & ~31u);
    return left < 32u ? left : 32u;
}
KA__FN unsigned ka__sg_mask(void) {
#if defined(KA_STATIC_WG0)
    if (KA__GROUP_LINEAR_SIZE % 32u == 0) return 0xffffffffu;
#endif
    uint n = ka_subgroup_size();
    return n >= 32u ? 0xffffffffu : (1u << n) - 1u;
}
#define ka_subgroup_barrier() __syncwarp(ka__sg_mask())
template <typename T> KA__FN T ka_subgroup_broadcast(T x, uint lane) { return __shfl_sync(ka__sg_mask(), x, (int)lane); }
template <typename T> KA__FN T ka_subgroup_shuffle(T x, uint lane) { return __shfl_sync(ka__sg_mask(), x, (int)lane); }
template <typename T> KA__FN T ka_subgroup_shuffle_xor(T x, uint mask) { return __shfl_xor_sync(ka__sg_mask(), x, (int)mask); }
template <typename T> KA__FN T ka_subgroup_shuffle_down(T x, uint delta) { return __shfl_down_sync(ka__sg_mask(), x, delta); }
template <typename T> KA__FN T ka_subgroup_shuffle_up(T x, uint delta) { return __shfl_up_sync(ka__sg_mask(), x, delta); }
KA__FN int ka_subgroup_any(int p) { return __any_sync(ka__sg_mask(), p); }
KA__FN int ka_subgroup_all(int p) { return __all_sync(ka__sg_mask(), p); }

struct ka__op_add { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct ka__op_min { template <typename T> __device__ T operator()(T a, T b) const { return b < a ? b : a; } };
struct ka__op_max { template <typename T> __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
/* Full warp: butterfly, every lane ends with the result. Partial warp: a tree
 * toward lane 0 that skips missing lanes, then a broadcast. */
template <typename T, typename Op> KA__FN T ka__reduce(T x, Op op) {
    uint n = ka_subgroup_size();
    if (n == 32u) {
        for (int o = 16; o > 0; o >>= 1) x = op(x, __shfl_xor_sync(0xffffffffu, x, o));
        return x;
    }
    unsigned mask = (1u << n) - 1u;
    uint lane = ka_subgroup_local_id();
    for (uint o = 16; o > 0; o >>= 1) {
        T y = __shfl_down_sync(mask, x, o);
        if (lane + o < n) x = op(x, y);
    }
    return __shfl_sync(mask, x, 0);
}
template <typename T> KA__FN T ka_subgroup_reduce_add(T x) { return ka__reduce(x, ka__op_add()); }
template <typename T> KA__FN T ka_subgroup_reduce_min(T x) { return ka__reduce(x, ka__op_min()); }
template <typename T> KA__FN T ka_subgroup_reduce_max(T x) { return ka__reduce(x, ka__op_max()); }

/* ---- math and conversions ---------------------------------------------- */
/* CUDA's device math spells sqrt, exp, sin, fma, fmin, ... as OpenCL does,
 * with float overloads. A few OpenCL built-ins CUDA lacks: */
KA__FN float mad(float a, float b, float c) { return a * b + c; }
KA__FN double mad(double a, double b, double c) { return a * b + c; }
#define KA__CLAMP(T) KA__FN T clamp(T x, T lo, T hi) { return x < lo ? lo : (hi < x ? hi : x); }
KA__CLAMP(float)
KA__CLAMP(double)
KA__CLAMP(int)
KA__CLAMP(uint)
KA__CLAMP(long)
KA__CLAMP(ulong)
#undef KA__CLAMP
KA__FN float mix(float a, float b, float t) { return a + (b - a) * t; }
KA__FN double mix(double a, double b, double t) { return a + (b - a) * t; }
KA__FN uint popcount(uint x) { return (uint)__popc(x); }
KA__FN int popcount(int x) { return __popc((unsigned)x); }
KA__FN ulong popcount(ulong x) { return (ulong)__popcll(x); }
KA__FN long popcount(long x) { return __popcll((unsigned long long)x); }
KA__FN uint clz(uint x) { return (uint)__clz((int)x); }
KA__FN int clz(int x) { return __clz(x); }
KA__FN ulong clz(ulong x) { return (ulong)__clzll((long long)x); }
KA__FN long clz(long x) { return __clzll(x); }

/* More OpenCL C built-ins CUDA lacks (scalar forms). native_ and half_
 * functions map to CUDA's fast intrinsics. */
KA__FN float pown(float x, int n) { return powf(x, (float)n); }
KA__FN double pown(double x, int n) { return ::pow(x, (double)n); }
KA__FN float powr(float x, float y) { return powf(x, y); }
KA__FN double powr(double x, double y) { return ::pow(x, y); }
KA__FN float rootn(float x, int n) {
    float r = powf(fabsf(x), 1.0f / (float)n);
    return x < 0.0f ? ((n & 1) ? -r : __int_as_float(0x7fc00000)) : r;
}
KA__FN double rootn(double x, int n) {
    double r = ::pow(::fabs(x), 1.0 / (double)n);
    return x < 0.0 ? ((n & 1) ? -r : __longlong_as_double(0x7ff8000000000000LL)) : r;
}
KA__FN float fract(float x, float *ip) {
    float f = floorf(x);
    *ip = f;
    return fminf(x - f, 0x1.fffffep-1f);
}
KA__FN double fract(double x, double *ip) {
    double f = ::floor(x);
    *ip = f;
    return ::fmin(x - f, 0x1.fffffffffffffp-1);
}
KA__FN float sincos(float x, float *c) {
    float s;
    sincosf(x, &s, c);
    return s;
}
KA__FN double sincos(double x, double *c) {
    double s;
    ::sincos(x, &s, c);
    return s;
}
KA__FN float maxmag(float x, float y) { return fabsf(x) > fabsf(y) ? x : fabsf(y) > fabsf(x) ? y : fmaxf(x, y); }
KA__FN double maxmag(double x, double y) { return ::fabs(x) > ::fabs(y) ? x : ::fabs(y) > ::fabs(x) ? y : ::fmax(x, y); }
KA__FN float minmag(float x, float y) { return fabsf(x) < fabsf(y) ? x : fabsf(y) < fabsf(x) ? y : fminf(x, y); }
KA__FN double minmag(double x, double y) { return ::fabs(x) < ::fabs(y) ? x : ::fabs(y) < ::fabs(x) ? y : ::fmin(x, y); }
KA__FN float degrees(float r) { return r * 57.295779513082320876798f; }
KA__FN double degrees(double r) { return r * 57.295779513082320876798; }
KA__FN float radians(float d) { return d * 0.017453292519943295769f; }
KA__FN double radians(double d) { return d * 0.017453292519943295769; }
KA__FN float step(float edge, float x) { return x < edge ? 0.0f : 1.0f; }
KA__FN double step(double edge, double x) { return x < edge ? 0.0 : 1.0; }
KA__FN float smoothstep(float e0, float e1, float x) {
    float t = clamp((x - e0) / (e1 - e0), 0.0f, 1.0f);
    return t * t * (3.0f - 2.0f * t);
}
KA__FN double smoothstep(double e0, double e1, double x) {
    double t = clamp((x - e0) / (e1 - e0), 0.0, 1.0);
    return t * t * (3.0 - 2.0 * t);
}
KA__FN float sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x != x ? 0.0f : x; }
KA__FN double sign(double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x != x ? 0.0 : x; }
#define KA__NATIVE(name, expr)                                                \
    KA__FN float native_##name(float x) { return expr; }                      \
    KA__FN float half_##name(float x) { return expr; }
KA__NATIVE(exp, __expf(x))
KA__NATIVE(exp2, exp2f(x))
KA__NATIVE(exp10, __exp10f(x))
KA__NATIVE(log, __logf(x))
KA__NATIVE(log2, __log2f(x))
KA__NATIVE(log10, __log10f(x))
KA__NATIVE(sin, __sinf(x))
KA__NATIVE(cos, __cosf(x))
KA__NATIVE(tan, __tanf(x))
KA__NATIVE(sqrt, sqrtf(x))
KA__NATIVE(rsqrt, rsqrtf(x))
KA__NATIVE(recip, __fdividef(1.0f, x))
#undef KA__NATIVE
KA__FN float native_powr(float x, float y) { return __powf(x, y); }
KA__FN float half_powr(float x, float y) { return __powf(x, y); }
KA__FN float native_divide(float x, float y) { return __fdividef(x, y); }
KA__FN float half_divide(float x, float y) { return __fdividef(x, y); }
/* integer built-ins */
KA__FN int mul24(int x, int y) { return __mul24(x, y); }
KA__FN uint mul24(uint x, uint y) { return __umul24(x, y); }
KA__FN int mad24(int x, int y, int z) { return __mul24(x, y) + z; }
KA__FN uint mad24(uint x, uint y, uint z) { return __umul24(x, y) + z; }
KA__FN int mul_hi(int x, int y) { return __mulhi(x, y); }
KA__FN uint mul_hi(uint x, uint y) { return __umulhi(x, y); }
KA__FN long mul_hi(long x, long y) { return (long)__mul64hi((long long)x, (long long)y); }
KA__FN ulong mul_hi(ulong x, ulong y) { return (ulong)__umul64hi((unsigned long long)x, (unsigned long long)y); }
KA__FN int mad_hi(int x, int y, int z) { return __mulhi(x, y) + z; }
KA__FN uint mad_hi(uint x, uint y, uint z) { return __umulhi(x, y) + z; }
KA__FN int hadd(int x, int y) { return __hadd(x, y); }
KA__FN uint hadd(uint x, uint y) { return __uhadd(x, y); }
KA__FN int rhadd(int x, int y) { return __rhadd(x, y); }
KA__FN uint rhadd(uint x, uint y) { return __urhadd(x, y); }
KA__FN uint abs_diff(int x, int y) { return x > y ? (uint)x - (uint)y : (uint)y - (uint)x; }
KA__FN uint abs_diff(uint x, uint y) { return x > y ? x - y : y - x; }
KA__FN int add_sat(int x, int y) { long long s = (long long)x + y; return s > 2147483647LL ? 2147483647 : s < -2147483648LL ? (int)-2147483648LL : (int)s; }
KA__FN uint add_sat(uint x, uint y) { uint s = x + y; return s < x ? 0xffffffffu : s; }
KA__FN int sub_sat(int x, int y) { long long s = (long long)x - y; return s > 2147483647LL ? 2147483647 : s < -2147483648LL ? (int)-2147483648LL : (int)s; }
KA__FN uint sub_sat(uint x, uint y) { return x > y ? x - y : 0u; }
KA__FN uint rotate(uint v, uint i) { return __funnelshift_l(v, v, i); }
KA__FN int rotate(int v, int i) { return (int)__funnelshift_l((uint)v, (uint)v, (uint)i); }
KA__FN ulong rotate(ulong v, ulong i) { i &= 63; return i ? (v << i) | (v >> (64 - i)) : v; }
KA__FN long rotate(long v, long i) { return (long)rotate((ulong)v, (ulong)i); }
KA__FN uint ctz(uint x) { return x ? (uint)(__ffs((int)x) - 1) : 32u; }
KA__FN int ctz(int x) { return x ? __ffs(x) - 1 : 32; }
KA__FN ulong ctz(ulong x) { return x ? (ulong)(__ffsll((long long)x) - 1) : 64ul; }
KA__FN long ctz(long x) { return x ? (long)(__ffsll(x) - 1) : 64l; }
/* select(a, b, c): c ? b : a (scalars: any nonzero c picks b) */
template <typename T, typename C> KA__FN T select(T a, T b, C c) { return c ? b : a; }
KA__FN uint bitselect(uint a, uint b, uint c) { return (a & ~c) | (b & c); }
KA__FN ulong bitselect(ulong a, ulong b, ulong c) { return (a & ~c) | (b & c); }
KA__FN float bitselect(float a, float b, float c) {
    return __uint_as_float((__float_as_uint(a) & ~__float_as_uint(c)) | (__float_as_uint(b) & __float_as_uint(c)));
}

/* Bit reinterpretation (OpenCL's as_<type>). */
KA__FN uint as_uint(float x) { return __float_as_uint(x); }
KA__FN int as_int(float x) { return __float_as_int(x); }
KA__FN float as_float(uint x) { return __uint_as_float(x); }
KA__FN float as_float(int x) { return __int_as_float(x); }
KA__FN ulong as_ulong(double x) { return (ulong)__double_as_longlong(x); }
KA__FN long as_long(double x) { return (long)__double_as_longlong(x); }
KA__FN double as_double(ulong x) { return __longlong_as_double((long long)x); }
KA__FN double as_double(long x) { return __longlong_as_double(x); }

/* ka_convert_<int type>_<mode>(x), mode rte (nearest even), rtz (toward zero),
 * rtp (up), rtn (down); saturating, NaN gives 0 (as OpenCL's _sat). PTX's
 * float-to-integer conversions saturate, but NaN does not reliably give 0
 * (seen on sm_90: float -> 64-bit gave INT64_MIN, double -> 32-bit INT_MIN),
 * hence the explicit NaN test; narrower types clamp the 32-bit result. */
#define KA__CONV_NARROW(T, LO, HI, F, SUF)                                                                    \
    KA__FN T ka_convert_##T##_rte(F x) { return x != x ? (T)0 : (T)clamp(__##SUF##2int_rn(x), LO, HI); }      \
    KA__FN T ka_convert_##T##_rtz(F x) { return x != x ? (T)0 : (T)clamp(__##SUF##2int_rz(x), LO, HI); }      \
    KA__FN T ka_convert_##T##_rtp(F x) { return x != x ? (T)0 : (T)clamp(__##SUF##2int_ru(x), LO, HI); }      \
    KA__FN T ka_convert_##T##_rtn(F x) { return x != x ? (T)0 : (T)clamp(__##SUF##2int_rd(x), LO, HI); }
#define KA__CONV_WIDE(T, F, SUF, TO)                                                                          \
    KA__FN T ka_convert_##T##_rte(F x) { return x != x ? (T)0 : (T)__##SUF##2##TO##_rn(x); }                  \
    KA__FN T ka_convert_##T##_rtz(F x) { return x != x ? (T)0 : (T)__##SUF##2##TO##_rz(x); }                  \
    KA__FN T ka_convert_##T##_rtp(F x) { return x != x ? (T)0 : (T)__##SUF##2##TO##_ru(x); }                  \
    KA__FN T ka_convert_##T##_rtn(F x) { return x != x ? (T)0 : (T)__##SUF##2##TO##_rd(x); }
#define KA__CONV_ALL(F, SUF)                                                                                  \
    KA__CONV_NARROW(char, -128, 127, F, SUF)                                                                  \
    KA__CONV_NARROW(uchar, 0, 255, F, SUF)                                                                    \
    KA__CONV_NARROW(short, -32768, 32767, F, SUF)                                                             \
    KA__CONV_NARROW(ushort, 0, 65535, F, SUF)                                                                 \
    KA__CONV_WIDE(int, F, SUF, int)                                                                           \
    KA__CONV_WIDE(uint, F, SUF, uint)                                                                         \
    KA__CONV_WIDE(long, F, SUF, ll)                                                                           \
    KA__CONV_WIDE(ulong, F, SUF, ull)
KA__CONV_ALL(float, float)
KA__CONV_ALL(double, double)
#undef KA__CONV_ALL
#undef KA__CONV_WIDE
#undef KA__CONV_NARROW

#define KA_PRINTF(...) printf(__VA_ARGS__)

/* ka_assert(cond), in a kernel's body: the first work-item of the queue to
 * fail one records the line, its global id and the kernel; it goes on. The
 * next wait on the queue returns KA_ERR_KERNEL_FAILED (docs/KERNELS.md). */
#ifdef KA__ASSERT
static __device__ __noinline__ void ka__assert_fail(unsigned int *r, unsigned long long kid, unsigned int line) {
    if (atomicCAS(r, 0u, 1u) != 0u) return;
    r[1] = line;
    for (unsigned d = 0; d < 3; d++) {
        unsigned long long g = ka_global_id(d);
        r[2 + 2 * d] = (unsigned int)g;
        r[3 + 2 * d] = (unsigned int)(g >> 32);
    }
    r[8] = (unsigned int)kid;
    r[9] = (unsigned int)(kid >> 32);
}
#define ka_assert(c) do { if (!(c)) ka__assert_fail(ka__arec, ka__akid, __LINE__); } while (0)
#endif

#endif
/* ---- user source follows ---- */
