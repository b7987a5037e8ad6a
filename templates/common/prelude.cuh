// ---- kernelgen prelude: portable helpers (the CPU emulator defines KERNELGEN_EMULATE) ----
#ifndef KERNELGEN_PRELUDE
#define KERNELGEN_PRELUDE
#define KG_FULL_MASK 0xffffffffu
#ifdef KERNELGEN_EMULATE
#define KG_NEG_INF (-__builtin_huge_valf())
#else
#define KG_NEG_INF __int_as_float(0xff800000)
#endif

// 16-byte asynchronous global->shared copy (cp.async, sm_80+); a plain copy elsewhere. The CPU
// emulator lands it only when its group is waited for (kg_emu_cp_async in its runner).
__device__ __forceinline__ void kg_cp_async16(void* smem, const void* gmem) {
#if defined(KERNELGEN_EMULATE)
  kg_emu_cp_async(smem, gmem, 16);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(gmem));
#else
  *reinterpret_cast<float4*>(smem) = *reinterpret_cast<const float4*>(gmem);
#endif
}
// The same with a source size: `full` copies the 16 bytes, else none is read (gmem may be any valid
// address) and the 16 land as zeros. One unpredicated instruction for a bounds-checked copy: a cp.async
// under a branch or predicate can lose the coalescing of a warp's copies (NVIDIA forum, cp.async
// "excessive wavefronts").
__device__ __forceinline__ void kg_cp_async16_zfill(void* smem, const void* gmem, bool full) {
#if defined(KERNELGEN_EMULATE)
  kg_emu_cp_async_zfill(smem, gmem, 16, full ? 16 : 0);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(gmem), "r"(full ? 16 : 0));
#else
  *reinterpret_cast<float4*>(smem) = full ? *reinterpret_cast<const float4*>(gmem) : make_float4(0.f, 0.f, 0.f, 0.f);
#endif
}
// 4-byte variant (cp.async.ca), for copies that cannot be 16-byte aligned.
__device__ __forceinline__ void kg_cp_async4(void* smem, const void* gmem) {
#if defined(KERNELGEN_EMULATE)
  kg_emu_cp_async(smem, gmem, 4);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(s), "l"(gmem));
#else
  *reinterpret_cast<float*>(smem) = *reinterpret_cast<const float*>(gmem);
#endif
}
__device__ __forceinline__ void kg_cp_async_commit() {
#if defined(KERNELGEN_EMULATE)
  kg_emu_cp_async_commit();
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ __forceinline__ void kg_cp_async_wait() {
#if defined(KERNELGEN_EMULATE)
  kg_emu_cp_async_wait(N);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N));
#endif
}
// A load that streams past L1 (evict-first), for data read once, so it does not evict data that
// is re-read (e.g. GEMV's x, which every warp reads again).
template <typename T>
__device__ __forceinline__ T kg_ldcs(const T* p) {
#if defined(KERNELGEN_EMULATE)
  return *p;
#else
  return __ldcs(p);
#endif
}
#endif  // KERNELGEN_PRELUDE
// ---- end of prelude ----
