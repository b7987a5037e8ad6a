// kernelgen CPU emulator runtime: one fiber per CUDA thread, blocks one after another.
//
// kg_launch() runs one kernel launch. Every thread of a block is a fiber with its own stack; a fiber
// runs until it reaches a block barrier, a warp exchange (shuffle, vote, __syncwarp) or its end, so
// the only switches are the ones CUDA's semantics need. Between two barriers the scheduler runs the
// ready fibers in the order asked for (forward, reverse, seeded random): a missing __syncthreads
// then reads a value that was not written yet. Shared memory is one arena per library, refilled
// with 0xff bytes (NaN floats) at every block start.
//
// Check builds compile the kernel with g++ -fsanitize=thread but link no TSan runtime: the
// compiler's __tsan_readN/__tsan_writeN calls land in the hooks at the end of this file, which
// (check.hpp) bounds-check global buffers (the Python side packs them into one arena with red
// zones; an address outside every buffer, however far, is reported before it happens) and shared
// slots, and keep a shadow record per 2 bytes of shared memory to find accesses by two
// threads in the same barrier phase that no __syncwarp orders. When Python asks
// (kg_banks_enable), banks.hpp also groups the accesses into warp requests and counts shared-memory
// wavefronts (bank conflicts) and global sectors per request.
//
// This file is compiled without instrumentation and linked into every kernel's shared library.
// The C++ library comes before shim.h: shim.h defines CUDA's __noinline__, which libstdc++ 13 and
// later spell inside its own attributes (`__attribute__((__noinline__))`), so a standard header read
// after it no longer compiles.
#include <algorithm>
#include <cstdarg>
#include <string>
#include <unordered_map>
#include <vector>

#include "shim.h"

// x86-64 gets a hand-rolled switch (no signal-mask system call per switch, unlike swapcontext);
// elsewhere, or with -DKG_UCONTEXT, the portable ucontext functions.
#if defined(__x86_64__) && !defined(KG_UCONTEXT)
#define KG_X86_SWITCH 1
#else
#define KG_X86_SWITCH 0
#endif

#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#if !KG_X86_SWITCH
#include <ucontext.h>
#endif

#define KG_API extern "C" __attribute__((visibility("default")))

extern "C" {
uint3 kg_threadIdx, kg_blockIdx;
dim3 kg_blockDim, kg_gridDim;
}

// ---- the values shared with launch.py (ctypes mirrors these layouts) ------------------------------
struct KgRegion { uint64_t lo, hi; };
struct KgLaunch {
  void (*entry)(void**);
  void** args;
  uint32_t grid[3], block[3];
  uint64_t shared_bytes;
  uint64_t seed;
  int32_t order, check;
  uint64_t arena, arena_size;
  const KgRegion* regions;
  int64_t nregions;
  void* stacks;
  uint64_t stack_bytes, stack_count;
};
enum { E_NONE, E_GLOBAL_OOB, E_SHARED_OOB, E_RACE, E_FAULT, E_DEADLOCK, E_WARP, E_TRAP, E_SHFL_INACTIVE,
       E_MISALIGNED, E_RESOURCES, E_ASYNC };
enum { A_READ, A_WRITE, A_ATOMIC };
struct KgError {
  int32_t kind, access, size, other_access;
  int32_t thread[3], block[3], other_thread[3];
  int32_t region, elem;
  int64_t offset;
  uint64_t addr;
  char name[64];
  char text[256];
};

namespace {

// ---- fibers -------------------------------------------------------------------------------------
enum : uint8_t { READY, AT_BAR, AT_WARP, DONE };
struct Fiber {
  void* sp;
  uint3 tid;
  int linear, warp, lane;
  uint8_t state;
  int kind, arg, width;
  unsigned mask;
  uint64_t value, result;
#if !KG_X86_SWITCH
  ucontext_t uc;
#endif
};

const KgLaunch* L = nullptr;
KgError* E = nullptr;
bool failed = false;
std::vector<Fiber> fibers;
std::vector<uint32_t> warp_epoch;   // full-warp synchronisations so far, per warp of the block
std::vector<int> order;
int nthreads = 0;
char* stacks = nullptr;
size_t stacks_count = 0, stacks_size = 0;
void* sched_sp = nullptr;
Fiber* cur = nullptr;
uintptr_t cur_stack_lo = 0;         // the running fiber's stack: [cur_stack_lo, cur_stack_lo + stacks_size)
uint32_t phase = 1;                 // bumped at every block start and every block barrier
uint64_t rng_state = 1;
#if !KG_X86_SWITCH
ucontext_t sched_uc;
#endif

const char* const warp_kind_name[] = {
  "__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync",
  "__any_sync", "__all_sync", "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync",
  "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync", "__reduce_xor_sync",
  "__match_any_sync", "__match_all_sync"};
const char* const bar_kind_name[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or"};

}  // namespace

#if KG_X86_SWITCH
// A switch saves the callee-saved registers on the old stack and pops them from the new one: the
// C++ caller already treats every other register as clobbered by a call. A new fiber's stack is
// laid out so that the first switch "returns" into kg_ctx_start, which calls r13(r12).
extern "C" void kg_ctx_switch(void** save_sp, void* to_sp);
extern "C" void kg_ctx_start();
__asm__(R"(
  .text
  .p2align 4
  .type kg_ctx_switch,@function
kg_ctx_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kg_ctx_switch, .-kg_ctx_switch
  .type kg_ctx_start,@function
kg_ctx_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size kg_ctx_start, .-kg_ctx_start
)");
#endif

namespace {

void fiber_main(void*);

void fiber_init(Fiber& f, char* lo, char* hi) {
#if KG_X86_SWITCH
  uintptr_t top = (uintptr_t)hi & ~(uintptr_t)15;
  void** sp = (void**)(top - 72);        // 6 registers + return address; rsp % 16 == 0 after the ret
  sp[0] = nullptr; sp[1] = nullptr;     // r15 r14
  sp[2] = (void*)&fiber_main;           // r13: the function kg_ctx_start calls
  sp[3] = nullptr;                      // r12: its argument
  sp[4] = nullptr; sp[5] = nullptr;     // rbx rbp
  sp[6] = (void*)&kg_ctx_start;
  f.sp = sp;
#else
  getcontext(&f.uc);
  f.uc.uc_stack.ss_sp = lo;
  f.uc.uc_stack.ss_size = hi - lo;
  f.uc.uc_link = nullptr;
  makecontext(&f.uc, (void (*)())fiber_main, 0);
#endif
}

inline void run_fiber(Fiber& f) {
  cur = &f;
  cur_stack_lo = (uintptr_t)stacks + (size_t)f.linear * stacks_size;
  kg_threadIdx = f.tid;
#if KG_X86_SWITCH
  kg_ctx_switch(&sched_sp, f.sp);
#else
  swapcontext(&sched_uc, &f.uc);
#endif
}

inline void yield_fiber() {
  Fiber* me = cur;
#if KG_X86_SWITCH
  kg_ctx_switch(&me->sp, sched_sp);
#else
  swapcontext(&me->uc, &sched_uc);
#endif
}

void async_finish();

void fiber_main(void*) {
  L->entry(L->args);
  async_finish();
  cur->state = DONE;
  yield_fiber();
  __builtin_unreachable();
}

}  // namespace

// One pool of fiber stacks per process (launch.py asks the first library for it and hands it to
// every launch): per-library pools would each cost a mapping per guard page, and the kernel's
// limit on mappings (vm.max_map_count) is reached after a few dozen libraries.
KG_API void* kg_stack_pool(uint64_t n, uint64_t size) {
  char* p = (char*)mmap(nullptr, n * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  long page = sysconf(_SC_PAGESIZE);
  for (uint64_t i = 0; i < n; ++i) mprotect(p + i * size, page, PROT_NONE);  // overflow -> SIGSEGV
  return p;
}

namespace {

// ---- errors -------------------------------------------------------------------------------------
void set_thread(int32_t out[3], int linear) {
  out[0] = linear % kg_blockDim.x;
  out[1] = linear / kg_blockDim.x % kg_blockDim.y;
  out[2] = linear / (kg_blockDim.x * kg_blockDim.y);
}

// Fill in the error (first one wins); `who` is the linear thread index or -1.
KgError* record(int kind, int who, const char* fmt = nullptr, ...) {
  if (failed) return nullptr;
  failed = true;
  E->kind = kind;
  if (who >= 0) set_thread(E->thread, who);
  else E->thread[0] = E->thread[1] = E->thread[2] = -1;
  E->block[0] = kg_blockIdx.x; E->block[1] = kg_blockIdx.y; E->block[2] = kg_blockIdx.z;
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(E->text, sizeof E->text, fmt, ap);
    va_end(ap);
  }
  return E;
}

// From inside a fiber: record and leave it for good (its stack is simply reused by the next launch).
[[noreturn]] void fiber_fail() {
  yield_fiber();
  __builtin_unreachable();
}

// ---- shared memory: dynamic at offset 0, then the launch's static slots; file-scope slots at the top
constexpr size_t SMEM_ARENA = 512 * 1024;
constexpr size_t SMEM_LIMIT = 227 * 1024;      // sm_90's per-block maximum with the dynamic opt-in
constexpr size_t REDZONE = 64;                 // between shared slots in check builds
// The arena is mapped (map_smem) between two guard bands without access: a stray shared index (below 0
// of the dynamic shared memory, far past a slot) faults instead of landing in the runner's state, and
// check builds report an access there as a shared one out of bounds, before it happens.
constexpr size_t SMEM_GUARD = 1024 * 1024;
char* smem = nullptr;

char* map_smem() {
  if (smem) return smem;
  char* p = (char*)mmap(nullptr, SMEM_ARENA + 2 * SMEM_GUARD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (mprotect(p + SMEM_GUARD, SMEM_ARENA, PROT_READ | PROT_WRITE)) {
    munmap(p, SMEM_ARENA + 2 * SMEM_GUARD);
    return nullptr;
  }
  return smem = p + SMEM_GUARD;
}
struct Slot { void* key; size_t lo, hi, elem; const char* name; };
std::vector<Slot> slots;                       // this launch's, in address order
// File-scope __shared__ variables, allocated while the library loads: plain arrays, because the
// kernel's static initialisers may run before this file's constructors would.
constexpr int MAX_FILE_SLOTS = 64;
Slot file_slots[MAX_FILE_SLOTS];
int nfile_slots = 0;
size_t smem_next = 0, smem_top = SMEM_ARENA, smem_used = 0, file_used = 0;

inline size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// ---- cp.async: each thread's copies wait in its queue until their group is waited for ------------
// A copy reads its source when issued and poisons its destination (0xff bytes: NaN floats); the data
// lands at the cp.async.wait_group that completes its group (every committed group but the newest N),
// or when the thread exits. Check builds also mark the destination with the issuing thread, so an
// access before the data landed is reported (check.hpp) rather than just reading NaN.
struct AsyncCopy { uint32_t group, off, size; unsigned char data[16]; };
std::vector<std::vector<AsyncCopy>> async_queue;   // per thread of the block, in issue order
std::vector<uint32_t> async_committed;             // groups committed so far, per thread
uint16_t* async_owner = nullptr;                   // check builds: issuing thread + 1, per shared grain
size_t async_marked = 0;                           // grains marked now

#include "check.hpp"

void async_mark(const AsyncCopy& c, int owner) {
  if (!async_owner) return;
  for (size_t w = c.off / KG_SHADOW_GRAIN; w <= (c.off + c.size - 1) / KG_SHADOW_GRAIN; ++w) {
    async_marked += owner && !async_owner[w];
    async_marked -= !owner && async_owner[w];
    async_owner[w] = (uint16_t)owner;
  }
}

// Land the first `n` copies of the current thread's queue; `checked` records them as its writes.
void async_land(size_t n, bool checked) {
  std::vector<AsyncCopy>& q = async_queue[cur->linear];
  for (size_t i = 0; i < n; ++i) {
    async_mark(q[i], 0);
    memcpy(smem + q[i].off, q[i].data, q[i].size);
    if (checked) shared_access(q[i].off, q[i].size, A_WRITE);
  }
  q.erase(q.begin(), q.begin() + n);
}

// A thread exits: its copies still in flight land (as they would on the GPU), unchecked.
void async_finish() { async_land(async_queue[cur->linear].size(), false); }

// Forget every queued copy (a new block, or the end of a launch).
void async_reset(int threads) {
  for (auto& q : async_queue) {
    for (const AsyncCopy& c : q) async_mark(c, 0);
    q.clear();
  }
  async_queue.resize(threads);
  async_committed.assign(threads, 0);
}

// ---- warp exchanges ------------------------------------------------------------------------------
// Per warp of the block: lanes that have not exited, and lanes waiting at a warp exchange.
std::vector<unsigned> warp_live, warp_arrived;

// Source lane of a shuffle, after PTX's shfl: out-of-segment sources return the caller's own value.
int shfl_source(int kind, int lane, int b, int width) {
  int segmask = (32 - width) & 31;
  int min_lane = lane & segmask;
  int max_lane = kind == KG_W_UP ? min_lane : (min_lane | (31 & ~segmask));
  int j;
  bool ok;
  b &= 31;
  switch (kind) {
    case KG_W_IDX: j = min_lane | (b & ~segmask & 31); ok = j <= max_lane; break;
    case KG_W_UP: j = lane - b; ok = j >= max_lane; break;
    case KG_W_DOWN: j = lane + b; ok = j <= max_lane; break;
    default: j = lane ^ b; ok = j <= max_lane; break;
  }
  return ok ? j : lane;
}

// Complete every group of warp `w` whose live lanes have all arrived; called when a lane arrives
// or exits. Returns false after recording an error.
bool try_complete(int w) {
  const int base = w * 32;
  const unsigned live = warp_live[w];
  unsigned pending = warp_arrived[w];
  while (pending) {
    Fiber& f = fibers[base + __builtin_ctz(pending)];
    const unsigned part = f.mask & live;
    pending &= ~(part | (1u << f.lane));
    if ((warp_arrived[w] & part) != part) continue;      // someone has yet to arrive
    bool all = true;
    for (unsigned m = part; m && all; m &= m - 1) all = fibers[base + __builtin_ctz(m)].mask == f.mask;
    if (!all) continue;
    warp_arrived[w] &= ~part;
    for (int l = 0; l < 32; ++l) {
      if (!(part >> l & 1)) continue;
      const Fiber& g = fibers[base + l];
      if (g.kind != f.kind || g.width != f.width) {
        record(E_WARP, f.linear, "warp %d: lane %d is at %s while lane %d is at %s (mask 0x%08x)", w, f.lane,
               warp_kind_name[f.kind], g.lane, warp_kind_name[g.kind], f.mask);
        return false;
      }
    }
    uint64_t ballot = 0, acc = 0;
    bool first = true;
    for (int l = 0; l < 32; ++l) {
      if (!(part >> l & 1)) continue;
      uint64_t v = fibers[base + l].value;
      uint32_t v32 = (uint32_t)v;
      if (v) ballot |= 1ull << l;
      switch (f.kind) {
        case KG_W_ADD: acc = (uint32_t)(acc + v32); break;
        case KG_W_MIN_I: acc = first ? v32 : (uint32_t)std::min((int32_t)acc, (int32_t)v32); break;
        case KG_W_MAX_I: acc = first ? v32 : (uint32_t)std::max((int32_t)acc, (int32_t)v32); break;
        case KG_W_MIN_U: acc = first ? v32 : std::min((uint32_t)acc, v32); break;
        case KG_W_MAX_U: acc = first ? v32 : std::max((uint32_t)acc, v32); break;
        case KG_W_AND: acc = first ? v32 : (acc & v32); break;
        case KG_W_OR: acc |= v32; break;
        case KG_W_XOR_R: acc ^= v32; break;
        default: break;
      }
      first = false;
    }
    bool all_equal = true;
    for (int l = 0; l < 32; ++l)
      if ((part >> l & 1) && fibers[base + l].value != f.value) all_equal = false;
    for (int l = 0; l < 32; ++l) {
      if (!(part >> l & 1)) continue;
      Fiber& g = fibers[base + l];
      switch (f.kind) {
        case KG_W_IDX: case KG_W_UP: case KG_W_DOWN: case KG_W_XOR: {
          int j = shfl_source(f.kind, l, g.arg, g.width);
          if (part >> j & 1) {
            g.result = fibers[base + j].value;
          } else if (L->check) {
            record(E_SHFL_INACTIVE, g.linear, "%s reads lane %d of warp %d, which %s", warp_kind_name[f.kind], j, w,
                   base + j >= nthreads ? "does not exist (partial warp)"
                   : (live >> j & 1) ? "is not in the mask" : "has exited");
            return false;
          } else {
            g.result = ~0ull;   // an undefined value, made visible: NaN as float, -1 as int
          }
          break;
        }
        case KG_W_BALLOT: g.result = ballot; break;
        case KG_W_ANY: g.result = ballot != 0; break;
        case KG_W_ALL: g.result = ballot == part; break;
        case KG_W_MATCH_ANY: {
          uint64_t m = 0;
          for (int k = 0; k < 32; ++k)
            if ((part >> k & 1) && fibers[base + k].value == g.value) m |= 1ull << k;
          g.result = m;
          break;
        }
        case KG_W_MATCH_ALL: g.result = all_equal ? ((uint64_t)part | (1ull << 32)) : 0; break;
        case KG_W_SYNC: g.result = 0; break;
        default: g.result = acc; break;
      }
      g.state = READY;
    }
    // Only a __syncwarp of every live lane orders shared-memory accesses for the race check: shuffles
    // and votes synchronise execution, not memory (the CUDA programming guide's memory ordering among
    // lanes is __syncwarp's alone).
    if (part == live && f.kind == KG_W_SYNC) ++warp_epoch[w];
  }
  return true;
}

// ---- the block scheduler -------------------------------------------------------------------------
uint64_t next_random() {
  rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
  return rng_state;
}

void make_order() {
  if (L->order != 2) return;
  for (int i = nthreads - 1; i > 0; --i) std::swap(order[i], order[next_random() % (i + 1)]);
}

void release_barrier() {
  int count = 0, live = 0;
  for (Fiber& f : fibers) {
    if (f.state == DONE) continue;
    ++live;
    count += f.value != 0;
  }
  for (Fiber& f : fibers) {
    if (f.state != AT_BAR) continue;
    switch (f.kind) {
      case KG_B_COUNT: f.result = count; break;
      case KG_B_AND: f.result = count == live; break;
      case KG_B_OR: f.result = count != 0; break;
      default: f.result = 0; break;
    }
    f.state = READY;
  }
  ++phase;
}

void deadlock() {
  for (const Fiber& f : fibers) {
    if (f.state != AT_WARP) continue;
    const int base = f.warp * 32;
    for (int l = 0; l < 32; ++l) {
      if (!(f.mask >> l & 1) || base + l >= nthreads) continue;
      const Fiber& g = fibers[base + l];
      if (g.state == AT_BAR) {
        record(E_DEADLOCK, f.linear, "deadlock: lane %d waits at %s (mask 0x%08x) while lane %d of its warp waits at %s",
               f.lane, warp_kind_name[f.kind], f.mask, g.lane, bar_kind_name[g.kind]);
        return;
      }
      if (g.state == AT_WARP && g.mask != f.mask) {
        record(E_DEADLOCK, f.linear, "deadlock: lane %d waits at %s with mask 0x%08x, lane %d at %s with mask 0x%08x",
               f.lane, warp_kind_name[f.kind], f.mask, g.lane, warp_kind_name[g.kind], g.mask);
        return;
      }
    }
  }
  record(E_DEADLOCK, -1, "deadlock: no thread of the block can proceed");
}

bool run_block() {
  const size_t page = 4096;
  for (int i = 0; i < nthreads; ++i) {
    Fiber& f = fibers[i];
    f.state = READY;
    f.value = f.result = 0;
    char* lo = stacks + (size_t)i * stacks_size + page;
    // stagger the stack tops so the fibers' hot frames do not all map to the same cache sets
    char* hi = stacks + (size_t)(i + 1) * stacks_size - (size_t)(i % 64) * 64;
    fiber_init(f, lo, hi);
  }
  async_reset(nthreads);
  std::fill(warp_epoch.begin(), warp_epoch.end(), 0);
  for (size_t w = 0; w < warp_live.size(); ++w) {
    const int lanes = std::min(32, nthreads - (int)w * 32);
    warp_live[w] = lanes == 32 ? ~0u : (1u << lanes) - 1;
    warp_arrived[w] = 0;
  }
  ++phase;
  for (;;) {
    bool ran = false;
    make_order();
    for (int idx : order) {
      Fiber& f = fibers[idx];
      if (f.state != READY) continue;
      run_fiber(f);
      ran = true;
      cur = nullptr;
      if (failed) return false;
      if (f.state != DONE) continue;
      warp_live[f.warp] &= ~(1u << f.lane);
      if (warp_arrived[f.warp] && !try_complete(f.warp)) return false;
    }
    if (ran) continue;
    int live = 0, at_bar = 0;
    for (const Fiber& f : fibers) {
      live += f.state != DONE;
      at_bar += f.state == AT_BAR;
    }
    if (live == 0) return true;
    if (at_bar == live) {
      release_barrier();
      continue;
    }
    deadlock();
    return false;
  }
}

// ---- faults (illegal address, stack overflow, integer division by zero) during a launch ---------
sigjmp_buf fault_jmp;
volatile sig_atomic_t in_launch = 0;
struct sigaction old_actions[4];
const int fault_signals[4] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
alignas(16) char alt_stack[64 * 1024];
stack_t old_alt;

void on_fault(int sig, siginfo_t* si, void*) {
  if (!in_launch) {  // not ours: put the previous handler back and let the signal happen again
    for (int i = 0; i < 4; ++i) sigaction(fault_signals[i], &old_actions[i], nullptr);
    return;
  }
  uintptr_t a = (uintptr_t)si->si_addr;
  const char* what = sig == SIGFPE ? "arithmetic exception (integer division by zero?)"
                   : sig == SIGILL ? "illegal instruction"
                   : "illegal memory access";
  int who = cur ? cur->linear : -1;
  if (cur && sig == SIGSEGV && stacks && a - (uintptr_t)stacks < stacks_count * stacks_size &&
      (a - (uintptr_t)stacks) % stacks_size < 4096)
    what = "stack overflow (a fiber's stack is too small for this thread's locals)";
  else if (sig == SIGSEGV && smem && a - ((uintptr_t)smem - SMEM_GUARD) < SMEM_ARENA + 2 * SMEM_GUARD)
    what = "illegal memory access (shared memory, out of bounds)";
  KgError* err = record(E_FAULT, who, "%s (signal %d at address 0x%lx)", what, sig, (unsigned long)a);
  if (err) err->addr = a;
  siglongjmp(fault_jmp, 1);
}

void install_handlers() {
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  sigaltstack(&ss, &old_alt);
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 4; ++i) sigaction(fault_signals[i], &sa, &old_actions[i]);
}

void restore_handlers() {
  for (int i = 0; i < 4; ++i) sigaction(fault_signals[i], &old_actions[i], nullptr);
  sigaltstack(&old_alt, nullptr);
}

}  // namespace

// ---- what the kernel calls -------------------------------------------------------------------------
extern "C" int kg_syncthreads_op(int kind, int pred) {
  Fiber* me = cur;
  me->state = AT_BAR;
  me->kind = kind;
  me->value = pred != 0;
  yield_fiber();
  return (int)me->result;
}

extern "C" unsigned long long kg_warp_op(int kind, unsigned mask, unsigned long long value, int arg, int width) {
  Fiber* me = cur;
  if (!(mask >> me->lane & 1)) {
    record(E_WARP, me->linear, "%s: mask 0x%08x does not include the calling lane %d", warp_kind_name[kind], mask,
           me->lane);
    fiber_fail();
  }
  if (width < 1 || width > 32 || (width & (width - 1))) {
    record(E_WARP, me->linear, "%s: width %d is not a power of two in 1..32", warp_kind_name[kind], width);
    fiber_fail();
  }
  me->state = AT_WARP;
  me->kind = kind;
  me->mask = mask;
  me->value = value;
  me->arg = arg;
  me->width = width;
  warp_arrived[me->warp] |= 1u << me->lane;
  if (!try_complete(me->warp)) fiber_fail();
  yield_fiber();
  return me->result;
}

extern "C" unsigned kg_activemask(void) { return warp_live[cur->warp]; }


extern "C" void* kg_dynamic_shared(void) { return map_smem(); }   // also at load: file-scope extern __shared__

extern "C" void* kg_shared_slot(void* key, size_t bytes, size_t align, size_t elem, const char* name) {
  align = std::max<size_t>(align, 16);
  if (!map_smem()) {
    fprintf(stderr, "kernelgen emulator: cannot map %zu bytes of shared memory\n", SMEM_ARENA);
    abort();
  }
  if (!key || !L) {  // a file-scope __shared__ variable, allocated once at load from the arena's top
    smem_top = (smem_top - bytes) / align * align;
    if (nfile_slots < MAX_FILE_SLOTS) file_slots[nfile_slots] = Slot{nullptr, smem_top, smem_top + bytes, elem, name};
    ++nfile_slots;                                  // more than MAX_FILE_SLOTS: every launch reports it
    file_used += bytes;
    return smem + smem_top;
  }
  for (const Slot& s : slots)
    if (s.key == key) return smem + s.lo;
  size_t lo = align_up(smem_next, align);
  size_t gap = L->check ? REDZONE : 0;
  smem_used += bytes;
  if (L->shared_bytes + smem_used + file_used > SMEM_LIMIT || lo + bytes + gap > smem_top) {
    record(E_RESOURCES, cur ? cur->linear : -1, "too much shared memory: %llu bytes dynamic + %llu static (limit %llu)",
           (unsigned long long)L->shared_bytes, (unsigned long long)(smem_used + file_used),
           (unsigned long long)SMEM_LIMIT);
    fiber_fail();
  }
  slots.push_back({key, lo, lo + bytes, elem, name});
  smem_next = lo + bytes + gap;
  memset(smem + lo, 0xff, bytes);
  return smem + lo;
}

namespace {
inline void bank_access(const void* p, unsigned size, int access, void* site, bool plain);   // banks.hpp
}

// cp.async with a source size: the first src_bytes come from src (none read when 0), the rest land as
// zeros. `site`: the calling instruction, for the traffic profile.
static void cp_async(void* dst, const void* src, int bytes, int src_bytes, void* site) {
  Fiber* me = cur;
  // counted as the global load and shared store the copy makes (two sites: one request each per warp)
  if (src_bytes > 0) bank_access(src, (unsigned)src_bytes, A_READ, site, false);
  bank_access(dst, (unsigned)bytes, A_WRITE, (char*)site + 1, false);
  const size_t off = (uintptr_t)dst - (uintptr_t)smem;
  if (bytes != 4 && bytes != 8 && bytes != 16) {
    record(E_TRAP, me->linear, "cp.async of %d bytes (cp.async copies 4, 8 or 16)", bytes);
    fiber_fail();
  }
  if (src_bytes < 0 || src_bytes > bytes) {
    record(E_TRAP, me->linear, "cp.async source size %d outside 0..%d", src_bytes, bytes);
    fiber_fail();
  }
  if (off >= SMEM_ARENA || off + bytes > SMEM_ARENA) {
    record(E_TRAP, me->linear, "cp.async destination %p is not in shared memory", dst);
    fiber_fail();
  }
  if (L->check) {
    if (src_bytes > 0) check_access(src, (unsigned)src_bytes, A_READ, true);
    check_access(dst, (unsigned)bytes, A_WRITE, true);
  }
  AsyncCopy c{async_committed[me->linear], (uint32_t)off, (uint32_t)bytes, {}};
  if (src_bytes > 0) memcpy(c.data, src, src_bytes);
  memset(dst, 0xff, bytes);
  async_mark(c, me->linear + 1);
  async_queue[me->linear].push_back(c);
}

extern "C" void kg_emu_cp_async(void* dst, const void* src, int bytes) {
  cp_async(dst, src, bytes, bytes, __builtin_return_address(0));
}

extern "C" void kg_emu_cp_async_zfill(void* dst, const void* src, int bytes, int src_bytes) {
  cp_async(dst, src, bytes, src_bytes, __builtin_return_address(0));
}

extern "C" void kg_emu_cp_async_commit(void) { ++async_committed[cur->linear]; }

// cp.async.wait_group N: every committed group but the newest N has landed.
extern "C" void kg_emu_cp_async_wait(int pending) {
  const std::vector<AsyncCopy>& q = async_queue[cur->linear];
  const uint32_t done = async_committed[cur->linear] - std::min<uint32_t>(pending, async_committed[cur->linear]);
  size_t n = 0;
  while (n < q.size() && q[n].group < done) ++n;
  async_land(n, L->check);
}

extern "C" void kg_atomic_hook(const void* p, int size) { check_access(p, (unsigned)size, A_ATOMIC, true); }

extern "C" void kg_trap(const char* what) {
  if (!cur) abort();
  record(E_TRAP, cur->linear, "%s", what);
  fiber_fail();
}

extern "C" long long kg_clock(void) {
  static long long t = 0;
  return t += 16;
}

// A failed device-side assert() ends the launch with an error instead of aborting the process
// (the library is linked with -Bsymbolic, so the kernel's calls bind here, not to glibc).
extern "C" void __assert_fail(const char* expr, const char* file, unsigned line, const char* func) {
  if (!cur) {
    fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, func, expr);
    abort();
  }
  record(E_TRAP, cur->linear, "assert(%s) failed at line %u", expr, line);
  fiber_fail();
}

// ---- the launch --------------------------------------------------------------------------------
KG_API int kg_launch(const KgLaunch* launch, KgError* err) {
  memset(err, 0, sizeof *err);
  L = launch;
  E = err;
  failed = false;
  kg_gridDim = dim3(launch->grid[0], launch->grid[1], launch->grid[2]);
  kg_blockDim = dim3(launch->block[0], launch->block[1], launch->block[2]);
  nthreads = (int)(launch->block[0] * launch->block[1] * launch->block[2]);
  const int nwarps = (nthreads + 31) / 32;
  fibers.assign(nthreads, Fiber{});
  for (int i = 0; i < nthreads; ++i) {
    Fiber& f = fibers[i];
    f.linear = i; f.warp = i / 32; f.lane = i % 32;
    f.tid = uint3{(unsigned)(i % launch->block[0]), (unsigned)(i / launch->block[0] % launch->block[1]),
                  (unsigned)(i / (launch->block[0] * launch->block[1]))};
  }
  warp_epoch.assign(nwarps, 0);
  warp_live.assign(nwarps, 0);
  warp_arrived.assign(nwarps, 0);
  order.resize(nthreads);
  for (int i = 0; i < nthreads; ++i) order[i] = launch->order == 1 ? nthreads - 1 - i : i;
  rng_state = launch->seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  slots.clear();
  smem_next = align_up(launch->shared_bytes, 16) + (launch->check ? REDZONE : 0);
  smem_used = 0;
  stacks = (char*)launch->stacks;
  stacks_size = launch->stack_bytes;
  stacks_count = launch->stack_count;
  if (!stacks || (size_t)nthreads > stacks_count) {
    record(E_RESOURCES, -1, "no fiber stacks for %d threads", nthreads);
    return err->kind;
  }
  if (!map_smem()) {
    record(E_RESOURCES, -1, "cannot map %zu bytes of shared memory", SMEM_ARENA);
    return err->kind;
  }
  if (nfile_slots > MAX_FILE_SLOTS) {
    record(E_RESOURCES, -1, "more than %d file-scope __shared__ variables", MAX_FILE_SLOTS);
    return err->kind;
  }
  if (launch->shared_bytes + file_used > SMEM_LIMIT) {
    record(E_RESOURCES, -1, "too much shared memory: %llu bytes dynamic (limit %llu)",
           (unsigned long long)launch->shared_bytes, (unsigned long long)SMEM_LIMIT);
    return err->kind;
  }
  if (launch->check && !shadow) shadow = (Shadow*)calloc(SMEM_ARENA / KG_SHADOW_GRAIN, sizeof(Shadow));
  if (launch->check && !async_owner) async_owner = (uint16_t*)calloc(SMEM_ARENA / KG_SHADOW_GRAIN, sizeof(uint16_t));
  if (launch->check && nimage_segs < 0) find_image();

  const uint64_t nblocks = (uint64_t)launch->grid[0] * launch->grid[1] * launch->grid[2];
  std::vector<uint64_t> block_order;
  if (launch->order == 2) {  // blocks in a seeded random order too: they are unordered on a GPU
    block_order.resize(nblocks);
    for (uint64_t k = 0; k < nblocks; ++k) block_order[k] = k;
    for (uint64_t k = nblocks; k > 1; --k) std::swap(block_order[k - 1], block_order[next_random() % k]);
  }
  install_handlers();
  in_launch = 1;
  as_thread = -1;
  if (sigsetjmp(fault_jmp, 1) == 0) {
    for (uint64_t k = 0; k < nblocks && !failed; ++k) {
      uint64_t b = launch->order == 1 ? nblocks - 1 - k : launch->order == 2 ? block_order[k] : k;
      kg_blockIdx = uint3{(unsigned)(b % launch->grid[0]), (unsigned)(b / launch->grid[0] % launch->grid[1]),
                          (unsigned)(b / ((uint64_t)launch->grid[0] * launch->grid[1]))};
      memset(smem, 0xff, smem_next);
      if (smem_top < SMEM_ARENA) memset(smem + smem_top, 0xff, SMEM_ARENA - smem_top);
      if (!run_block()) break;
    }
  }
  in_launch = 0;
  cur = nullptr;
  async_reset(0);
  restore_handlers();
  fflush(stdout);
  L = nullptr;
  return err->kind;
}

KG_API int kg_abi_version(void) { return 1; }

#include "banks.hpp"

// One row read of an emulated ldmatrix (templates/common/mma.cuh): `bytes` at `p`, counted by the race
// check as a read by lane `src_lane` of the warp, the lane that supplied the row's address (on the GPU
// the warp fetches the rows its lanes address; the receiving lane's program order does not cover it).
extern "C" unsigned kg_emu_ldmatrix_read(const void* p, int bytes, int src_lane) {
  bank_access(p, (unsigned)bytes, A_READ, __builtin_return_address(0), true);
  if (L && L->check && cur) {
    as_thread = cur->warp * 32 + (src_lane & 31);
    check_access(p, (unsigned)bytes, A_READ, true);
    as_thread = -1;
  }
  unsigned v = 0;
  memcpy(&v, p, (size_t)bytes);
  return v;
}

// ---- the check-mode hooks that g++ -fsanitize=thread calls ---------------------------------------
// KG_SITE: the access's instruction (the hook's return address), which banks.hpp groups lanes by.
#define KG_SITE(p, N, access) bank_access(p, N, access, __builtin_return_address(0), true)
extern "C" {
void __tsan_init(void) {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}
#define KG_HOOKS(N)                                                                                       \
  void __tsan_read##N(void* p) { KG_SITE(p, N, A_READ); check_access(p, N, A_READ, true); }               \
  void __tsan_write##N(void* p) { KG_SITE(p, N, A_WRITE); check_access(p, N, A_WRITE, true); }            \
  void __tsan_unaligned_read##N(void* p) { KG_SITE(p, N, A_READ); check_access(p, N, A_READ, false); }    \
  void __tsan_unaligned_write##N(void* p) { KG_SITE(p, N, A_WRITE); check_access(p, N, A_WRITE, false); } \
  void __tsan_volatile_read##N(void* p) { KG_SITE(p, N, A_READ); check_access(p, N, A_READ, true); }      \
  void __tsan_volatile_write##N(void* p) { KG_SITE(p, N, A_WRITE); check_access(p, N, A_WRITE, true); }
KG_HOOKS(1) KG_HOOKS(2) KG_HOOKS(4) KG_HOOKS(8) KG_HOOKS(16)
#undef KG_HOOKS
void __tsan_read_range(void* p, size_t n) { if (n) check_access(p, (unsigned)n, A_READ, false); }
void __tsan_write_range(void* p, size_t n) { if (n) check_access(p, (unsigned)n, A_WRITE, false); }
}
