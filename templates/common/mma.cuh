// ---- kernelgen tensor-core pieces: mma.sync m16n8k16 and ldmatrix (the CPU emulator defines KERNELGEN_EMULATE) ----
// On the GPU each function is one PTX instruction. Under KERNELGEN_EMULATE it is the same operation
// written in plain CUDA C++: the lanes exchange their fragments with __shfl_sync and each lane computes
// its own registers, so the emulator runs (and race-checks) the very kernel that calls these.
// All functions are warp-collective: the 32 lanes of the warp call them together (full mask).
//
// Fragment layouts, from the PTX ISA (groupID g = lane / 4, threadID_in_group t = lane % 4); a .b32
// register holds two 16-bit values, the lower-numbered column (or k) in its low half:
//   A (16x16, row-major, 4 regs): a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]
//                                 a[2] = A[g][2t+8..2t+9]  a[3] = A[g+8][2t+8..2t+9]
//   B (16x8, "col", 2 regs):      b[0] = B[2t..2t+1][g]    b[1] = B[2t+8..2t+9][g]
//   C/D (16x8, fp32, 4 floats):   d[0] = D[g][2t]  d[1] = D[g][2t+1]  d[2] = D[g+8][2t]  d[3] = D[g+8][2t+1]
//   ldmatrix m8n8 (8 rows of 8 16-bit values; lanes 8i..8i+7 give the row addresses of matrix i):
//                                 r[i] = M_i[lane/4][2(lane%4)..2(lane%4)+1]; .trans: r[i] holds
//                                 M_i[2(lane%4)][lane/4] (low) and M_i[2(lane%4)+1][lane/4] (high)
#ifndef KERNELGEN_MMA
#define KERNELGEN_MMA

#if defined(KERNELGEN_EMULATE)
__device__ __forceinline__ int kg_mma_lane() {
  return ((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) % 32;
}
// 16-bit value `h` (0 low, 1 high) of the register `r`, as a float (exact: both formats fit in fp32).
__device__ __forceinline__ float kg_mma_f16(unsigned r, int h) {
  return __half2float(__ushort_as_half((unsigned short)(r >> (16 * h))));
}
__device__ __forceinline__ float kg_mma_bf16(unsigned r, int h) {
  return __bfloat162float(__ushort_as_bfloat16((unsigned short)(r >> (16 * h))));
}

// D += A * B for the lane's four D elements. Lane 4g+j holds A rows g and g+8 at k = 2j, 2j+1 (a[0],
// a[1]) and k = 2j+8, 2j+9 (a[2], a[3]), and B column g at k = 2j, 2j+1 (b[0]) and 2j+8, 2j+9 (b[1]):
// a lane gathers its A rows from lanes 4g..4g+3 and its B columns 2t, 2t+1 from lanes 4(2t)+j, 4(2t+1)+j.
// Products of two halves or bf16s are exact in fp32; the sums are fp32 in k order (exact for
// integer-valued data, where the hardware's unspecified summation order cannot show).
// The registers a lane's four D elements read (m16n8k16 and, in common/mma_tf32.cuh and mma_f64.cuh, m16n8k8; T is
// a register's type, unsigned or double): ra[j][i] = a[i] of lane 4g+j; rb[c][j][i] = b[i] of lane 4(2t+c)+j.
template <class T>
__device__ __forceinline__ void kg_mma_gather(const T (&a)[4], const T (&b)[2], T (&ra)[4][4], T (&rb)[2][4][2]) {
  const int lane = kg_mma_lane(), g = lane / 4, t = lane % 4;
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 4; ++i) ra[j][i] = __shfl_sync(0xffffffffu, a[i], 4 * g + j);
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 2; ++i) rb[c][j][i] = __shfl_sync(0xffffffffu, b[i], 4 * (2 * t + c) + j);
  }
}
template <bool kBf16>
__device__ __forceinline__ void kg_mma_m16n8k16_emulated(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  unsigned ra[4][4], rb[2][4][2];
  kg_mma_gather(a, b, ra, rb);
  for (int row = 0; row < 2; ++row) {       // row g, then g + 8
    for (int c = 0; c < 2; ++c) {           // column 2t + c
      float acc = d[2 * row + c];
      for (int k = 0; k < 16; ++k) {
        const int j = (k % 8) / 2, h = k % 2, hi = k / 8;
        const unsigned ar = ra[j][row + 2 * hi], br = rb[c][j][hi];
        acc += kBf16 ? kg_mma_bf16(ar, h) * kg_mma_bf16(br, h) : kg_mma_f16(ar, h) * kg_mma_f16(br, h);
      }
      d[2 * row + c] = acc;
    }
  }
}

// ldmatrix: lane l's register i comes from matrix i's row l/4 (the row address of lane 8i + l/4);
// .trans: from rows 2(l%4) and 2(l%4)+1 (lanes 8i + 2(l%4) and 8i + 2(l%4) + 1), column l/4.
// The race check counts each row read as a read by the lane that supplied the row's address
// (kg_emu_ldmatrix_read): the receiving lane's program order does not order it with that lane's writes.
template <int N, bool kTrans>
__device__ __forceinline__ void kg_ldmatrix_emulated(unsigned (&r)[N], const void* row) {
  const int lane = kg_mma_lane();
  const unsigned long long mine = reinterpret_cast<unsigned long long>(row);
  for (int i = 0; i < N; ++i) {
    if (!kTrans) {
      const int src = 8 * i + lane / 4;
      const unsigned long long p = __shfl_sync(0xffffffffu, mine, src);
      r[i] = kg_emu_ldmatrix_read(reinterpret_cast<const unsigned*>(p) + lane % 4, 4, src);
    } else {
      const int s0 = 8 * i + 2 * (lane % 4), s1 = s0 + 1;
      const unsigned long long p0 = __shfl_sync(0xffffffffu, mine, s0);
      const unsigned long long p1 = __shfl_sync(0xffffffffu, mine, s1);
      const unsigned lo = kg_emu_ldmatrix_read(reinterpret_cast<const unsigned short*>(p0) + lane / 4, 2, s0);
      const unsigned hi = kg_emu_ldmatrix_read(reinterpret_cast<const unsigned short*>(p1) + lane / 4, 2, s1);
      r[i] = lo | hi << 16;
    }
  }
}
#endif  // KERNELGEN_EMULATE

// d += a * b for one m16n8k16 tile, fp32 accumulators (layouts above).
__device__ __forceinline__ void kg_mma_m16n8k16_f16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(KERNELGEN_EMULATE)
  kg_mma_m16n8k16_emulated<false>(d, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 { %0,%1,%2,%3}, { %4,%5,%6,%7}, { %8,%9}, "
               "{ %0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();  // no m16n8k16 before sm_80; kernelgen's legality checks refuse those archs first
#endif
}

__device__ __forceinline__ void kg_mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(KERNELGEN_EMULATE)
  kg_mma_m16n8k16_emulated<true>(d, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { %0,%1,%2,%3}, { %4,%5,%6,%7}, { %8,%9}, "
               "{ %0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();
#endif
}

// ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16: `row` is this lane's row address in shared
// memory (16-byte aligned; lanes 0-7 matrix 0, 8-15 matrix 1, 16-23 matrix 2, 24-31 matrix 3; x2 uses
// lanes 0-15's addresses, x1 lanes 0-7's).
#if !defined(KERNELGEN_EMULATE) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
__device__ __forceinline__ unsigned kg_smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
#endif
__device__ __forceinline__ void kg_ldmatrix_x1(unsigned (&r)[1], const void* row) {
#if defined(KERNELGEN_EMULATE)
  kg_ldmatrix_emulated<1, false>(r, row);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 { %0}, [%1];\n"
               : "=r"(r[0]) : "r"(kg_smem_address(row)));
#else
  __trap();
#endif
}
__device__ __forceinline__ void kg_ldmatrix_x2(unsigned (&r)[2], const void* row) {
#if defined(KERNELGEN_EMULATE)
  kg_ldmatrix_emulated<2, false>(r, row);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 { %0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(kg_smem_address(row)));
#else
  __trap();
#endif
}
__device__ __forceinline__ void kg_ldmatrix_x4(unsigned (&r)[4], const void* row) {
#if defined(KERNELGEN_EMULATE)
  kg_ldmatrix_emulated<4, false>(r, row);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 { %0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kg_smem_address(row)));
#else
  __trap();
#endif
}
__device__ __forceinline__ void kg_ldmatrix_x2_trans(unsigned (&r)[2], const void* row) {
#if defined(KERNELGEN_EMULATE)
  kg_ldmatrix_emulated<2, true>(r, row);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 { %0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(kg_smem_address(row)));
#else
  __trap();
#endif
}
__device__ __forceinline__ void kg_ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
#if defined(KERNELGEN_EMULATE)
  kg_ldmatrix_emulated<4, true>(r, row);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 { %0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kg_smem_address(row)));
#else
  __trap();
#endif
}
#endif  // KERNELGEN_MMA
// ---- end of mma ----
