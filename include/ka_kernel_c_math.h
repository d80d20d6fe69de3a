/* libka kernel dialect, C prelude: OpenCL C's scalar built-ins (math,
 * integer, selection, bit casts, conversions) as C11. Part of ka_kernel_c.h,
 * never included on its own. Type-generic by _Generic on the arguments (the
 * sum of the arguments for several), as OpenCL's overloads are: float
 * arguments call the float functions. */
#ifndef KA_KERNEL_C_MATH_H
#define KA_KERNEL_C_MATH_H
#if !defined(KA_KERNEL_C_H)
#error "ka_kernel_c_math.h is part of ka_kernel_c.h: include that"
#endif
/* C's math functions by the argument's type (float: the f function), as
 * tgmath.h would, without the complex.h it brings (whose I would take a
 * kernel's variable name). */
#define KA__M1(fn, x) _Generic((x), float: fn##f, long double: fn##l, default: fn)(x)
#define KA__M2(fn, x, y) _Generic((x) + (y), float: fn##f, long double: fn##l, default: fn)((x), (y))
#define KA__M3(fn, x, y, z) _Generic((x) + (y) + (z), float: fn##f, long double: fn##l, default: fn)((x), (y), (z))
#define sqrt(x) KA__M1(sqrt, x)
#define cbrt(x) KA__M1(cbrt, x)
#define exp(x) KA__M1(exp, x)
#define exp2(x) KA__M1(exp2, x)
#define expm1(x) KA__M1(expm1, x)
#define log(x) KA__M1(log, x)
#define log2(x) KA__M1(log2, x)
#define log10(x) KA__M1(log10, x)
#define log1p(x) KA__M1(log1p, x)
#define logb(x) KA__M1(logb, x)
#define sin(x) KA__M1(sin, x)
#define cos(x) KA__M1(cos, x)
#define tan(x) KA__M1(tan, x)
#define asin(x) KA__M1(asin, x)
#define acos(x) KA__M1(acos, x)
#define atan(x) KA__M1(atan, x)
#define sinh(x) KA__M1(sinh, x)
#define cosh(x) KA__M1(cosh, x)
#define tanh(x) KA__M1(tanh, x)
#define asinh(x) KA__M1(asinh, x)
#define acosh(x) KA__M1(acosh, x)
#define atanh(x) KA__M1(atanh, x)
#define erf(x) KA__M1(erf, x)
#define erfc(x) KA__M1(erfc, x)
#define tgamma(x) KA__M1(tgamma, x)
#define lgamma(x) KA__M1(lgamma, x)
#define fabs(x) KA__M1(fabs, x)
#define floor(x) KA__M1(floor, x)
#define ceil(x) KA__M1(ceil, x)
#define round(x) KA__M1(round, x)
#define trunc(x) KA__M1(trunc, x)
#define rint(x) KA__M1(rint, x)
#define nearbyint(x) KA__M1(nearbyint, x)
#define atan2(x, y) KA__M2(atan2, x, y)
#define pow(x, y) KA__M2(pow, x, y)
#define fmin(x, y) KA__M2(fmin, x, y)
#define fmax(x, y) KA__M2(fmax, x, y)
#define fmod(x, y) KA__M2(fmod, x, y)
#define fdim(x, y) KA__M2(fdim, x, y)
#define hypot(x, y) KA__M2(hypot, x, y)
#define copysign(x, y) KA__M2(copysign, x, y)
#define nextafter(x, y) KA__M2(nextafter, x, y)
#define remainder(x, y) KA__M2(remainder, x, y)
#define fma(x, y, z) KA__M3(fma, x, y, z)
#define ldexp(x, n) _Generic((x), float: ldexpf, long double: ldexpl, default: ldexp)((x), (n))

/* f##_f for float, f##_d otherwise (double, or an integer as C converts). */
#define KA__FD(f, x) _Generic((x), float: f##_f, default: f##_d)
#define KA__F2(T, name, a, b, expr) KA__FN T name(T a, T b) { return expr; }

/* ---- math C lacks ---------------------------------------------------------- */
KA__FN float ka__rsqrt_f(float x) { return 1.0f / sqrtf(x); }
KA__FN double ka__rsqrt_d(double x) { return 1.0 / sqrt(x); }
#define rsqrt(x) KA__FD(ka__rsqrt, x)(x)
KA__FN float ka__exp10_f(float x) { return powf(10.0f, x); }
KA__FN double ka__exp10_d(double x) { return pow(10.0, x); }
#undef exp10
#define exp10(x) KA__FD(ka__exp10, x)(x)
KA__FN float ka__pown_f(float x, int n) { return powf(x, (float)n); }
KA__FN double ka__pown_d(double x, int n) { return pow(x, (double)n); }
#define pown(x, n) KA__FD(ka__pown, x)((x), (n))
KA__FN float ka__rootn_f(float x, int n) { return x < 0 && (n & 1) ? -powf(-x, 1.0f / (float)n) : powf(x, 1.0f / (float)n); }
KA__FN double ka__rootn_d(double x, int n) { return x < 0 && (n & 1) ? -pow(-x, 1.0 / n) : pow(x, 1.0 / n); }
#define rootn(x, n) KA__FD(ka__rootn, x)((x), (n))
#define powr(x, y) pow((x), (y))
KA__FN float ka__mad_f(float a, float b, float c) { return a * b + c; }
KA__FN double ka__mad_d(double a, double b, double c) { return a * b + c; }
#define mad(a, b, c) KA__FD(ka__mad, (a) + (b) + (c))((a), (b), (c))
KA__FN float ka__mix_f(float a, float b, float t) { return a + (b - a) * t; }
KA__FN double ka__mix_d(double a, double b, double t) { return a + (b - a) * t; }
#define mix(a, b, t) KA__FD(ka__mix, (a) + (b) + (t))((a), (b), (t))
KA__FN float ka__sign_f(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x != x ? 0.0f : x; }
KA__FN double ka__sign_d(double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x != x ? 0.0 : x; }
#define sign(x) KA__FD(ka__sign, x)(x)
KA__FN float ka__step_f(float e, float x) { return x < e ? 0.0f : 1.0f; }
KA__FN double ka__step_d(double e, double x) { return x < e ? 0.0 : 1.0; }
#define step(e, x) KA__FD(ka__step, (e) + (x))((e), (x))
KA__FN float ka__smoothstep_f(float e0, float e1, float x) {
    float t = (x - e0) / (e1 - e0);
    t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
    return t * t * (3.0f - 2.0f * t);
}
KA__FN double ka__smoothstep_d(double e0, double e1, double x) {
    double t = (x - e0) / (e1 - e0);
    t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
    return t * t * (3.0 - 2.0 * t);
}
#define smoothstep(a, b, x) KA__FD(ka__smoothstep, (a) + (b) + (x))((a), (b), (x))
KA__FN float ka__degrees_f(float r) { return r * 57.295779513082320876798f; }
KA__FN double ka__degrees_d(double r) { return r * 57.295779513082320876798; }
#define degrees(x) KA__FD(ka__degrees, x)(x)
KA__FN float ka__radians_f(float d) { return d * 0.017453292519943295769f; }
KA__FN double ka__radians_d(double d) { return d * 0.017453292519943295769; }
#define radians(x) KA__FD(ka__radians, x)(x)
KA__FN float ka__fract_f(float x, float *ip) {
    float f = floorf(x);
    *ip = f;
    return fminf(x - f, 0x1.fffffep-1f);
}
KA__FN double ka__fract_d(double x, double *ip) {
    double f = floor(x);
    *ip = f;
    return fmin(x - f, 0x1.fffffffffffffp-1);
}
#define fract(x, ip) KA__FD(ka__fract, x)((x), (ip))
KA__FN float ka__sincos_f(float x, float *c) {
    *c = cosf(x);
    return sinf(x);
}
KA__FN double ka__sincos_d(double x, double *c) {
    *c = cos(x);
    return sin(x);
}
#undef sincos
#define sincos(x, c) KA__FD(ka__sincos, x)((x), (c))
KA__FN float ka__maxmag_f(float x, float y) { return fabsf(x) > fabsf(y) ? x : fabsf(y) > fabsf(x) ? y : fmaxf(x, y); }
KA__FN double ka__maxmag_d(double x, double y) { return fabs(x) > fabs(y) ? x : fabs(y) > fabs(x) ? y : fmax(x, y); }
#define maxmag(x, y) KA__FD(ka__maxmag, (x) + (y))((x), (y))
KA__FN float ka__minmag_f(float x, float y) { return fabsf(x) < fabsf(y) ? x : fabsf(y) < fabsf(x) ? y : fminf(x, y); }
KA__FN double ka__minmag_d(double x, double y) { return fabs(x) < fabs(y) ? x : fabs(y) < fabs(x) ? y : fmin(x, y); }
#define minmag(x, y) KA__FD(ka__minmag, (x) + (y))((x), (y))
/* clamp, min, max: any scalar type, by the usual arithmetic conversions. */
#define clamp(x, lo, hi)                                                                                   \
    __extension__({                                                                                        \
        __typeof__((x) + (lo) + (hi)) ka__x = (x), ka__lo = (lo), ka__hi = (hi);                           \
        ka__x < ka__lo ? ka__lo : (ka__hi < ka__x ? ka__hi : ka__x);                                       \
    })
#define min(a, b) __extension__({ __typeof__((a) + (b)) ka__a = (a), ka__b = (b); ka__b < ka__a ? ka__b : ka__a; })
#define max(a, b) __extension__({ __typeof__((a) + (b)) ka__a = (a), ka__b = (b); ka__a < ka__b ? ka__b : ka__a; })

/* Fast, inexact: the precise functions (float). */
#define native_cos(x) cosf(x)
#define native_divide(x, y) ((float)(x) / (float)(y))
#define native_exp(x) expf(x)
#define native_exp2(x) exp2f(x)
#define native_exp10(x) ka__exp10_f(x)
#define native_log(x) logf(x)
#define native_log2(x) log2f(x)
#define native_log10(x) log10f(x)
#define native_powr(x, y) powf((x), (y))
#define native_recip(x) (1.0f / (float)(x))
#define native_rsqrt(x) ka__rsqrt_f(x)
#define native_sin(x) sinf(x)
#define native_sqrt(x) sqrtf(x)
#define native_tan(x) tanf(x)
#define half_cos native_cos
#define half_divide native_divide
#define half_exp native_exp
#define half_exp2 native_exp2
#define half_exp10 native_exp10
#define half_log native_log
#define half_log2 native_log2
#define half_log10 native_log10
#define half_powr native_powr
#define half_recip native_recip
#define half_rsqrt native_rsqrt
#define half_sin native_sin
#define half_sqrt native_sqrt
#define half_tan native_tan

/* ---- integer ------------------------------------------------------------------ */
/* By the first argument's type: int, uint, long, ulong (long long as long). */
#define KA__IG(f, x) \
    _Generic((x), uint: f##_u, long: f##_l, ulong: f##_ul, long long: f##_l, unsigned long long: f##_ul, default: f##_i)
#define KA__INT4(M) M(i, int, uint, 32) M(u, uint, uint, 32) M(l, long, ulong, 64) M(ul, ulong, ulong, 64)
#define KA__BITS(S, T, U, W)                                                                               \
    KA__FN T ka__popcount_##S(T x) { return (T)__builtin_popcountll((unsigned long long)(U)x); }           \
    KA__FN T ka__clz_##S(T x) { return (U)x ? (T)(__builtin_clzll((unsigned long long)(U)x) - (64 - W)) : (T)W; } \
    KA__FN T ka__ctz_##S(T x) { return (U)x ? (T)__builtin_ctzll((unsigned long long)(U)x) : (T)W; }      \
    KA__FN T ka__rotate_##S(T x, T n) {                                                                    \
        unsigned s = (unsigned)((U)n % W);                                                                 \
        return s ? (T)(((U)x << s) | ((U)x >> (W - s))) : x;                                               \
    }                                                                                                      \
    KA__FN T ka__add_sat_##S(T a, T b) {                                                                   \
        T r;                                                                                               \
        if (!__builtin_add_overflow(a, b, &r)) return r;                                                   \
        return (T)-1 > 0 ? (T)-1 : (b > 0 ? (T)((U)-1 >> 1) : (T)(((U)-1 >> 1) + 1));                     \
    }                                                                                                      \
    KA__FN T ka__sub_sat_##S(T a, T b) {                                                                   \
        T r;                                                                                               \
        if (!__builtin_sub_overflow(a, b, &r)) return r;                                                   \
        return (T)-1 > 0 ? (T)0 : (b < 0 ? (T)((U)-1 >> 1) : (T)(((U)-1 >> 1) + 1));                       \
    }                                                                                                      \
    KA__FN T ka__hadd_##S(T a, T b) { return (T)((a >> 1) + (b >> 1) + (a & b & 1)); }                     \
    KA__FN T ka__rhadd_##S(T a, T b) { return (T)((a >> 1) + (b >> 1) + ((a | b) & 1)); }                  \
    KA__FN U ka__abs_diff_##S(T a, T b) { return a > b ? (U)a - (U)b : (U)b - (U)a; }
KA__INT4(KA__BITS)
KA__FN int ka__mul_hi_i(int a, int b) { return (int)(((long)a * b) >> 32); }
KA__FN uint ka__mul_hi_u(uint a, uint b) { return (uint)(((ulong)a * b) >> 32); }
KA__FN long ka__mul_hi_l(long a, long b) { return (long)(((__int128)a * b) >> 64); }
KA__FN ulong ka__mul_hi_ul(ulong a, ulong b) { return (ulong)(((unsigned __int128)a * b) >> 64); }
#define popcount(x) KA__IG(ka__popcount, x)(x)
#define clz(x) KA__IG(ka__clz, x)(x)
#define ctz(x) KA__IG(ka__ctz, x)(x)
#define rotate(x, n) KA__IG(ka__rotate, x)((x), (n))
#define add_sat(a, b) KA__IG(ka__add_sat, a)((a), (b))
#define sub_sat(a, b) KA__IG(ka__sub_sat, a)((a), (b))
#define hadd(a, b) KA__IG(ka__hadd, a)((a), (b))
#define rhadd(a, b) KA__IG(ka__rhadd, a)((a), (b))
#define abs_diff(a, b) KA__IG(ka__abs_diff, a)((a), (b))
#define mul_hi(a, b) KA__IG(ka__mul_hi, a)((a), (b))
#define mad_hi(a, b, c) (mul_hi((a), (b)) + (c))
#define mul24(a, b) ((a) * (b))
#define mad24(a, b, c) ((a) * (b) + (c))

/* ---- selection ---------------------------------------------------------------- */
/* select(a, b, c) is OpenCL's; with another count of arguments it stays the
 * name it is, so a header declaring POSIX select(2) (<stdlib.h> includes
 * <sys/select.h>) can follow the prelude: the name is not expanded again
 * inside its own expansion. */
#define KA__SELECT_PICK(a1, a2, a3, a4, a5, a6, a7, a8, n, ...) n
#define select(...) \
    KA__SELECT_PICK(__VA_ARGS__, KA__SELECT_N, KA__SELECT_N, KA__SELECT_N, KA__SELECT_N, KA__SELECT_N, KA__SELECT_3, \
                    KA__SELECT_N, KA__SELECT_N, )(__VA_ARGS__)
#define KA__SELECT_3(a, b, c) ((c) ? (b) : (a))
#define KA__SELECT_N(...) select(__VA_ARGS__)
KA__FN uint ka__bitselect_u(uint a, uint b, uint c) { return (a & ~c) | (b & c); }
KA__FN ulong ka__bitselect_ul(ulong a, ulong b, ulong c) { return (a & ~c) | (b & c); }
KA__FN int ka__bitselect_i(int a, int b, int c) { return (a & ~c) | (b & c); }
KA__FN long ka__bitselect_l(long a, long b, long c) { return (a & ~c) | (b & c); }
KA__FN float ka__bitselect_f(float a, float b, float c) {
    uint x, y, z;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    memcpy(&z, &c, 4);
    x = (x & ~z) | (y & z);
    memcpy(&a, &x, 4);
    return a;
}
KA__FN double ka__bitselect_d(double a, double b, double c) {
    ulong x, y, z;
    memcpy(&x, &a, 8);
    memcpy(&y, &b, 8);
    memcpy(&z, &c, 8);
    x = (x & ~z) | (y & z);
    memcpy(&a, &x, 8);
    return a;
}
#define bitselect(a, b, c)                                                                                 \
    _Generic((a), float: ka__bitselect_f, double: ka__bitselect_d, uint: ka__bitselect_u, long: ka__bitselect_l, \
             ulong: ka__bitselect_ul, default: ka__bitselect_i)((a), (b), (c))

/* ---- bit casts ------------------------------------------------------------------- */
#define KA__AS(T, x)                                                                                       \
    __extension__({                                                                                        \
        __typeof__(x) ka__v = (x);                                                                         \
        _Static_assert(sizeof ka__v == sizeof(T), "as_" #T ": the sizes differ");                          \
        T ka__r;                                                                                           \
        memcpy(&ka__r, &ka__v, sizeof ka__r);                                                              \
        ka__r;                                                                                             \
    })
#define as_int(x) KA__AS(int, x)
#define as_uint(x) KA__AS(uint, x)
#define as_float(x) KA__AS(float, x)
#define as_long(x) KA__AS(long, x)
#define as_ulong(x) KA__AS(ulong, x)
#define as_double(x) KA__AS(double, x)

/* ---- conversions with rounding: saturating, NaN gives 0 -------------------------- */
/* From double (a float converts exactly); HI1 is MAX + 1 as a double (a
 * power of two for every type). */
#define KA__CONV(N, T, LO, MAX, HI1)                                                                       \
    KA__FN T ka__conv_##N(double r) {                                                                      \
        return r != r ? (T)0 : r < (double)(LO) ? (T)(LO) : r >= (HI1) ? (T)(MAX) : (T)r;                 \
    }                                                                                                      \
    KA__FN T ka_convert_##N##_rte(double x) { return ka__conv_##N(nearbyint(x)); }                        \
    KA__FN T ka_convert_##N##_rtz(double x) { return ka__conv_##N(trunc(x)); }                            \
    KA__FN T ka_convert_##N##_rtp(double x) { return ka__conv_##N(ceil(x)); }                             \
    KA__FN T ka_convert_##N##_rtn(double x) { return ka__conv_##N(floor(x)); }
KA__CONV(char, signed char, -128, 127, 128.0)
KA__CONV(uchar, uchar, 0, 255, 256.0)
KA__CONV(short, short, -32768, 32767, 32768.0)
KA__CONV(ushort, ushort, 0, 65535, 65536.0)
KA__CONV(int, int, INT_MIN, INT_MAX, 2147483648.0)
KA__CONV(uint, uint, 0, UINT_MAX, 4294967296.0)
KA__CONV(long, long, LONG_MIN, LONG_MAX, 9223372036854775808.0)
KA__CONV(ulong, ulong, 0, ULONG_MAX, 18446744073709551616.0)

#endif
