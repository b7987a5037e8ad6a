// kernelgen CPU emulator, check mode: bounds of global and shared accesses, shared-memory races.
//
// Part of runner.cpp's translation unit (included inside its anonymous namespace, after the state it
// reads): check builds compile kernels with g++ -fsanitize=thread and no TSan runtime, so every
// memory access calls one of the __tsan_* hooks at the end of runner.cpp, which land in
// check_access() here.
//
// Bounds: an access in shared memory must fall in a slot (or the dynamic shared memory); one in the
// guard bands around the shared arena is a shared access out of bounds. Any other access must fall in
// a buffer of the launch, the thread's own stack or the library's static data; anything else (a red
// zone, the heap, another library, an unmapped address) is a global access out of bounds, reported
// against the nearest buffer before it happens. Which buffer a pointer came from is not tracked: an
// index that lands inside another buffer of the arena goes unreported.
//
// Races: a shadow record per 2-byte shared unit (KG_SHADOW_GRAIN) keeps the last write (or the atomics) and up to two
// readers (plus a summary of the rest) of the current barrier phase. An access by another thread
// conflicts unless a __syncwarp of every live lane of the warp happened in between, i.e. both threads
// are in one warp and the warp's epoch moved on. Shuffles and votes do not count: the CUDA programming
// guide orders memory among the lanes of a warp only at __syncwarp (and block barriers); a shuffle
// synchronises execution, not memory. An ldmatrix row read (mma.cuh's emulated ldmatrix, through
// kg_emu_ldmatrix_read) counts as a read by the lane that supplied the row's address, not by the lane
// that receives the value: on the GPU the warp fetches the rows its lanes address.
// Atomics never conflict with atomics. Bytes that a cp.async copy has yet to land in are marked with
// their issuing thread (async_owner); any access to them is reported. The grain is 2 bytes, not 4, because neighbouring threads
// storing neighbouring __half values is common and no race; single bytes are still tracked per pair.
// ---- check mode: shadow state of each shared word -------------------------------------------------
constexpr size_t KG_SHADOW_GRAIN = 2;
struct Shadow {
  uint32_t wphase, wepoch, rphase, e1, e2, erest;
  uint16_t wtid, wother, r1, r2, rtid;
  uint8_t watomic, wmulti, has_r2, has_rest, rest_mixed;
  int16_t rest_warp;
};
Shadow* shadow = nullptr;

int as_thread = -1;                   // >= 0: the thread the current access counts as (an ldmatrix row's lane)
inline int me_linear() { return as_thread >= 0 ? as_thread : cur->linear; }
inline uint32_t my_epoch() { return warp_epoch[cur->warp]; }
// Is the recorded access by `tid` at warp epoch `e` unordered with the current thread's access?
inline bool unordered(int tid, uint32_t e) {
  return tid != me_linear() && !(tid / 32 == cur->warp && my_epoch() > e);
}

// Name the shared array holding byte `off` (negative: below the arena, in its guard band): the nearest
// slot at or below it, else dynamic shared memory.
void shared_name(size_t off, KgError* err) {
  const Slot* best = nullptr;
  if ((int64_t)off >= 0 && off >= L->shared_bytes) {   // below 0 (a guard band): the dynamic shared memory
    for (const Slot& s : slots)
      if (s.lo <= off && (!best || s.lo > best->lo)) best = &s;
    for (int i = 0; i < nfile_slots && i < MAX_FILE_SLOTS; ++i)
      if (file_slots[i].lo <= off && (!best || file_slots[i].lo > best->lo)) best = &file_slots[i];
  }
  snprintf(err->name, sizeof err->name, "%s", best ? best->name : "extern __shared__");
  err->offset = (int64_t)(off - (best ? best->lo : 0));
  err->elem = best ? (int32_t)best->elem : 1;
  err->region = -1;
}

[[noreturn]] void race(size_t word, int access, int other, int other_access) {
  KgError* err = record(E_RACE, me_linear());
  if (err) {
    err->access = access;
    err->other_access = other_access;
    set_thread(err->other_thread, other);
    err->addr = (uint64_t)(uintptr_t)(smem + word * KG_SHADOW_GRAIN);
    shared_name(word * KG_SHADOW_GRAIN, err);
    err->size = (int32_t)KG_SHADOW_GRAIN;
  }
  fiber_fail();
}

void shared_word(size_t w, int access) {
  Shadow& s = shadow[w];
  const int me = me_linear();
  const uint32_t e = my_epoch();
  // against the last write (or the atomics) of this phase
  if (s.wphase == phase && !(access == A_ATOMIC && s.watomic)) {
    if (s.wmulti) race(w, access, s.wtid == me ? s.wother : s.wtid, A_ATOMIC);
    if (unordered(s.wtid, s.wepoch)) race(w, access, s.wtid, s.watomic ? A_ATOMIC : A_WRITE);
  }
  if (access == A_READ) {
    if (s.rphase != phase) {
      s.rphase = phase; s.r1 = me; s.e1 = e; s.has_r2 = 0; s.has_rest = 0;
    } else if (s.r1 == me) {
      s.e1 = e;
    } else if (!s.has_r2 || s.r2 == me) {
      s.has_r2 = 1; s.r2 = me; s.e2 = e;
    } else if (!s.has_rest) {
      s.has_rest = 1; s.rtid = me; s.rest_warp = cur->warp; s.erest = e; s.rest_mixed = 0;
    } else {
      if (s.rest_warp != cur->warp) s.rest_mixed = 1;
      s.erest = std::max(s.erest, e);
    }
    return;
  }
  // a write or an atomic: against the reads of this phase
  if (s.rphase == phase) {
    if (unordered(s.r1, s.e1)) race(w, access, s.r1, A_READ);
    if (s.has_r2 && unordered(s.r2, s.e2)) race(w, access, s.r2, A_READ);
    if (s.has_rest && (s.rest_mixed || s.rest_warp != cur->warp || e <= s.erest)) race(w, access, s.rtid, A_READ);
    s.rphase = 0;
  }
  if (access == A_ATOMIC && s.wphase == phase && s.watomic) {
    if (s.wtid != me) { s.wmulti = 1; s.wother = me; }
    return;
  }
  s.wphase = phase; s.wtid = me; s.wepoch = e; s.watomic = access == A_ATOMIC; s.wmulti = 0;
}

[[noreturn]] void oob_shared(size_t off, unsigned size, int access) {
  KgError* err = record(E_SHARED_OOB, cur->linear);
  if (err) {
    err->access = access;
    err->size = (int32_t)size;
    err->addr = (uint64_t)(uintptr_t)(smem + off);
    shared_name(off, err);
  }
  fiber_fail();
}

// An access to bytes that a cp.async copy has yet to land in (its group not waited for yet).
[[noreturn]] void async_pending(size_t word, int access, int issuer) {
  KgError* err = record(E_ASYNC, cur->linear);
  if (err) {
    err->access = access;
    set_thread(err->other_thread, issuer);
    err->addr = (uint64_t)(uintptr_t)(smem + word * KG_SHADOW_GRAIN);
    shared_name(word * KG_SHADOW_GRAIN, err);
    err->size = (int32_t)KG_SHADOW_GRAIN;
  }
  fiber_fail();
}

void shared_access(size_t off, unsigned size, int access) {
  if (async_marked)
    for (size_t w = off / KG_SHADOW_GRAIN; w <= (off + size - 1) / KG_SHADOW_GRAIN; ++w)
      if (async_owner[w]) async_pending(w, access, async_owner[w] - 1);
  bool ok = off + size <= L->shared_bytes;
  for (size_t i = 0; !ok && i < slots.size(); ++i) ok = slots[i].lo <= off && off + size <= slots[i].hi;
  for (int i = 0; !ok && i < nfile_slots && i < MAX_FILE_SLOTS; ++i) ok = file_slots[i].lo <= off && off + size <= file_slots[i].hi;
  if (!ok) oob_shared(off, size, access);
  for (size_t w = off / KG_SHADOW_GRAIN; w <= (off + size - 1) / KG_SHADOW_GRAIN; ++w) shared_word(w, access);
}

// ---- global accesses ------------------------------------------------------------------------------
// Where an instrumented access may land outside shared memory and the launch's buffers: the running
// fiber's own stack (the thread's locals), and this library's own static data (__device__ and
// __constant__ variables, threadIdx & co.). The library's loaded segments, except its code, are
// found once (dl_iterate_phdr); every other address is an out-of-bounds global access, reported
// before it happens, however far from the buffers it lands (the heap, another library, unmapped).
constexpr int MAX_IMAGE_SEGS = 16;
struct Seg { uintptr_t lo, hi; };
Seg image_segs[MAX_IMAGE_SEGS];
int nimage_segs = -1;                 // -1: not looked up yet

int image_segments(struct dl_phdr_info* info, size_t, void*) {
  const uintptr_t me = (uintptr_t)&kg_threadIdx;
  bool mine = false;
  for (int k = 0; k < info->dlpi_phnum && !mine; ++k) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[k];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    mine = ph.p_type == PT_LOAD && me - lo < ph.p_memsz;
  }
  if (!mine) return 0;
  nimage_segs = 0;
  for (int k = 0; k < info->dlpi_phnum; ++k) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[k];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) || nimage_segs == MAX_IMAGE_SEGS) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    image_segs[nimage_segs++] = Seg{lo, lo + ph.p_memsz};
  }
  return 1;
}

void find_image() {
  nimage_segs = 0;
  dl_iterate_phdr(image_segments, nullptr);
}

// The index of the last buffer of the launch that starts at or below a (-1: none does).
inline int64_t region_below(uintptr_t a) {
  const KgRegion* r = L->regions;
  int64_t lo = 0, hi = L->nregions;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (r[mid].lo <= a) lo = mid + 1; else hi = mid;
  }
  return lo - 1;
}

// Report a global access of [a, a + size) that no buffer of the launch holds, against the nearest buffer.
[[noreturn]] void oob_global(uintptr_t a, unsigned size, int access) {
  const KgRegion* r = L->regions;
  const int64_t n = L->nregions;
  const int64_t i = region_below(a);
  int64_t pick = i < 0 ? 0 : i;
  if (i >= 0 && i + 1 < n && a >= r[i].hi) {   // between two buffers: the nearer one
    const uint64_t after = a + size <= r[i + 1].lo ? r[i + 1].lo - (a + size) : 0;
    if (after < a - r[i].hi) pick = i + 1;
  }
  KgError* err = record(E_GLOBAL_OOB, cur->linear);
  if (err) {
    err->access = access;
    err->size = (int32_t)size;
    err->addr = a;
    err->region = n > 0 ? (int32_t)pick : -1;
    err->offset = n > 0 ? (int64_t)(a - r[pick].lo) : 0;
  }
  fiber_fail();
}

inline void global_access(uintptr_t a, unsigned size, int access) {
  const int64_t i = region_below(a);
  if (i >= 0 && a + size <= L->regions[i].hi) return;
  oob_global(a, size, access);
}

// Neither shared memory, the arena, nor the thread's stack: the library's static data, or out of bounds.
__attribute__((noinline)) void stray_access(uintptr_t a, unsigned size, int access) {
  if (a - ((uintptr_t)smem - SMEM_GUARD) < SMEM_ARENA + 2 * SMEM_GUARD)
    oob_shared((size_t)(a - (uintptr_t)smem), size, access);     // in a guard band around shared memory
  for (int k = 0; k < nimage_segs; ++k)
    if (a - image_segs[k].lo < image_segs[k].hi - image_segs[k].lo && a + size <= image_segs[k].hi) return;
  oob_global(a, size, access);
}

inline void check_access(const void* p, unsigned size, int access, bool aligned) {
  if (!L || !cur) return;
  uintptr_t a = (uintptr_t)p;
  if (a - cur_stack_lo < stacks_size) return;         // the thread's own locals: the most frequent case
  bool in_smem = a - (uintptr_t)smem < SMEM_ARENA;
  bool in_arena = a - L->arena < L->arena_size;
  if (!in_smem && !in_arena) return stray_access(a, size, access);
  if (aligned && size >= 4 && (a & (size - 1))) {     // the GPU faults on misaligned 4/8/16-byte accesses
    KgError* err = record(E_MISALIGNED, cur->linear);
    if (err) {
      err->access = access;
      err->size = (int32_t)size;
      err->addr = a;
      err->region = -1;
    }
    fiber_fail();
  }
  if (in_smem) shared_access(a - (uintptr_t)smem, size, access);
  else global_access(a, size, access);
}
