// kernelgen CPU emulator: __half, __half2, __nv_bfloat16, __nv_bfloat162 and their intrinsics (the
// subset of cuda_fp16.h / cuda_bf16.h that kernels use), included by shim.h.
//
// The types are 16-bit storage structs (sizeof 2 and 4, aligned 2 and 4, trivially copyable) with the
// implicit conversions and operators of cuda_fp16.hpp / cuda_bf16.hpp, so `__half h = 1.0f;`,
// `float f = h;` and `h * h` mean what they mean in CUDA C++.
//
// Every rounding is round-to-nearest-even done on bits, as the GPU's cvt.rn and the sm_80+ f16/bf16
// arithmetic do: g++'s _Float16 or a float detour would round twice. Arithmetic computes the exact
// result (products of two halves or bf16s are exact in double), rounds it once to double with
// round-to-odd (a sticky bit: the last bit is set when anything was dropped), and then to the 16-bit
// format; round-to-odd at >= 2 extra bits makes that second rounding the correctly rounded one.
// NaN results are the canonical NaN (0x7fff), as cuda_fp16.hpp's host path and the GPU's cvt give.
#ifndef KG_HALF_H
#define KG_HALF_H

namespace kg {
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint64_t f64_bits(double d) { uint64_t u; std::memcpy(&u, &d, 8); return u; }
inline double bits_f64(uint64_t u) { double d; std::memcpy(&d, &u, 8); return d; }

// Round `m` right by `shift` (1..31) bits to nearest, ties to even.
inline uint32_t shift_rne(uint32_t m, int shift) {
  const uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  return r + ((rem > half) || (rem == half && (r & 1u)));
}

// float -> binary16 bits, round to nearest even; subnormal halves included, |x| >= 65520 -> inf.
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_bits(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7fffu;                      // NaN: canonical
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // 65520 (the tie above 65504) and up: inf
  const int e = (int)(a >> 23);
  if (e >= 113) return (uint16_t)(sign | shift_rne(a - (112u << 23), 13));  // normal: rebias 127 -> 15
  if (e < 102) return (uint16_t)sign;                       // below 2^-25 (or exactly it: a tie to 0)
  // subnormal half: units of 2^-24; the float's 24-bit significand is in units of 2^(e-150)
  return (uint16_t)(sign | shift_rne((a & 0x7fffffu) | 0x800000u, 126 - e));
}

// binary16 bits -> float, exact.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bits_f32(sign | 0x7f800000u | (m ? 0x400000u | (m << 13) : 0u));  // NaN stays quiet NaN
  if (e == 0) return bits_f32(sign) + (sign ? -1.0f : 1.0f) * (float)m * 0x1p-24f;       // exact: m < 2^10
  return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

// float -> bfloat16 bits, round to nearest even (the upper half of the float, rounded).
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);  // a carry into the exponent is right, up to inf
}
inline float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

// double -> float rounded to odd: exact, or the neighbour whose last bit is 1. Rounding that to a
// narrower format (<= 22 bits) is the correct rounding of the double.
inline float f64_to_f32_odd(double d) {
  float f = (float)d;
  if ((double)f != d && !std::isnan(d) && !(f32_bits(f) & 1u))
    f = std::nextafter(f, (double)f < d ? INFINITY : -INFINITY);
  return f;
}
inline uint16_t f64_to_f16(double d) {
  if (std::fabs(d) >= 65520.0) return (uint16_t)((std::signbit(d) ? 0x8000u : 0u) | 0x7c00u);
  return f32_to_f16(f64_to_f32_odd(d));
}
inline uint16_t f64_to_bf16(double d) {
  if (std::isnan(d)) return 0x7fffu;
  // beyond float's range: the float rounding overflows to inf, as the bf16 rounding must
  return f32_to_bf16(std::fabs(d) > (double)FLT_MAX ? (float)d : f64_to_f32_odd(d));
}

// a + b rounded to odd in double (exact inputs): the sum, with its last bit set when it is inexact.
inline double sum_odd(double a, double b) {
  const double s = a + b;
  if (!std::isfinite(s)) return s;
  const double bb = s - a, err = (a - (s - bb)) + (b - bb);  // TwoSum: s + err == a + b exactly
  if (err != 0.0 && !(f64_bits(s) & 1u)) return std::nextafter(s, err > 0 ? INFINITY : -INFINITY);
  return s;
}
}  // namespace kg

// ---- the types ------------------------------------------------------------------------------------
struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };
struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat162_raw { unsigned short x, y; };

// One macro for both 16-bit types: the same members as cuda_fp16.h's __half (from float, double and
// the integer types; to float and, truncating, to the integer types), with T's own conversions.
#define KG_HALF_TYPE(T, RAW, TO, FROM, FROM64)                                                           \
  struct alignas(2) T {                                                                                   \
    unsigned short __x;                                                                                   \
    T() = default;                                                                                        \
    constexpr T(const RAW& r) : __x(r.x) {}                                                               \
    T(float f) : __x(kg::FROM(f)) {}                                                                      \
    T(double d) : __x(kg::FROM64(d)) {}                                                                   \
    T(short v) : __x(kg::FROM64((double)v)) {}                                                            \
    T(unsigned short v) : __x(kg::FROM64((double)v)) {}                                                   \
    T(int v) : __x(kg::FROM64((double)v)) {}                                                              \
    T(unsigned v) : __x(kg::FROM64((double)v)) {}                                                         \
    T(long long v) : __x(kg::FROM64((double)v)) {}  /* double rounding past 2^53: never near a half */   \
    T(unsigned long long v) : __x(kg::FROM64((double)v)) {}                                               \
    static T from_bits(unsigned short b) { T t; t.__x = b; return t; }                                     \
    T& operator=(const RAW& r) { __x = r.x; return *this; }                                               \
    operator RAW() const { return RAW{__x}; }                                                             \
    operator float() const { return kg::TO(__x); }                                                        \
    operator short() const { return (short)kg::sat_rz(kg::TO(__x), SHRT_MIN, SHRT_MAX); }                  \
    operator unsigned short() const { return (unsigned short)kg::sat_rz(kg::TO(__x), 0, USHRT_MAX); }     \
    operator int() const { return (int)kg::sat_rz(kg::TO(__x), INT_MIN, INT_MAX); }                        \
    operator unsigned() const { return (unsigned)kg::sat_rz(kg::TO(__x), 0, UINT_MAX); }                   \
    operator long long() const { return (long long)kg::sat_rz(kg::TO(__x), -0x1p63, 0x1.fffffffffffffp62); } \
    operator unsigned long long() const {                                                                 \
      return (unsigned long long)kg::sat_rz(kg::TO(__x), 0, 0x1.fffffffffffffp63);                        \
    }                                                                                                     \
  };

namespace kg {
// Truncation toward zero, saturating, NaN -> 0: the GPU's cvt.rzi.sat.
inline double sat_rz(double f, double lo, double hi) {
  if (std::isnan(f)) return 0.0;
  return std::trunc(f < lo ? lo : f > hi ? hi : f);
}
}  // namespace kg

KG_HALF_TYPE(__half, __half_raw, f16_to_f32, f32_to_f16, f64_to_f16)
KG_HALF_TYPE(__nv_bfloat16, __nv_bfloat16_raw, bf16_to_f32, f32_to_bf16, f64_to_bf16)
#undef KG_HALF_TYPE

struct alignas(4) __half2 {
  __half x, y;
  __half2() = default;
  constexpr __half2(const __half& a, const __half& b) : x(a), y(b) {}
  __half2(const __half2_raw& r) : x(__half_raw{r.x}), y(__half_raw{r.y}) {}
  operator __half2_raw() const { return __half2_raw{x.__x, y.__x}; }
};
struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
  __nv_bfloat162() = default;
  constexpr __nv_bfloat162(const __nv_bfloat16& a, const __nv_bfloat16& b) : x(a), y(b) {}
  __nv_bfloat162(const __nv_bfloat162_raw& r) : x(__nv_bfloat16_raw{r.x}), y(__nv_bfloat16_raw{r.y}) {}
  operator __nv_bfloat162_raw() const { return __nv_bfloat162_raw{x.__x, y.__x}; }
};
typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
static_assert(sizeof(__half) == 2 && alignof(__half) == 2 && std::is_trivially_copyable<__half>::value, "__half");
static_assert(sizeof(__half2) == 4 && alignof(__half2) == 4 && std::is_trivially_copyable<__half2>::value, "__half2");
static_assert(sizeof(__nv_bfloat16) == 2 && sizeof(__nv_bfloat162) == 4 && alignof(__nv_bfloat162) == 4, "bf16");

// ---- conversions and bit casts -----------------------------------------------------------------------
static inline __half __float2half(float f) { return __half_raw{kg::f32_to_f16(f)}; }
static inline __half __float2half_rn(float f) { return __half_raw{kg::f32_to_f16(f)}; }
static inline __half __double2half(double d) { return __half_raw{kg::f64_to_f16(d)}; }
static inline float __half2float(__half h) { return kg::f16_to_f32(h.__x); }
static inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16_raw{kg::f32_to_bf16(f)}; }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16_raw{kg::f32_to_bf16(f)}; }
static inline __nv_bfloat16 __double2bfloat16(double d) { return __nv_bfloat16_raw{kg::f64_to_bf16(d)}; }
static inline float __bfloat162float(__nv_bfloat16 b) { return kg::bf16_to_f32(b.__x); }

static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __ushort_as_half(unsigned short u) { return __half_raw{u}; }
static inline __half __short_as_half(short s) { return __half_raw{(unsigned short)s}; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16_raw{u}; }
static inline __nv_bfloat16 __short_as_bfloat16(short s) { return __nv_bfloat16_raw{(unsigned short)s}; }

static inline int __half2int_rz(__half h) { return (int)h; }
static inline int __half2int_rn(__half h) { return (int)rintf(__half2float(h)); }
static inline unsigned __half2uint_rz(__half h) { return (unsigned)h; }
static inline short __half2short_rz(__half h) { return (short)h; }
static inline long long __half2ll_rz(__half h) { return (long long)h; }
static inline __half __int2half_rn(int v) { return __half(v); }
static inline __half __uint2half_rn(unsigned v) { return __half(v); }
static inline __half __short2half_rn(short v) { return __half(v); }
static inline int __bfloat162int_rz(__nv_bfloat16 h) { return (int)h; }
static inline __nv_bfloat16 __int2bfloat16_rn(int v) { return __nv_bfloat16(v); }

// pairs: .x is the low 16 bits of the 32-bit register, .y the high
static inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }
static inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
static inline __half2 __half2half2(__half a) { return __half2(a, a); }
static inline __half2 __float2half2_rn(float f) { return __half2(__float2half(f), __float2half(f)); }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half(a), __float2half(b)); }
static inline __half2 __float22half2_rn(float2 f) { return __floats2half2_rn(f.x, f.y); }
static inline float2 __half22float2(__half2 h) { return make_float2(__half2float(h.x), __half2float(h.y)); }
static inline float __low2float(__half2 h) { return __half2float(h.x); }
static inline float __high2float(__half2 h) { return __half2float(h.y); }
static inline __half __low2half(__half2 h) { return h.x; }
static inline __half __high2half(__half2 h) { return h.y; }
static inline __half2 __low2half2(__half2 h) { return __half2(h.x, h.x); }
static inline __half2 __high2half2(__half2 h) { return __half2(h.y, h.y); }
static inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
static inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
static inline __half2 __lowhigh2highlow(__half2 h) { return __half2(h.y, h.x); }

static inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
static inline __nv_bfloat162 __float2bfloat162_rn(float f) {
  return __nv_bfloat162(__float2bfloat16(f), __float2bfloat16(f));
}
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162(__float2bfloat16(a), __float2bfloat16(b));
}
static inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) {
  return make_float2(__bfloat162float(h.x), __bfloat162float(h.y));
}
static inline float __low2float(__nv_bfloat162 h) { return __bfloat162float(h.x); }
static inline float __high2float(__nv_bfloat162 h) { return __bfloat162float(h.y); }
static inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
static inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
static inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
static inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
static inline __nv_bfloat162 __lowhigh2highlow(__nv_bfloat162 h) { return __nv_bfloat162(h.y, h.x); }

// ---- arithmetic, comparisons and the operators, once per 16-bit type (__hadd etc. are overloaded
// for __nv_bfloat16 in cuda_bf16.h) ----------------------------------------------------------------
#define KG_HALF_OPS(T, T2, TO, INF, ONE)                                                          \
  static inline double kg_d(T a) { return (double)kg::TO(a.__x); }                                        \
  static inline T __hadd(T a, T b) { return T(kg::sum_odd(kg_d(a), kg_d(b))); }                   \
  static inline T __hsub(T a, T b) { return T(kg::sum_odd(kg_d(a), -kg_d(b))); }                  \
  static inline T __hmul(T a, T b) { return T(kg_d(a) * kg_d(b)); }        /* exact in double */   \
  static inline T __hdiv(T a, T b) { return T(kg_d(a) / kg_d(b)); }   /* 53 >= 2*11+2 bits: one rounding */ \
  static inline T __hfma(T a, T b, T c) { return T(kg::sum_odd(kg_d(a) * kg_d(b), kg_d(c))); }     \
  static inline T __hneg(T a) { return T::from_bits(a.__x ^ 0x8000u); }                                 \
  static inline T __habs(T a) { return T::from_bits(a.__x & 0x7fffu); }                                 \
  static inline bool __hisnan(T a) { return (a.__x & 0x7fffu) > INF; }                                   \
  static inline int __hisinf(T a) { return (a.__x & 0x7fffu) == INF ? (a.__x & 0x8000u ? -1 : 1) : 0; }   \
  /* __hmax/__hmin: a NaN input yields the other input, two NaNs the canonical NaN; +0 > -0 */           \
  static inline T kg_pick(T a, T b, bool a_wins) {                                                        \
    if (__hisnan(a) && __hisnan(b)) return T::from_bits(0x7fffu);                                         \
    if (__hisnan(a)) return b;                                                                            \
    if (__hisnan(b)) return a;                                                                            \
    return a_wins ? a : b;                                                                                \
  }                                                                                                       \
  static inline T __hmax(T a, T b) {                                                                      \
    double x = kg_d(a), y = kg_d(b);                                                                      \
    return kg_pick(a, b, x > y || (x == y && !(a.__x & 0x8000u)));                                       \
  }                                                                                                       \
  static inline T __hmin(T a, T b) {                                                                      \
    double x = kg_d(a), y = kg_d(b);                                                                      \
    return kg_pick(a, b, x < y || (x == y && (a.__x & 0x8000u)));                                         \
  }                                                                                                       \
  static inline T __hmax_nan(T a, T b) { return __hisnan(a) || __hisnan(b) ? T::from_bits(0x7fffu) : __hmax(a, b); } \
  static inline T __hmin_nan(T a, T b) { return __hisnan(a) || __hisnan(b) ? T::from_bits(0x7fffu) : __hmin(a, b); } \
  static inline bool __heq(T a, T b) { return kg_d(a) == kg_d(b); }                                      \
  static inline bool __hne(T a, T b) { return kg_d(a) < kg_d(b) || kg_d(a) > kg_d(b); }                  \
  static inline bool __hlt(T a, T b) { return kg_d(a) < kg_d(b); }                                       \
  static inline bool __hle(T a, T b) { return kg_d(a) <= kg_d(b); }                                      \
  static inline bool __hgt(T a, T b) { return kg_d(a) > kg_d(b); }                                       \
  static inline bool __hge(T a, T b) { return kg_d(a) >= kg_d(b); }                                      \
  static inline bool __hequ(T a, T b) { return !__hne(a, b); }                                            \
  static inline bool __hneu(T a, T b) { return !__heq(a, b); }                                            \
  static inline bool __hltu(T a, T b) { return !__hge(a, b); }                                            \
  static inline bool __hleu(T a, T b) { return !__hgt(a, b); }                                            \
  static inline bool __hgtu(T a, T b) { return !__hle(a, b); }                                            \
  static inline bool __hgeu(T a, T b) { return !__hlt(a, b); }                                            \
  static inline T operator+(const T& a, const T& b) { return __hadd(a, b); }                              \
  static inline T operator-(const T& a, const T& b) { return __hsub(a, b); }                              \
  static inline T operator*(const T& a, const T& b) { return __hmul(a, b); }                              \
  static inline T operator/(const T& a, const T& b) { return __hdiv(a, b); }                              \
  static inline T& operator+=(T& a, const T& b) { return a = __hadd(a, b); }                              \
  static inline T& operator-=(T& a, const T& b) { return a = __hsub(a, b); }                              \
  static inline T& operator*=(T& a, const T& b) { return a = __hmul(a, b); }                              \
  static inline T& operator/=(T& a, const T& b) { return a = __hdiv(a, b); }                              \
  static inline T operator+(const T& a) { return a; }                                                     \
  static inline T operator-(const T& a) { return __hneg(a); }                                             \
  static inline bool operator==(const T& a, const T& b) { return __heq(a, b); }                           \
  static inline bool operator!=(const T& a, const T& b) { return __hneu(a, b); }                          \
  static inline bool operator<(const T& a, const T& b) { return __hlt(a, b); }                            \
  static inline bool operator<=(const T& a, const T& b) { return __hle(a, b); }                           \
  static inline bool operator>(const T& a, const T& b) { return __hgt(a, b); }                            \
  static inline bool operator>=(const T& a, const T& b) { return __hge(a, b); }                           \
  /* pairs: lane-wise */                                                                                  \
  static inline T2 __hadd2(T2 a, T2 b) { return T2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }                  \
  static inline T2 __hsub2(T2 a, T2 b) { return T2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }                  \
  static inline T2 __hmul2(T2 a, T2 b) { return T2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }                  \
  static inline T2 __h2div(T2 a, T2 b) { return T2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }                  \
  static inline T2 __hfma2(T2 a, T2 b, T2 c) { return T2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }  \
  static inline T2 __hmax2(T2 a, T2 b) { return T2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                  \
  static inline T2 __hmin2(T2 a, T2 b) { return T2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                  \
  static inline T2 __hneg2(T2 a) { return T2(__hneg(a.x), __hneg(a.y)); }                                  \
  static inline T2 __habs2(T2 a) { return T2(__habs(a.x), __habs(a.y)); }                                  \
  static inline bool __hbeq2(T2 a, T2 b) { return __heq(a.x, b.x) && __heq(a.y, b.y); }                    \
  static inline bool __hbne2(T2 a, T2 b) { return __hne(a.x, b.x) && __hne(a.y, b.y); }                    \
  static inline bool __hblt2(T2 a, T2 b) { return __hlt(a.x, b.x) && __hlt(a.y, b.y); }                    \
  static inline bool __hble2(T2 a, T2 b) { return __hle(a.x, b.x) && __hle(a.y, b.y); }                    \
  static inline bool __hbgt2(T2 a, T2 b) { return __hgt(a.x, b.x) && __hgt(a.y, b.y); }                    \
  static inline bool __hbge2(T2 a, T2 b) { return __hge(a.x, b.x) && __hge(a.y, b.y); }                    \
  static inline bool __hbneu2(T2 a, T2 b) { return __hneu(a.x, b.x) && __hneu(a.y, b.y); }                 \
  static inline T2 __heq2(T2 a, T2 b) { return T2(T::from_bits(__heq(a.x, b.x) ? ONE : 0u), T::from_bits(__heq(a.y, b.y) ? ONE : 0u)); }  \
  static inline T2 __hlt2(T2 a, T2 b) { return T2(T::from_bits(__hlt(a.x, b.x) ? ONE : 0u), T::from_bits(__hlt(a.y, b.y) ? ONE : 0u)); }  \
  static inline T2 __hgt2(T2 a, T2 b) { return T2(T::from_bits(__hgt(a.x, b.x) ? ONE : 0u), T::from_bits(__hgt(a.y, b.y) ? ONE : 0u)); }  \
  static inline T2 operator+(const T2& a, const T2& b) { return __hadd2(a, b); }                          \
  static inline T2 operator-(const T2& a, const T2& b) { return __hsub2(a, b); }                          \
  static inline T2 operator*(const T2& a, const T2& b) { return __hmul2(a, b); }                          \
  static inline T2 operator/(const T2& a, const T2& b) { return __h2div(a, b); }                          \
  static inline T2& operator+=(T2& a, const T2& b) { return a = __hadd2(a, b); }                          \
  static inline T2& operator-=(T2& a, const T2& b) { return a = __hsub2(a, b); }                          \
  static inline T2& operator*=(T2& a, const T2& b) { return a = __hmul2(a, b); }                          \
  static inline T2 operator-(const T2& a) { return __hneg2(a); }                                          \
  static inline bool operator==(const T2& a, const T2& b) { return __hbeq2(a, b); }                       \
  static inline bool operator!=(const T2& a, const T2& b) { return __hbneu2(a, b); }

KG_HALF_OPS(__half, __half2, f16_to_f32, 0x7c00u, 0x3c00u)
KG_HALF_OPS(__nv_bfloat16, __nv_bfloat162, bf16_to_f32, 0x7f80u, 0x3f80u)
#undef KG_HALF_OPS

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)
#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)

#endif  // KG_HALF_H
