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
// 8- and 16-byte accesses run in 2 phases of 16 lanes and 4 phases of 8 lanes, as the hardware
// does. A request costs, per phase, the largest number of distinct words any one bank holds
// (wavefronts); "ways" is that number, 1 without conflicts. Global memory: the number of distinct
// 32-byte sectors the request touches.
#include <string>
#include <unordered_map>

struct KgBankStat {           // launch.py's _BankStat mirrors this layout
  int32_t space, access;      // space 0 shared, 1 global; access A_READ or A_WRITE
  int32_t region, worst;      // global: the arena region; worst wavefronts (shared, per phase) or sectors (global)
  uint64_t requests, units, phases;   // units: wavefronts (shared) or sectors (global); phases: active phases
  uint64_t lo, hi;            // shared: the byte offsets touched
  char name[64];
};

namespace {

bool banks_on = false;
uint32_t banks_phase = 0;
struct BankKey {
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
  bool chain;                 // every lane's previous access was request `prev`, ending where this one starts
  BankKey prev, self;
};
// A thread's previous access in this phase: g++ splits a float4 it loads into registers into 4
// scalar accesses (SRA), which the GPU makes as one; bank_flush joins such runs back.
struct BankLast { BankKey key; uint64_t end; uint8_t size, space, access, valid; };
std::unordered_map<uint64_t, uint32_t> bank_occurrences;   // (site, thread) -> executions this phase
std::unordered_map<BankKey, BankGroup, BankKeyHash> bank_groups;
std::vector<BankLast> bank_last;                           // per thread of the block
std::vector<KgBankStat> bank_stats;

// Wavefronts of one shared-memory request, and how many of its phases had an active lane.
void shared_wavefronts(const BankGroup& g, uint64_t* waves, uint64_t* phases, int* worst) {
  const int nphase = g.size <= 4 ? 1 : g.size <= 8 ? 2 : 4, per = 32 / nphase;
  *waves = *phases = 0;
  *worst = 0;
  for (int p = 0; p < nphase; ++p) {
    uint64_t words[32 * 4];
    int n = 0;
    for (int l = p * per; l < (p + 1) * per; ++l) {
      if (!(g.mask >> l & 1)) continue;
      for (uint64_t w = g.addr[l] / 4; w <= (g.addr[l] + g.size - 1) / 4 && n < 128; ++w) words[n++] = w;
    }
    if (!n) continue;
    std::sort(words, words + n);
    n = (int)(std::unique(words, words + n) - words);
    int per_bank[32] = {0}, most = 0;
    for (int i = 0; i < n; ++i) most = std::max(most, ++per_bank[words[i] % 32]);
    *waves += most;
    *phases += 1;
    *worst = std::max(*worst, most);
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

void bank_score(const BankGroup& g) {
  KgBankStat& s = bank_stats[g.stat];
  if (g.space == 0) {
    uint64_t waves, phases;
    int worst;
    shared_wavefronts(g, &waves, &phases, &worst);
    s.requests += 1; s.units += waves; s.phases += phases; s.worst = std::max(s.worst, (int32_t)worst);
  } else {
    int sectors = global_sectors(g);
    s.requests += 1; s.units += sectors; s.phases += 1; s.worst = std::max(s.worst, (int32_t)sectors);
  }
}

// Can requests run[i..i+n) be one vector access of n * size bytes: the same lanes, each lane's
// addresses consecutive (checked when they were recorded) and aligned to the vector's size?
bool bank_joinable(const std::vector<const BankGroup*>& run, size_t i, size_t n) {
  const BankGroup& h = *run[i];
  const unsigned bytes = (unsigned)n * h.size;
  if (i + n > run.size() || bytes > 16) return false;
  for (size_t k = i + 1; k < i + n; ++k) {
    if (run[k]->mask != h.mask) return false;
    for (size_t j = i; j < k; ++j)          // one instruction's repeats are a loop, not a split vector
      if (run[j]->self.site == run[k]->self.site) return false;
  }
  for (unsigned m = h.mask; m; m &= m - 1)
    if (h.addr[__builtin_ctz(m)] % bytes) return false;
  return true;
}

// Score every request gathered so far and forget them: called when a new phase starts.
void bank_flush() {
  std::unordered_map<BankKey, BankKey, BankKeyHash> next;      // a request -> the one that continues it
  for (auto& kv : bank_groups)
    if (kv.second.chain && bank_groups.count(kv.second.prev)) next.emplace(kv.second.prev, kv.first);
  std::vector<const BankGroup*> run;
  for (auto& kv : bank_groups) {
    if (kv.second.chain) {                                     // continues another request: scored with its run
      auto it = next.find(kv.second.prev);
      if (it != next.end() && it->second == kv.first) continue;
    }
    run.clear();
    for (BankKey k = kv.first;;) {
      run.push_back(&bank_groups.at(k));
      auto it = next.find(k);
      if (it == next.end()) break;
      k = it->second;
    }
    for (size_t i = 0; i < run.size();) {
      const unsigned size = run[i]->size;
      size_t n = 1;
      for (size_t c : {16 / size, 8 / size, 4 / size})
        if (c > 1 && bank_joinable(run, i, c)) { n = c; break; }
      if (n == 1) {
        bank_score(*run[i]);
      } else {
        BankGroup joined = *run[i];
        joined.size = (uint8_t)(n * size);
        bank_score(joined);
      }
      i += n;
    }
  }
  bank_groups.clear();
  bank_occurrences.clear();
  std::fill(bank_last.begin(), bank_last.end(), BankLast{});
}

// One access of `size` bytes at `p` by the current thread, from the instruction before `site`.
inline void bank_access(const void* p, unsigned size, int access, void* site) {
  if (!banks_on || !L || !cur) return;
  const uintptr_t a = (uintptr_t)p;
  const bool in_smem = a - (uintptr_t)smem < SMEM_ARENA;
  if (!in_smem && a - L->arena >= L->arena_size) return;     // the fiber's stack, the library's own data
  if (banks_phase != phase) {
    bank_flush();
    banks_phase = phase;
  }
  if (bank_last.size() < (size_t)nthreads) bank_last.resize(nthreads, BankLast{});
  const uint64_t at = in_smem ? a - (uintptr_t)smem : a;
  const uint8_t space = in_smem ? 0 : 1;
  size = std::min(size, 16u);
  const uint32_t k = bank_occurrences[(uint64_t)(uintptr_t)site << 11 ^ (uint64_t)cur->linear]++;
  const BankKey key{(uintptr_t)site, (uint32_t)cur->warp, k};
  BankGroup& g = bank_groups[key];
  BankLast& last = bank_last[cur->linear];
  const bool follows = last.valid && last.space == space && last.access == access && last.size == size &&
                       last.end == at && !(last.key == key);
  if (!g.mask) {
    g.size = (uint8_t)size;
    g.space = space;
    g.access = (uint8_t)access;
    g.self = key;
    g.chain = follows;
    g.prev = last.key;
    if (in_smem) {
      KgError where{};
      shared_name(at, &where);
      // the parts of extern __shared__ are told apart by instruction: Python merges them by the offsets they touch
      g.stat = bank_stat(0, access, where.name[0] == 'e' ? (int32_t)(key.site & 0x7fffffff) : -1, where.name);
    } else {
      g.stat = bank_stat(1, access, global_region(a), "");
    }
  } else if (g.chain && !(follows && last.key == g.prev)) {
    g.chain = false;
  }
  if (in_smem) {
    KgBankStat& s = bank_stats[g.stat];
    s.lo = s.hi ? std::min(s.lo, at) : at;
    s.hi = std::max(s.hi, at + size);
  }
  g.mask |= 1u << cur->lane;
  g.addr[cur->lane] = at;
  last = BankLast{key, at + size, (uint8_t)size, space, (uint8_t)access, 1};
}

}  // namespace

KG_API void kg_banks_enable(int on) {
  banks_on = on != 0;
  bank_groups.clear();
  bank_occurrences.clear();
  bank_last.clear();
  bank_stats.clear();
}

// Score what is pending and return how many statistics kg_banks_get can read.
KG_API int kg_banks_count(void) {
  bank_flush();
  return (int)bank_stats.size();
}

KG_API void kg_banks_get(int i, KgBankStat* out) { *out = bank_stats[(size_t)i]; }
