// ---- kernelgen Hopper pieces: TMA tile loads, transaction barriers, warpgroup MMA (sm_90a) ----
// Each function is one PTX instruction (or a try-wait loop around one). They need the hardware state
// of an sm_90a SM (the TMA unit, mbarrier transaction counts, warpgroups), so the CPU emulator refuses
// kernels that use them by name and such kernels are proven on the GPU.
#ifndef KERNELGEN_WGMMA
#define KERNELGEN_WGMMA

// A TMA descriptor (CUtensorMap, 128 bytes): encoded on the host by cuTensorMapEncodeTiled and passed
// by value as a __grid_constant__ kernel parameter, so no cuda.h is needed here.
struct __align__(64) kg_tensor_map { unsigned long long opaque[16]; };

__device__ __forceinline__ unsigned kg_smem(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarrier: `count` arrivals complete a phase; a TMA load's bytes complete its transaction count ----
__device__ __forceinline__ void kg_mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(kg_smem(bar)), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the TMA unit (the async proxy) before any copy uses them.
__device__ __forceinline__ void kg_mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void kg_mbar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(kg_smem(bar)) : "memory");
}
// One arrival that also announces `bytes` of TMA traffic the phase must wait for.
__device__ __forceinline__ void kg_mbar_expect_bytes(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(kg_smem(bar)), "r"(bytes) : "memory");
}
// Waits until the phase with parity `phase` has completed.
__device__ __forceinline__ void kg_mbar_wait(unsigned long long* bar, unsigned phase) {
  const unsigned addr = kg_smem(bar);
  unsigned done = 0;
  while (!done) {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(addr), "r"(phase) : "memory");
  }
}

// ---- TMA: a box of a 2-D tensor into shared memory; `x` is the inner (contiguous) coordinate ----
// Elements past the tensor's edge arrive as zeros, so ragged tiles need no tests on the load side.
__device__ __forceinline__ void kg_tma_load_2d(void* dst, const kg_tensor_map* map, unsigned long long* bar, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, { %3, %4 }], [%2];\n"
               :: "r"(kg_smem(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(kg_smem(bar)), "r"(x), "r"(y)
               : "memory");
}

// The same for a box of a 4-D tensor (x innermost): attention's (head_dim, seq, heads, batch) with any strides.
__device__ __forceinline__ void kg_tma_load_4d(void* dst, const kg_tensor_map* map, unsigned long long* bar, int x, int y,
                                               int z, int w) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, { %3, %4, %5, %6 }], [%2];\n"
               :: "r"(kg_smem(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(kg_smem(bar)), "r"(x), "r"(y),
                  "r"(z), "r"(w)
               : "memory");
}

// ---- thread-block clusters: a copy multicast to every block of the cluster, barriers of a peer ----
__device__ __forceinline__ unsigned kg_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// All (non-exited) threads of the cluster: what one block set up, the others may now use.
__device__ __forceinline__ void kg_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// The TMA load of kg_tma_load_2d written to the same offset of every block in `mask`, each of whose
// barriers (same offset) is told of the bytes.
__device__ __forceinline__ void kg_tma_load_2d_multicast(void* dst, const kg_tensor_map* map, unsigned long long* bar,
                                                         int x, int y, unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, { %3, %4 }], [%2], %5;\n"
               :: "r"(kg_smem(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(kg_smem(bar)), "r"(x), "r"(y),
                  "h"(mask)
               : "memory");
}
// An arrival on the barrier at the same offset in block `rank` of the cluster (this block's own too).
__device__ __forceinline__ void kg_mbar_arrive_cluster(unsigned long long* bar, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(kg_smem(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" :: "r"(remote) : "memory");
}

// ---- wgmma: a warpgroup (4 warps) multiplies 64xN of A by NxK=16 of B, both read from shared memory ----
// A shared-memory matrix descriptor: start address, leading and stride byte offsets (all >> 4) and
// the 128-byte swizzle (mode 1 in bits 62-63), the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B.
__device__ __forceinline__ unsigned long long kg_wgmma_desc(const void* p, unsigned lbo, unsigned sbo) {
  return static_cast<unsigned long long>((kg_smem(p) & 0x3FFFF) >> 4) | (static_cast<unsigned long long>(lbo >> 4) << 16) |
         (static_cast<unsigned long long>(sbo >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void kg_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void kg_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void kg_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

// Named barriers (ids 1-15; __syncthreads is 0): `threads` of the block meet at barrier `id`, those that
// sync waiting for the rest, those that arrive going on. Warpgroups take turns through them (pingpong).
__device__ __forceinline__ void kg_bar_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void kg_bar_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}

// Warpgroup register reallocation: the producer gives registers back, the consumers take them.
template <int R>
__device__ __forceinline__ void kg_setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(R)); }
template <int R>
__device__ __forceinline__ void kg_setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(R)); }

#endif  // KERNELGEN_WGMMA
