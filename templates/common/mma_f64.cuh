// ---- kernelgen tensor-core pieces for fp32 data on the fp64 tensor cores (DMMA) ----
// Included after common/mma.cuh (kg_mma_gather under KERNELGEN_EMULATE). fp32 values widened to fp64 are exact and
// their products too (24 + 24 significant bits < 53), so D = A * B + C sums exact products in fp64.
//
// Fragment layouts of mma.sync m16n8k8 .f64, from the PTX ISA (g = lane / 4, t = lane % 4), one fp64 value a
// register pair: the same places as tf32's m16n8k8 (common/mma_tf32.cuh), so the same shared loads fill both:
//   A (16x8, 4 values):  a[0] = A[g][t]  a[1] = A[g+8][t]  a[2] = A[g][t+4]  a[3] = A[g+8][t+4]
//   B (8x8, 2 values):   b[0] = B[t][g]  b[1] = B[t+4][g]
//   C/D (16x8, 4):       d[0] = D[g][2t] d[1] = D[g][2t+1] d[2] = D[g+8][2t] d[3] = D[g+8][2t+1]
// sm_90 has the m16n8k8 shape; sm_80 only m8n8k4 (A 8x4: a[0] = A[g][t]; B 4x8: b[0] = B[t][g]; D 8x8: d[0..1] =
// D[g][2t..2t+1]), four of which make one m16n8k8 from the same registers.
#ifndef KERNELGEN_MMA_F64
#define KERNELGEN_MMA_F64

#if defined(KERNELGEN_EMULATE)
// D += A * B for the lane's four D elements, gathered as tf32's m16n8k8 (common/mma.cuh's kg_mma_gather), the
// products summed in fp64 in k order.
__device__ __forceinline__ void kg_mma_m16n8k8_f64_emulated(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
  double ra[4][4], rb[2][4][2];
  kg_mma_gather(a, b, ra, rb);
  for (int row = 0; row < 2; ++row) {       // row g, then g + 8
    for (int c = 0; c < 2; ++c) {           // column 2t + c
      double acc = d[2 * row + c];
      for (int k = 0; k < 8; ++k) acc = fma(ra[k % 4][row + 2 * (k / 4)], rb[c][k % 4][k / 4], acc);
      d[2 * row + c] = acc;
    }
  }
}
#endif  // KERNELGEN_EMULATE

// d += a * b for one m16n8k8 tile of fp64 values, fp64 accumulators.
__device__ __forceinline__ void kg_mma_m16n8k8_f64(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
#if defined(KERNELGEN_EMULATE)
  kg_mma_m16n8k8_f64_emulated(d, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 { %0,%1,%2,%3}, { %4,%5,%6,%7}, { %8,%9}, "
               "{ %0,%1,%2,%3};\n"
               : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
               : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // rows g (d[0..1]) and g + 8 (d[2..3]), each over k 0..3 (a[row], b[0]) then k 4..7 (a[row + 2], b[1])
  #pragma unroll
  for (int row = 0; row < 2; ++row) {
    #pragma unroll
    for (int h = 0; h < 2; ++h)
      asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 { %0,%1}, { %2}, { %3}, { %0,%1};\n"
                   : "+d"(d[2 * row]), "+d"(d[2 * row + 1]) : "d"(a[row + 2 * h]), "d"(b[h]));
  }
#else
  __trap();  // no fp64 mma.sync before sm_80; kernelgen's legality checks refuse those archs first
#endif
}
#endif  // KERNELGEN_MMA_F64
// ---- end of mma f64 ----
