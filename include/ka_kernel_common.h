/* libka kernel dialect: the definitions both preludes share, written once on
 * the primitives each prelude defines first (ka_nd_t and the hidden argument
 * ka__nd, ka_size_t, uint, ka_global_id, ka_local_id, ka_group_id,
 * ka_num_groups, ka_group_size). Included by ka_kernel_cl.h and
 * ka_kernel_cuda.h, never on its own; libka's built-in copies of the
 * preludes carry it inline, as OpenCL and NVRTC builds have no include path. */
#ifndef KA_KERNEL_COMMON_H
#define KA_KERNEL_COMMON_H
#if !defined(KA_KERNEL_CL_H) && !defined(KA_KERNEL_CUDA_H) && !defined(KA_KERNEL_C_H)
#error "ka_kernel_common.h is part of ka_kernel_cl.h, ka_kernel_cuda.h and ka_kernel_c.h: include one of those"
#endif

/* Helpers that use ka_ndrange(), ka_in_range() or the linear indices take the
 * kernel's context (KernelAbstractions' @context): declare the helper as
 * f(KA_CTX_PARAM, ...) and call it as f(KA_CTX, ...). */
#define KA_CTX_PARAM const ka_nd_t ka__nd
#define KA_CTX ka__nd
/* KA_KERNEL(name, params...) KA_WORKGROUP(x, y, z) { ... }: the work-group
 * size the kernel is written for (local arrays sized for it). libka reads it
 * from the source: a launch without range.workgroup gets it, compiled in as a
 * static size (KA_STATIC_WG0..2, reqd_work_group_size, __launch_bounds__);
 * another size is refused. Three integer literals. */
#define KA_WORKGROUP(x, y, z)
/* Loop unrolling hints, before a for loop. */
#define KA__PRAGMA(x) _Pragma(#x)
#define KA_UNROLL KA__PRAGMA(unroll)
#define KA_UNROLL_N(n) KA__PRAGMA(unroll n)

/* ---- indices ----------------------------------------------------------- */
#if defined(KA_STATIC_WG0)
/* Work-items of the static work-group: sizes fixed local arrays. Defined only
 * in static variants, so a kernel using it sits under #ifdef KA_STATIC_WG0. */
#define KA_STATIC_WG_LINEAR ((KA_STATIC_WG0) * (KA_STATIC_WG1) * (KA_STATIC_WG2))
#endif
#if defined(KA_STATIC_ND0)
#define ka_ndrange(d) ((ka_size_t)((d) == 0 ? (KA_STATIC_ND0) : (d) == 1 ? (KA_STATIC_ND1) : (d) == 2 ? (KA_STATIC_ND2) : 1))
#elif !defined(KA__OWN_NDRANGE) /* the CUDA prelude defines its own */
#define ka_ndrange(d) ((ka_size_t)((d) == 0 ? ka__nd.x : (d) == 1 ? ka__nd.y : (d) == 2 ? ka__nd.z : 1))
#endif
#ifndef KA__OWN_NDRANGE
#define ka_ndims() ((uint)ka__nd.w)
#endif
/* Row-major linear index: dimension 0 varies fastest (i0 + n0*(i1 + n1*i2)). */
#define ka_global_linear_id() (ka_global_id(0) + ka_ndrange(0) * (ka_global_id(1) + ka_ndrange(1) * ka_global_id(2)))
#define ka_local_linear_id() (ka_local_id(0) + ka_group_size(0) * (ka_local_id(1) + ka_group_size(1) * ka_local_id(2)))
#define ka_group_linear_id() (ka_group_id(0) + ka_num_groups(0) * (ka_group_id(1) + ka_num_groups(1) * ka_group_id(2)))
#define ka_group_linear_size() (ka_group_size(0) * ka_group_size(1) * ka_group_size(2))
#define ka_ndrange_linear() (ka_ndrange(0) * ka_ndrange(1) * ka_ndrange(2))

/* ---- portable scalar type names (ka_i8 is each prelude's own) ----------- */
typedef uchar ka_u8;
typedef short ka_i16;
typedef ushort ka_u16;
typedef int ka_i32;
typedef uint ka_u32;
typedef long ka_i64;
typedef ulong ka_u64;
typedef float ka_f32;
#ifdef KA_HAS_DOUBLE
typedef double ka_f64;
#endif

#endif
