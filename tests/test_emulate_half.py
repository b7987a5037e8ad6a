"""__half and __nv_bfloat16 on the CPU emulator: conversions bit for bit against numpy (float16) and
an exact model (bfloat16), arithmetic correctly rounded against exact fractions, the CUDA C++
operators and 2-byte warp shuffles; the same kernels compile with NVRTC."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kernelgen.emulate import EmulationError, execute
from kernelgen.ops.base import Kernel, Launch, Plan, Problem, Scalar
from kernelgen.schedule import Schedule

N = 1 << 14

SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void convert(const float* x, unsigned short* h, unsigned short* b, float* hf, float* bf,
                                   int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const __half v = x[i];                       // the converting constructor: __float2half
  const __nv_bfloat16 w = __float2bfloat16_rn(x[i]);
  h[i] = __half_as_ushort(v);
  b[i] = __bfloat16_as_ushort(w);
  const float back = v;                        // operator float: __half2float
  hf[i] = back;
  bf[i] = __bfloat162float(w);
}

// op 0..7: + - * / fma max min neg, on 16-bit patterns of either type
template <class T>
__device__ T apply(int op, T a, T b, T c) {
  switch (op) {
    case 0: return a + b;
    case 1: return __hsub(a, b);
    case 2: return a * b;
    case 3: return a / b;
    case 4: return __hfma(a, b, c);
    case 5: return __hmax(a, b);
    case 6: return __hmin(a, b);
    default: return -a;
  }
}
template <class T, class B>
__device__ void arith(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                      unsigned short* out, int op, int n, T (*from)(unsigned short), B (*bits)(T)) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = bits(apply<T>(op, from(a[i]), from(b[i]), from(c[i])));
}
extern "C" __global__ void arith_f16(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                                     unsigned short* out, int op, int n) {
  arith<__half, unsigned short>(a, b, c, out, op, n, __ushort_as_half, __half_as_ushort);
}
extern "C" __global__ void arith_bf16(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                                      unsigned short* out, int op, int n) {
  arith<__nv_bfloat16, unsigned short>(a, b, c, out, op, n, __ushort_as_bfloat16, __bfloat16_as_ushort);
}

// neighbouring threads store neighbouring halves to shared memory (no race); `clash` makes two collide
extern "C" __global__ void half_smem(const __half* x, __half* y, int clash) {
  __shared__ __half s[64];
  const int t = threadIdx.x;
  s[clash && t == 1 ? 0 : t] = x[t];
  __syncthreads();
  y[t] = s[63 - t];
}

// pairs, comparisons and 2- and 4-byte shuffles; one warp
extern "C" __global__ void pairs(const __half* x, float* out) {
  const int t = threadIdx.x;
  const __half h = x[t];
  __half2 p = __halves2half2(h, __float2half(1.5f));
  p = __hfma2(p, make_half2(__float2half(2.0f), __float2half(2.0f)), __half2half2(__float2half(0.25f)));
  const float2 f = __half22float2(p);
  float* o = out + 16 * t;
  o[0] = f.x; o[1] = f.y; o[2] = __low2float(p); o[3] = __high2float(p);
  o[4] = __half2float(__shfl_xor_sync(0xffffffffu, h, 1));              // 2-byte shuffle
  o[5] = __high2float(__shfl_down_sync(0xffffffffu, p, 1));           // 4-byte shuffle
  const __nv_bfloat162 q = __floats2bfloat162_rn(__half2float(h), -3.0f);
  const float2 g = __bfloat1622float2(__hmul2(q, q));
  o[6] = g.x; o[7] = g.y;
  o[8] = __bfloat162float(__shfl_sync(0xffffffffu, __low2bfloat16(q), 0));
  o[9] = (h < __float2half(0.0f)) + 2 * (h == h) + 4 * (h != __float2half(1.0f)) + 8 * __hisnan(h);
  __half s = h;
  s += __float2half(1.0f);
  s *= h;
  o[10] = s;                                                           // implicit operator float
  o[11] = __low2float(__float22half2_rn(make_float2(o[0], o[1])));
  o[12] = __half2float(__hmax2(p, __lowhigh2highlow(p)).x);
  const __half one = 1.0f;                                             // constructors of cuda_fp16.hpp
  const __nv_bfloat16 two = 2;
  o[13] = __half2float(one) + __bfloat162float(two);
  o[14] = __half2float(__low2half(p)) - __half2float(__high2half(p));
  o[15] = (float)(int)__float2half(-7.75f);                            // truncating integer conversion
}
"""


def plan(symbol: str, args: tuple[str, ...], n: int, scalars=()) -> Plan:
    kern = Kernel("test", symbol, Schedule("test"), (), "", ())
    return Plan(kern, Problem((("n", n),)), (Launch(symbol, (-(-n // 256), 1, 1), (256, 1, 1), args),),
                scalars=tuple(scalars))


def special_floats() -> np.ndarray:
    """Ties, subnormals, the overflow boundary, inf and NaN of both formats, as float32."""
    f = [0.0, -0.0, 1.0, 65504.0, 65519.996, 65520.0, 65536.0, 1e9, -65520.0, 2.0 ** -14, 2.0 ** -24,
         2.0 ** -25, 2.0 ** -25 * 1.0000001, 3 * 2.0 ** -26, 2.0 ** -26, 1.5 * 2.0 ** -24, 2.5 * 2.0 ** -24,
         1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -8 + 2.0 ** -20,
         np.inf, -np.inf, np.nan, 3.4028235e38, 1e-40, -1e-45, 1.1754944e-38]
    return np.array(f, np.float32)


def bf16_reference(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16, from the two neighbouring bf16 values in float64."""
    u = x.view(np.uint32).astype(np.uint64)
    lo = (u >> 16).astype(np.uint32)
    down = (lo << 16).view(np.float32).astype(np.float64)
    up = ((lo + 1) << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    up = np.where(np.isinf(up), 2.0 ** 128, up)            # past the largest bf16: the next power of two
    xd = np.abs(x.astype(np.float64))
    with np.errstate(invalid="ignore"):
        d_lo, d_hi = xd - np.abs(down), np.abs(up) - xd
    with np.errstate(invalid="ignore"):
        round_up = (d_hi < d_lo) | ((d_hi == d_lo) & (lo % 2 == 1))
    out = np.where(round_up, lo + 1, lo).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FFF), out)


@pytest.mark.emulate
@pytest.mark.parametrize("check", [False, True])
def test_conversions_are_bit_exact(check):
    rng = np.random.default_rng(1)
    x = np.concatenate([special_floats(), -special_floats(),
                        rng.integers(0, 2 ** 32, N, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        rng.standard_normal(N).astype(np.float32) * 1000,
                        (rng.standard_normal(N) * 2.0 ** -20).astype(np.float32)])
    n = x.size
    bufs = {"x": x, "h": np.zeros(n, np.uint16), "b": np.zeros(n, np.uint16), "hf": np.zeros(n, np.float32),
            "bf": np.zeros(n, np.float32)}
    execute(plan("convert", ("x", "h", "b", "hf", "bf", "n"), n, [Scalar("n", "int", n)]), SOURCE, bufs,
            check=check)
    nan = np.isnan(x)
    with np.errstate(over="ignore"):
        f16 = x.astype(np.float16)
    assert (bufs["h"][~nan] == f16.view(np.uint16)[~nan]).all()
    assert (bufs["h"][nan] == 0x7FFF).all()                          # the canonical NaN, as cvt.rn.f16.f32
    assert (bufs["hf"][~nan] == f16.astype(np.float32)[~nan]).all() and np.isnan(bufs["hf"][nan]).all()
    assert (bufs["b"] == bf16_reference(x)).all()
    assert (bufs["bf"] == (bufs["b"].astype(np.uint32) << 16).view(np.float32))[~nan].all()


# ---- arithmetic: the exact result of the 16-bit inputs, rounded once ------------------------------
FORMATS = {"f16": dict(exp_bits=5, man_bits=10), "bf16": dict(exp_bits=8, man_bits=7)}


def to_value(bits: int, fmt: str) -> float:
    f = np.array([bits], np.uint16)
    v = f.view(np.float16)[0] if fmt == "f16" else (f.astype(np.uint32) << 16).view(np.float32)[0]
    return float(v)


def round_exact(q: Fraction, fmt: str) -> int:
    """Round the exact value `q` to the nearest `fmt` value, ties to even; overflow to inf."""
    e, m = FORMATS[fmt]["exp_bits"], FORMATS[fmt]["man_bits"]
    bias = (1 << (e - 1)) - 1
    sign = 0x8000 if q < 0 else 0
    q = abs(q)
    if q == 0:
        return sign
    # the scale of the last bit: subnormals share the smallest normal exponent's
    exp = max(q.numerator.bit_length() - q.denominator.bit_length(), 1 - bias)
    while Fraction(2) ** exp > q and exp > 1 - bias:
        exp -= 1
    while Fraction(2) ** (exp + 1) <= q:
        exp += 1
    ulp = Fraction(2) ** (exp - m)
    k, rem = divmod(q, ulp)
    k = int(k)
    if rem * 2 > ulp or (rem * 2 == ulp and k % 2 == 1):
        k += 1
    value = k * ulp
    if value >= Fraction(2) ** (bias + 1):
        return sign | (((1 << e) - 1) << m)                           # inf
    # encode: value = k * 2^(exp - m); normal when k >= 2^m
    if exp == 1 - bias and k < (1 << m):
        return sign | k
    while k >= (2 << m):                                              # rounding carried into the exponent
        k //= 2
        exp += 1
    return sign | ((exp + bias) << m) | (k - (1 << m))


def reference(op: int, a: int, b: int, c: int, fmt: str) -> int:
    x, y, z = (Fraction(to_value(v, fmt)) for v in (a, b, c))
    if op == 0:
        return round_exact(x + y, fmt)
    if op == 1:
        return round_exact(x - y, fmt)
    if op == 2:
        return round_exact(x * y, fmt)
    if op == 3:
        return round_exact(x / y, fmt)
    if op == 4:
        return round_exact(x * y + z, fmt)
    if op in (5, 6):
        return a if (x > y) == (op == 5) or x == y and (a & 0x8000) == (0 if op == 5 else 0x8000) else b
    return a ^ 0x8000


def finite_bits(rng, n: int, fmt: str) -> np.ndarray:
    """Random finite 16-bit patterns (zeros and subnormals included), never zero for divisors."""
    inf = 0x7C00 if fmt == "f16" else 0x7F80
    v = rng.integers(0, 1 << 16, n * 2, dtype=np.uint32).astype(np.uint16)
    return v[(v & 0x7FFF) < inf][:n]


@pytest.mark.emulate
@pytest.mark.parametrize("fmt", ["f16", "bf16"])
@pytest.mark.parametrize("op", range(8), ids=["add", "sub", "mul", "div", "fma", "max", "min", "neg"])
def test_arithmetic_is_correctly_rounded(fmt, op):
    rng = np.random.default_rng(100 + op)
    n = 1500
    a, b, c = finite_bits(rng, n, fmt), finite_bits(rng, n, fmt), finite_bits(rng, n, fmt)
    # narrow the exponents of half of the cases so that sums cancel and ties appear
    a[: n // 2] = (a[: n // 2] & 0x83FF) | 0x3C00 if fmt == "f16" else (a[: n // 2] & 0x807F) | 0x3F80
    b[: n // 2] = (b[: n // 2] & 0x83FF) | 0x3800 if fmt == "f16" else (b[: n // 2] & 0x807F) | 0x3F00
    if op == 3:
        b[(b & 0x7FFF) == 0] = 0x3C00 if fmt == "f16" else 0x3F80
    out = np.zeros(n, np.uint16)
    execute(plan(f"arith_{fmt}", ("a", "b", "c", "out", "op", "n"), n,
                 [Scalar("op", "int", op), Scalar("n", "int", n)]), SOURCE, {"a": a, "b": b, "c": c, "out": out})
    want = np.array([reference(op, int(x), int(y), int(z), fmt) for x, y, z in zip(a, b, c)], np.uint16)
    bad = np.nonzero(out != want)[0]
    assert bad.size == 0, [(hex(a[i]), hex(b[i]), hex(c[i]), hex(out[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.emulate
def test_specials_and_overflow():
    cases = [  # (op, a, b, expected) in float16 patterns
        (0, 0x7BFF, 0x7BFF, 0x7C00),           # 65504 + 65504 overflows to inf
        (0, 0x7C00, 0xFC00, 0x7FFF),           # inf - inf: NaN
        (3, 0x3C00, 0x0000, 0x7C00),           # 1 / 0 = inf
        (2, 0x0001, 0x3800, 0x0000),           # 2^-24 * 0.5: a tie, to even (zero)
        (2, 0x0003, 0x3800, 0x0002),           # 3 * 2^-25: a tie, to even
        (5, 0x7E00, 0x3C00, 0x3C00),           # __hmax(NaN, 1) = 1
        (6, 0x3C00, 0x7E00, 0x3C00),
        (5, 0x8000, 0x0000, 0x0000),           # +0 > -0
        (6, 0x0000, 0x8000, 0x8000),
    ]
    n = len(cases)
    a = np.array([c[1] for c in cases], np.uint16)
    b = np.array([c[2] for c in cases], np.uint16)
    for i, (op, *_ , want) in enumerate(cases):
        out = np.zeros(n, np.uint16)
        execute(plan("arith_f16", ("a", "b", "c", "out", "op", "n"), n, [Scalar("op", "int", op), Scalar("n", "int", n)]),
                SOURCE, {"a": a, "b": b, "c": np.zeros(n, np.uint16), "out": out})
        got = int(out[i])
        assert got == want or (want == 0x7FFF and (got & 0x7FFF) > 0x7C00), (i, hex(got), hex(want))


@pytest.mark.emulate
@pytest.mark.parametrize("order", ["forward", "random"])
def test_pairs_operators_and_shuffles(order):
    x = (np.arange(32, dtype=np.float32) - 12.5).astype(np.float16)
    x[3] = np.nan
    out = np.zeros(32 * 16, np.float32)
    kern = Kernel("test", "pairs", Schedule("test"), (), "", ())
    p = Plan(kern, Problem((("n", 32),)), (Launch("pairs", (1, 1, 1), (32, 1, 1), ("x", "out")),))
    execute(p, SOURCE, {"x": x, "out": out}, check=True, order=order)
    o = out.reshape(32, 16)
    h = x.astype(np.float64)
    r16 = lambda v: np.float16(v).astype(np.float64)                       # noqa: E731
    ok = ~np.isnan(h)
    lo = np.array([r16(r16(v * 2) + 0.25) if not np.isnan(v) else np.nan for v in h])
    assert np.array_equal(o[:, 0], lo, equal_nan=True) and (o[:, 1] == 3.25).all()
    assert np.array_equal(o[:, 2], o[:, 0], equal_nan=True) and (o[:, 3] == 3.25).all()
    assert np.array_equal(o[:, 4], h[np.arange(32) ^ 1], equal_nan=True)
    assert (o[:, 5] == 3.25).all()
    sq = [(np.array([bf16_reference(np.array([v], np.float32))[0]], np.uint32) << 16).view(np.float32)[0]
          for v in h.astype(np.float32) ** 2]
    assert np.array_equal(o[:, 6], np.array(sq, np.float64), equal_nan=True) and (o[:, 7] == 9.0).all()
    assert (o[:, 8] == h[0]).all()
    flags = (h < 0) + 2 * (h == h) + 4 * (h != 1) + 8 * np.isnan(h)
    assert (o[:, 9] == flags).all()
    s = np.array([r16(r16(v + 1) * v) for v in h])
    assert np.array_equal(o[ok, 10], s[ok])
    assert np.array_equal(o[:, 11], o[:, 0], equal_nan=True)
    assert (o[ok, 12] == np.maximum(o[ok, 0], 3.25)).all() and o[3, 12] == 3.25   # __hmax(NaN, x) = x
    assert (o[:, 13] == 3.0).all() and (o[:, 15] == -7.0).all()
    assert np.array_equal(o[:, 14], o[:, 0] - 3.25, equal_nan=True)


@pytest.mark.emulate
def test_race_check_tells_neighbouring_halves_apart():
    x = np.arange(64, dtype=np.float16)
    y = np.zeros(64, np.float16)
    kern = Kernel("test", "half_smem", Schedule("test"), (), "", ())

    def run(clash: int) -> None:
        p = Plan(kern, Problem((("n", 64),)), (Launch("half_smem", (1, 1, 1), (64, 1, 1), ("x", "y", "clash")),),
                 scalars=(Scalar("clash", "int", clash),))
        execute(p, SOURCE, {"x": x, "y": y}, check=True, order="random")
    run(0)
    assert (y == x[::-1]).all()
    with pytest.raises(EmulationError, match=r"race on s\[0\]"):
        run(1)


@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_half_kernels_compile_with_nvrtc(arch):
    from kernelgen.compile import compile_cuda
    res = compile_cuda(SOURCE, arch, "half_kernels")
    assert res.cubin[:4] == b"\x7fELF"
