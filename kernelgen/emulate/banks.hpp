// kernelgen CPU emulator, access statistics: shared-memory bank conflicts and global-memory sectors per warp request.
//
// Part of runner.cpp's translation unit (after check.hpp), active only in check builds once Python
// called kg_banks_enable(1). A warp request is the lanes of one warp executing the same access
// site (the hook's return address, i.e. one load or store instruction of the compiled kernel) for
// the same time in the current barrier phase: lane l's k-th execution of site s joins lane m's k-th.
// Fibers run one after another, so a phase's requests are complete when the next phase starts;
// they are scored then (and when Python reads the counts).
//
// Shared memory: bank = (byte address / 4) % 32; lanes reading the same 4-byte word are a broadcast;
// 8- and 16-byte accesses run in 2 phases of 16 lanes and 4 phases of 8 lanes, half as many for a load
// whose lanes pair up on one address (shared_wavefronts). A request costs, per phase, the largest number
// of distinct words any one bank holds (wavefronts); "ways" is that number, 1 without conflicts.
// Global memory: the number of distinct 32-byte sectors the request touches. A float4 is one 16-byte
// access because check builds keep aggregates whole and vectorise nothing (-fno-tree-sra,
// -fno-tree-vectorize in build.py), so the accesses are the source's; the scalar shared accesses that
// NVCC's load-store vectoriser merges into LDS.64/128 and STS.64/128 are merged here the same way
// (the vectoriser section below).
#include <string>
#include <unordered_map>
#include <unordered_set>

struct KgBankStat {           // launch.py's _BankStat mirrors this layout
  int32_t space, access;      // space 0 shared, 1 global; access A_READ or A_WRITE
  int32_t region, worst;      // global: the arena region; worst wavefronts (shared, per phase) or sectors (global)
  uint64_t requests, units, phases;   // units: wavefronts (shared) or sectors (global); phases: active phases
  uint64_t lo, hi;            // shared: the byte offsets touched
  uint64_t widths[5];         // requests of 1, 2, 4, 8 and 16 bytes a lane
  char name[64];
};

namespace {

bool banks_on = false;
uint32_t banks_phase = 0;
struct BankKey {              // one warp request: an instruction's k-th execution in the phase by one warp
  uintptr_t site;
  uint32_t warp, occurrence;
  bool operator==(const BankKey& o) const { return site == o.site && warp == o.warp && occurrence == o.occurrence; }
};
struct BankKeyHash {
  size_t operator()(const BankKey& k) const {
    return std::hash<uint64_t>()(k.site * 0x9E3779B97F4A7C15ull ^ ((uint64_t)k.warp << 32 | k.occurrence));
  }
};
struct BankGroup {
  uint64_t addr[32];          // shared: byte offset in smem; global: the address
  unsigned mask;
  uint32_t stat;              // index in bank_stats, resolved by the first lane (while the launch's slots exist)
  uint8_t size, space, access;
  bool plain;                 // shared, a plain load or store NVCC may merge (not a cp.async)
  BankKey next;               // the request that continues each lane's run of addresses (bank_link)
  unsigned next_mask;         // lanes whose next address starts `next`
  bool next_bad;              // a lane's next address starts another request
};
std::unordered_map<uint64_t, uint32_t> bank_occurrences;   // (site, thread) -> executions this phase
std::unordered_map<BankKey, BankGroup, BankKeyHash> bank_groups;
std::vector<KgBankStat> bank_stats;          // counted as they come: global memory, cp.async stores
std::vector<KgBankStat> bank_out;            // bank_stats with the plain shared accesses, vectorised (kg_banks_count)

// The wavefronts of one shared-memory request, and how many of its phases had an active lane. A
// wavefront returns at most 128 bytes, one 4-byte register per lane, so a 4-byte request is one phase of
// 32 lanes, an 8-byte one 2 phases of 16 lanes, a 16-byte one 4 phases of 8. A load whose lanes pair up
// (every active lane reads the address of lane^1, or every one that of lane^2; a uniform address is both)
// returns two lanes' data in one register slot and needs half the phases: NVIDIA's rule for Volta and
// later (the `.U` hint of LDS, "forums.developer.nvidia.com/t/unexpected-shared-memory-bank-conflict/77228").
// A phase costs the largest number of distinct 4-byte words any one bank holds among its lanes.
// Checked against Nsight Compute on the H100 (bench/banks_ncu.py): SGEMM ladder steps 2-9, where a
// uniform LDS.128 costs 2 wavefronts, a paired one whose quarters differ 2 as well, an unpaired one 4.
static int phase_cost(const BankGroup& g, int lo, int hi) {
  uint64_t w[32 * 4];
  int n = 0;
  for (int l = lo; l < hi; ++l) {
    if (!(g.mask >> l & 1)) continue;
    for (uint64_t a = g.addr[l] / 4; a <= (g.addr[l] + g.size - 1) / 4 && n < 128; ++a) w[n++] = a;
  }
  std::sort(w, w + n);
  n = (int)(std::unique(w, w + n) - w);
  int per_bank[32] = {0}, most = 0;
  for (int i = 0; i < n; ++i) most = std::max(most, ++per_bank[w[i] % 32]);
  return most;                                     // 0: no active lane
}

// Does every active lane share its address with lane^1 (or every one with lane^2), where that lane is active?
static bool lanes_pair(const BankGroup& g) {
  for (int x : {1, 2}) {
    bool all = true;
    for (int l = 0; l < 32 && all; ++l)
      all = !(g.mask >> l & 1) || !(g.mask >> (l ^ x) & 1) || g.addr[l] == g.addr[l ^ x];
    if (all) return true;
  }
  return false;
}

void shared_wavefronts(const BankGroup& g, uint64_t* waves, uint64_t* phases, int* worst) {
  int nphase = g.size <= 4 ? 1 : g.size <= 8 ? 2 : 4;
  if (nphase > 1 && g.access == A_READ && lanes_pair(g)) nphase /= 2;
  const int per = 32 / nphase;
  *waves = *phases = 0;
  *worst = 0;
  for (int p = 0; p < nphase; ++p) {
    const int cost = phase_cost(g, p * per, (p + 1) * per);
    if (!cost) continue;
    *waves += cost;
    *phases += 1;
    *worst = std::max(*worst, cost);
  }
}

int global_sectors(const BankGroup& g) {
  uint64_t sectors[32 * 2];
  int n = 0;
  for (int l = 0; l < 32; ++l) {
    if (!(g.mask >> l & 1)) continue;
    for (uint64_t s = g.addr[l] / 32; s <= (g.addr[l] + g.size - 1) / 32 && n < 64; ++s) sectors[n++] = s;
  }
  std::sort(sectors, sectors + n);
  return (int)(std::unique(sectors, sectors + n) - sectors);
}

// Which arena region holds `a` (the one starting at or below it), -1 if none.
int32_t global_region(uintptr_t a) {
  int64_t lo = 0, hi = L ? L->nregions : 0;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (L->regions[mid].lo <= a) lo = mid + 1; else hi = mid;
  }
  return (int32_t)(lo - 1);
}

uint32_t bank_stat(int space, int access, int32_t region, const char* name) {
  for (size_t i = 0; i < bank_stats.size(); ++i) {
    const KgBankStat& s = bank_stats[i];
    if (s.space == space && s.access == access && s.region == region && !strcmp(s.name, name)) return (uint32_t)i;
  }
  KgBankStat s{};
  s.space = space; s.access = access; s.region = region;
  snprintf(s.name, sizeof s.name, "%s", name);
  bank_stats.push_back(s);
  return (uint32_t)(bank_stats.size() - 1);
}

// `requests` of `bytes` a lane, costing `units` in all over `phases`, the worst of them `worst`.
void bank_add(KgBankStat& s, unsigned bytes, uint64_t requests, uint64_t units, uint64_t phases, int32_t worst) {
  s.requests += requests; s.units += units; s.phases += phases; s.worst = std::max(s.worst, worst);
  s.widths[std::min(4, __builtin_ctz(bytes ? bytes : 1))] += requests;
}

#include "vectorize.hpp"   // NVCC's merging of scalar shared accesses: bank_link, vec_execution, vec_merged

// Score every request gathered so far and forget them: called when a new phase starts.
void bank_flush() {
  bank_link();
  for (auto& kv : bank_groups) {
    const BankGroup& g = kv.second;
    if (g.plain) {
      vec_execution(kv.first, g);
    } else if (g.space == 0) {
      uint64_t waves, phases;
      int worst;
      shared_wavefronts(g, &waves, &phases, &worst);
      bank_add(bank_stats[g.stat], g.size, 1, waves, phases, worst);
    } else {
      const int sectors = global_sectors(g);
      bank_add(bank_stats[g.stat], g.size, 1, sectors, 1, sectors);
    }
  }
  bank_groups.clear();
  bank_occurrences.clear();
}

// One access of `size` bytes at `p` by the current thread, from the instruction before `site`; `plain`:
// a load or store of the kernel (false for the shared store of a cp.async, which nothing merges).
inline void bank_access(const void* p, unsigned size, int access, void* site, bool plain) {
  if (!banks_on || !L || !cur) return;
  const uintptr_t a = (uintptr_t)p;
  const bool in_smem = a - (uintptr_t)smem < SMEM_ARENA;
  if (!in_smem && a - L->arena >= L->arena_size) return;     // the fiber's stack, the library's own data
  if (banks_phase != phase) {
    bank_flush();
    banks_phase = phase;
  }
  const uint64_t at = in_smem ? a - (uintptr_t)smem : a;
  const uint32_t k = bank_occurrences[(uint64_t)(uintptr_t)site << 11 ^ (uint64_t)cur->linear]++;
  const BankKey key{(uintptr_t)site, (uint32_t)cur->warp, k};
  BankGroup& g = bank_groups[key];
  if (!g.mask) {
    g.size = (uint8_t)std::min(size, 16u);
    g.space = in_smem ? 0 : 1;
    g.access = (uint8_t)access;
    g.plain = in_smem && plain;
    if (in_smem) {
      KgError where{};
      shared_name(at, &where);
      // the parts of extern __shared__ are told apart by instruction: Python merges them by the offsets they touch
      g.stat = bank_stat(0, access, !strcmp(where.name, "extern __shared__") ? (int32_t)(key.site & 0x7fffffff) : -1, where.name);
    } else {
      g.stat = bank_stat(1, access, global_region(a), "");
    }
  }
  if (in_smem) {
    KgBankStat& s = bank_stats[g.stat];
    s.lo = s.hi ? std::min(s.lo, at) : at;
    s.hi = std::max(s.hi, at + size);
    vec_record(key, at, g.size, access, plain);
  }
  g.mask |= 1u << cur->lane;
  g.addr[cur->lane] = at;
}

}  // namespace

KG_API void kg_banks_enable(int on) {
  banks_on = on != 0;
  bank_groups.clear();
  bank_occurrences.clear();
  bank_stats.clear();
  vec_reset();
}

// Score what is pending, add the vectoriser's choices, and return how many statistics kg_banks_get can read.
KG_API int kg_banks_count(void) {
  bank_flush();
  vec_merged(bank_stats, bank_out);
  return (int)bank_out.size();
}

KG_API void kg_banks_get(int i, KgBankStat* out) { *out = bank_out[(size_t)i]; }
