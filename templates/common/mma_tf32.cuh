// ---- kernelgen tensor-core pieces for fp32 data: TF32 rounding and mma.sync m16n8k8 (tf32) ----
// Included after common/mma.cuh (kg_mma_gather under KERNELGEN_EMULATE). On the GPU each function is one PTX
// instruction; under KERNELGEN_EMULATE the same operation in plain CUDA C++, as in common/mma.cuh.
//
// Fragment layouts, from the PTX ISA (g = lane / 4, t = lane % 4), one 32-bit value a register:
//   A (16x8, row-major, 4 regs): a[0] = A[g][t]  a[1] = A[g+8][t]  a[2] = A[g][t+4]  a[3] = A[g+8][t+4]
//   B (8x8, "col", 2 regs):      b[0] = B[t][g]  b[1] = B[t+4][g]
//   C/D: as m16n8k16's (d[0] = D[g][2t], d[1] = D[g][2t+1], d[2] = D[g+8][2t], d[3] = D[g+8][2t+1])
// ldmatrix (.b16, not .trans) of 8 rows of 16 bytes gives lane l the 4 bytes at row l/4, bytes 4(l%4): for rows of
// four fp32 values that is A's or a [columns][k] B's fragment register above.
#ifndef KERNELGEN_MMA_TF32
#define KERNELGEN_MMA_TF32

// x rounded to TF32 (10 fraction bits, to nearest, ties away from zero: cvt.rna.tf32.f32's result for finite x), as
// its fp32 bits: half a TF32 ulp added to the magnitude's bits and the 13 low bits cleared (sign and magnitude: a carry
// rounds the magnitude up, into the exponent where it must; the largest finite values round to Inf, as cvt.rna's do).
// On the GPU two integer instructions without cvt.rna's Inf/NaN test: ptxas expands cvt.rna.tf32.f32 (sm_80, sm_90)
// into a compare, a select and this add and mask, which left 3xTF32 attention issue-bound (672 FSETP beside 384
// HMMA a tile). Inf stays Inf and a quiet NaN a NaN there; the emulator keeps the test (both as cvt.rna).
__device__ __forceinline__ unsigned kg_tf32(float x) {
  const unsigned bits = __float_as_uint(x);
#if defined(KERNELGEN_EMULATE)
  if ((bits & 0x7f800000u) == 0x7f800000u) return bits;   // Inf and NaN as they are
#endif
  return (bits + 0x1000u) & 0xffffe000u;
}

// The same rounding by floating-point arithmetic (Veltkamp's split at 13 bits: c = 8193 x, hi = c - (c - x), each step
// rounded, none contracted): TF32's nearest value for |x| < 2^114 (ties may go either way), by three instructions on
// the FMA pipes instead of kg_tf32's two on the integer ALU, for kernels whose ALU is the busier (attention's splits).
__device__ __forceinline__ unsigned kg_tf32_fma(float x) {
  const float c = __fmul_rn(x, 8193.0f);
  return __float_as_uint(__fsub_rn(c, __fsub_rn(c, x)));
}

#if defined(KERNELGEN_EMULATE)
// D += A * B for the lane's four D elements: a lane gathers A rows g, g+8 from lanes 4g..4g+3 and B columns 2t,
// 2t+1 from lanes 4(2t)+j, 4(2t+1)+j. The operands' 13 low bits are dropped, as the tensor cores read TF32; the
// products are exact in fp32 and summed in k order.
__device__ __forceinline__ void kg_mma_m16n8k8_tf32_emulated(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  unsigned ra[4][4], rb[2][4][2];
  kg_mma_gather(a, b, ra, rb);
  for (int row = 0; row < 2; ++row) {       // row g, then g + 8
    for (int c = 0; c < 2; ++c) {           // column 2t + c
      float acc = d[2 * row + c];
      for (int k = 0; k < 8; ++k) {
        const unsigned ar = ra[k % 4][row + 2 * (k / 4)] & 0xffffe000u, br = rb[c][k % 4][k / 4] & 0xffffe000u;
        acc += __uint_as_float(ar) * __uint_as_float(br);
      }
      d[2 * row + c] = acc;
    }
  }
}
#endif  // KERNELGEN_EMULATE

// d += a * b for one m16n8k8 tile of TF32 values (their fp32 bits, rounded by kg_tf32), fp32 accumulators.
__device__ __forceinline__ void kg_mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(KERNELGEN_EMULATE)
  kg_mma_m16n8k8_tf32_emulated(d, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 { %0,%1,%2,%3}, { %4,%5,%6,%7}, { %8,%9}, "
               "{ %0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();  // no m16n8k8 tf32 before sm_80; kernelgen's legality checks refuse those archs first
#endif
}
#endif  // KERNELGEN_MMA_TF32
// ---- end of mma tf32 ----
