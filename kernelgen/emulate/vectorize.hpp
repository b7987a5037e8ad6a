// kernelgen CPU emulator: NVCC's load-store vectoriser, as the traffic statistics (banks.hpp) see it.
//
// Part of banks.hpp. NVCC (LLVM's LoadStoreVectorizer, after unrolling) merges a thread's scalar shared
// loads (and stores) whose addresses are contiguous and whose first address it proves aligned to the
// merged width into one LDS.64/LDS.128 (STS.64/STS.128): SGEMM ladder step 2's 32 scalar reads of an A
// row become 8 LDS.128. Nsight Compute then counts fewer, wider requests than the source makes. The
// emulator sees executions, not NVCC's instructions, so it rebuilds them:
//  - an instruction is a g++ access site with its execution count in the barrier phase: NVCC's own
//    instruction wherever NVCC unrolls the loop fully, whatever g++ unrolled;
//  - a run: in one phase, a thread's shared accesses of one kind and size sorted by address, each
//    starting where the one before ends (an access of the other kind by the thread starts new runs, as
//    an aliasing store ends a chain of loads); every lane of a warp request must continue into the same
//    request, of the same lanes;
//  - the links must hold in every execution (every warp, block and phase), as a compiler proves them
//    statically or not at all;
//  - a vector of 2, 4 (8, 16 for 2- and 1-byte elements) elements, at most 16 bytes, starts where the
//    first element is aligned to the vector's width in every execution. Where the elements come from one
//    g++ instruction repeating (a loop g++ left rolled), that instruction's executions at the same place
//    in the vector's period must all be aligned: NVCC unrolls a rolled loop to vectorise it, so one of
//    its instructions serves every period (staged_load's one-thread loops: aligned without padding, so
//    LDS.128 as in their SASS; with padding, not, so scalar as in theirs). A g++ instruction run more
//    than VEC_UNROLLED_MAX times a phase by one thread is a loop NVCC keeps rolled too: its vectors take
//    consecutive iterations only (staged_load steps 3-4, whose contiguous stores are 32 iterations apart);
//  - runs are cut into vectors greedily from their lowest address, the widest that fits first (LLVM's
//    splitChainByAlignment).
// Each execution scores every vector its request could start (vec_execution); which vectors NVCC makes
// is known once every execution has been seen (vec_merged), which adds the chosen ones to the counts.
// Not modelled: accesses NVCC keeps apart for reasons of its own (ptxas re-loading a register it
// dropped, SGEMM step 3's extra scalar loads), merges across a __syncwarp, global memory.


struct VecId {                // an instruction as NVCC would have it: a site and its execution in the phase
  uintptr_t site;
  uint32_t occurrence;
  bool operator==(const VecId& o) const { return site == o.site && occurrence == o.occurrence; }
};
struct VecIdHash {
  size_t operator()(const VecId& k) const {
    return std::hash<uint64_t>()(k.site * 0x9E3779B97F4A7C15ull ^ k.occurrence);
  }
};
constexpr int VEC_WIDTHS = 5;            // a vector of 1, 2, 4, 8 or 16 elements
struct VecCost { uint64_t requests, units, phases; int32_t worst; };
struct VecInstr {
  uint32_t stat;
  uint8_t size;
  uint8_t link;               // 0 no execution yet; 1 every execution continued into `next`; 2 not always
  VecId next;
  uint64_t addr_or;           // every address it touched, OR-ed: the alignment a compiler could prove
  VecCost cost[VEC_WIDTHS];   // its requests as one element, and as the first of 2, 4, ... elements
};
std::unordered_map<VecId, VecInstr, VecIdHash> vec_instrs;

struct VecRec { uint64_t off; BankKey key; uint32_t run; uint8_t size, access, lane; };
std::vector<std::vector<VecRec>> vec_recs;   // per thread of the block: its plain shared accesses this phase
std::vector<uint32_t> vec_run;               // per thread: runs started (an access of the other kind starts one)
std::vector<int> vec_last;                   // per thread: the kind of its last shared access, -1 none

void vec_reset() {
  vec_instrs.clear();
  vec_recs.clear();
  vec_run.clear();
  vec_last.clear();
}

// The current thread's shared access (banks.hpp's bank_access): its place in the thread's runs.
void vec_record(const BankKey& key, uint64_t off, uint8_t size, int access, bool plain) {
  const size_t t = (size_t)cur->linear;
  if (vec_recs.size() <= t) {
    vec_recs.resize(t + 1);
    vec_run.resize(t + 1, 0);
    vec_last.resize(t + 1, -1);
  }
  if (vec_last[t] != access) {
    vec_last[t] = access;
    ++vec_run[t];
  }
  if (plain && size < 16) vec_recs[t].push_back({off, key, vec_run[t], size, (uint8_t)access, (uint8_t)cur->lane});
}

// At the end of a phase: each request learns which request continues its lanes' runs.
void bank_link() {
  for (size_t t = 0; t < vec_recs.size(); ++t) {
    std::vector<VecRec>& r = vec_recs[t];
    std::sort(r.begin(), r.end(), [](const VecRec& a, const VecRec& b) {
      return a.run != b.run ? a.run < b.run : a.access != b.access ? a.access < b.access : a.off < b.off;
    });
    for (size_t i = 0; i + 1 < r.size(); ++i) {
      const VecRec &a = r[i], &b = r[i + 1];
      if (a.run != b.run || a.access != b.access || a.size != b.size || b.off != a.off + a.size) continue;
      BankGroup& g = bank_groups[a.key];
      if (!g.next_mask) g.next = b.key;
      else if (!(g.next == b.key)) g.next_bad = true;
      g.next_mask |= 1u << a.lane;
    }
    r.clear();
    vec_last[t] = -1;
  }
}

// The request continuing every lane of `g`, with the same lanes and size, or null.
const BankGroup* vec_next(const BankGroup& g) {
  if (g.next_bad || g.next_mask != g.mask) return nullptr;
  auto it = bank_groups.find(g.next);
  return it != bank_groups.end() && it->second.mask == g.mask && it->second.size == g.size ? &it->second : nullptr;
}

void vec_score(VecCost& c, const BankGroup& g) {
  uint64_t waves, phases;
  int worst;
  shared_wavefronts(g, &waves, &phases, &worst);
  c.requests += 1; c.units += waves; c.phases += phases; c.worst = std::max(c.worst, (int32_t)worst);
}

// One execution of a plain shared request: its link, its alignment, and its cost as each vector it can start.
void vec_execution(const BankKey& key, const BankGroup& g) {
  VecInstr& v = vec_instrs[VecId{key.site, key.occurrence}];
  v.stat = g.stat;
  v.size = g.size;
  for (unsigned m = g.mask; m; m &= m - 1) v.addr_or |= g.addr[__builtin_ctz(m)];
  const BankGroup* n = vec_next(g);
  const VecId next{g.next.site, g.next.occurrence};
  if (v.link == 0) {
    v.link = n ? 1 : 2;
    v.next = next;
  } else if (v.link == 1 && (!n || !(next == v.next))) {
    v.link = 2;
  }
  vec_score(v.cost[0], g);
  const BankGroup* last = &g;
  for (int j = 1, have = 1; j < VEC_WIDTHS && (g.size << j) <= 16; ++j) {
    for (; have < 1 << j && last; ++have) last = vec_next(*last);
    if (!last) break;
    BankGroup wide = g;
    wide.size = (uint8_t)(g.size << j);
    vec_score(v.cost[j], wide);
  }
}

// A g++ instruction that one thread runs more often than this in one phase is a loop NVCC keeps rolled
// (it unrolls a loop fully only within LLVM's pragma-unroll threshold of 16K instructions); it unrolls
// such a loop a few iterations deep to vectorise it, so only consecutive iterations can merge.
constexpr uint32_t VEC_UNROLLED_MAX = 4096;

using VecChain = std::vector<std::pair<VecId, const VecInstr*>>;
struct VecSite {              // a g++ instruction's executions, for the alignment of its rolled-loop vectors
  std::vector<std::pair<uint32_t, uint64_t>> runs;        // (occurrence, addr_or) of each
  uint32_t execs = 0;                                      // the most executions of it by one thread in a phase
  std::unordered_map<uint64_t, std::vector<uint64_t>> by_period;   // period -> addr_or by occurrence % period
};
using VecSites = std::unordered_map<uintptr_t, VecSite>;

// The alignment NVCC can prove for a vector of `w` elements starting at chain[i] (see the top of this
// file); 1 where NVCC could not make the vector at all (elements of a rolled loop that are iterations apart).
uint64_t vec_alignment(const VecChain& chain, size_t i, int w, VecSites& sites) {
  const VecId h = chain[i].first;
  uint64_t bits = chain[i].second->addr_or;
  for (int k = 1; k < w; ++k) {
    const VecId e = chain[i + k].first;
    if (e.site != h.site) continue;
    if (e.occurrence <= h.occurrence) return 1;
    VecSite& site = sites.at(h.site);
    if (site.execs > VEC_UNROLLED_MAX && e.occurrence != h.occurrence + 1) return 1;
    // the site repeats every k elements, e.occurrence - h.occurrence executions apart
    const uint64_t period = (uint64_t)((w + k - 1) / k) * (e.occurrence - h.occurrence);
    std::vector<uint64_t>& by_class = site.by_period[period];
    if (by_class.empty()) {
      by_class.assign(period, 0);
      for (const auto& r : site.runs) by_class[r.first % period] |= r.second;
    }
    bits |= by_class[h.occurrence % period];
    break;
  }
  return bits ? bits & (~bits + 1) : (uint64_t)1 << 32;
}

// The counts with NVCC's vectors: `stats` (what needs no choosing) plus each instruction's chosen cost.
void vec_merged(const std::vector<KgBankStat>& stats, std::vector<KgBankStat>& out) {
  out = stats;
  std::unordered_set<VecId, VecIdHash> continued;
  VecSites by_site;
  for (const auto& kv : vec_instrs) {
    if (kv.second.link == 1 && vec_instrs.count(kv.second.next)) continued.insert(kv.second.next);
    VecSite& site = by_site[kv.first.site];
    site.runs.emplace_back(kv.first.occurrence, kv.second.addr_or);
    site.execs = std::max(site.execs, kv.first.occurrence + 1);
  }
  std::unordered_set<VecId, VecIdHash> done;
  VecChain chain;
  auto add = [&](const VecInstr& v, int j) {
    const VecCost& c = v.cost[j];
    bank_add(out[v.stat], v.size << j, c.requests, c.units, c.phases, c.worst);
  };
  for (const auto& kv : vec_instrs) {
    if (continued.count(kv.first)) continue;            // not the lowest address of its run
    chain.clear();
    for (const auto* at = &kv; at && done.insert(at->first).second;) {
      chain.emplace_back(at->first, &at->second);
      auto it = at->second.link == 1 ? vec_instrs.find(at->second.next) : vec_instrs.end();
      at = it == vec_instrs.end() ? nullptr : &*it;
    }
    for (size_t i = 0; i < chain.size();) {
      const VecInstr& v = *chain[i].second;
      int take = 0;
      for (int j = VEC_WIDTHS - 1; j >= 1 && !take; --j)
        if ((v.size << j) <= 16 && i + ((size_t)1 << j) <= chain.size() &&
            vec_alignment(chain, i, 1 << j, by_site) >= (uint64_t)(v.size << j))
          take = j;
      add(v, take);
      i += (size_t)1 << take;
    }
  }
  for (const auto& kv : vec_instrs)                      // on a cycle of links (none expected): as scalars
    if (!done.count(kv.first)) add(kv.second, 0);
}
