// kernelgen CPU emulator, check mode: bounds of global and shared accesses, shared-memory races.
//
// Part of runner.cpp's translation unit (included inside its anonymous namespace, after the state it
// reads): check builds compile kernels with g++ -fsanitize=thread and no TSan runtime, so every
// memory access calls one of the __tsan_* hooks at the end of runner.cpp, which land in
// check_access() here.
//
// Races: a shadow record per 2-byte shared unit (KG_SHADOW_GRAIN) keeps the last write (or the atomics) and up to two
// readers (plus a summary of the rest) of the current barrier phase. An access by another thread
// conflicts unless a warp-wide synchronisation (a shuffle, vote or __syncwarp of every live lane of
// the warp) happened in between, i.e. both threads are in one warp and the warp's epoch moved on.
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

inline uint32_t my_epoch() { return warp_epoch[cur->warp]; }
// Is the recorded access by `tid` at warp epoch `e` unordered with the current thread's access?
inline bool unordered(int tid, uint32_t e) {
  return tid != cur->linear && !(tid / 32 == cur->warp && my_epoch() > e);
}

// Name the shared array holding byte `off`: the nearest slot at or below it, else dynamic shared memory.
void shared_name(size_t off, KgError* err) {
  const Slot* best = nullptr;
  if (off >= L->shared_bytes)
    for (const Slot& s : slots)
      if (s.lo <= off && (!best || s.lo > best->lo)) best = &s;
    for (int i = 0; i < nfile_slots && i < MAX_FILE_SLOTS; ++i)
      if (file_slots[i].lo <= off && (!best || file_slots[i].lo > best->lo)) best = &file_slots[i];
  snprintf(err->name, sizeof err->name, "%s", best ? best->name : "extern __shared__");
  err->offset = (int64_t)(off - (best ? best->lo : 0));
  err->elem = best ? (int32_t)best->elem : 1;
  err->region = -1;
}

[[noreturn]] void race(size_t word, int access, int other, int other_access) {
  KgError* err = record(E_RACE, cur->linear);
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
  const int me = cur->linear;
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

void global_access(uintptr_t a, unsigned size, int access) {
  const KgRegion* r = L->regions;
  const int64_t n = L->nregions;
  // the last region that starts at or below a
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (r[mid].lo <= a) lo = mid + 1; else hi = mid;
  }
  int64_t i = lo - 1;
  if (i >= 0 && a + size <= r[i].hi) return;
  // out of bounds: name the nearer of the region before and the region after
  int64_t pick = (i < 0) ? 0 : (i + 1 < n && r[i + 1].lo - (a + size) < a - r[i].hi) ? i + 1 : i;
  KgError* err = record(E_GLOBAL_OOB, cur->linear);
  if (err) {
    err->access = access;
    err->size = (int32_t)size;
    err->addr = a;
    err->region = (int32_t)pick;
    err->offset = (int64_t)a - (int64_t)r[pick].lo;
  }
  fiber_fail();
}

inline void check_access(const void* p, unsigned size, int access, bool aligned) {
  if (!L || !cur) return;
  uintptr_t a = (uintptr_t)p;
  bool in_smem = a - (uintptr_t)smem < SMEM_ARENA;
  bool in_arena = a - L->arena < L->arena_size;
  if (!in_smem && !in_arena) return;                  // the fiber's stack, the library's own data
  if (aligned && size >= 8 && (a & (size - 1))) {     // the GPU faults on misaligned 8/16-byte accesses
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

