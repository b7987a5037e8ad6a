"""Memory traffic per warp request on the CPU emulator (kernelgen.emulate.traffic): shared-memory bank
conflicts counted as the hardware's wavefronts, global sectors per request, and what each ladder's
storage-alignment, staging and vectorising step removes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import kernelgen as kg
from kernelgen.emulate.traffic import profile, run
from kernelgen.ops.base import Kernel, Launch, Plan, Problem, Scalar
from kernelgen.ops.transpose import shared_conflicts
from kernelgen.schedule import Schedule

pytestmark = pytest.mark.emulate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from transpose_ladder import LADDER  # noqa: E402

# One warp reads shared memory in each pattern: lane l reads word `idx(l)` as a T (the stride in Ts).
PATTERNS = r"""
template <class T>
__device__ void pattern(const float* x, float* y, int stride, int mode) {
  __shared__ __align__(16) float s[32 * 32 * 4 + 64];
  const int l = threadIdx.x;
  for (int i = l; i < 32 * 32 * 4 + 64; i += 32) s[i] = x[i];
  __syncthreads();
  int e = mode == 0 ? l * stride : mode == 1 ? 0 : (l % 2) * stride;   // 0 strided, 1 broadcast, 2 two words
  const T v = reinterpret_cast<const T*>(s)[e];
  float sum = 0.0f;
  for (int k = 0; k < (int)(sizeof(T) / 4); ++k) sum += reinterpret_cast<const float*>(&v)[k];
  y[l] = sum;
}
extern "C" __global__ void f1(const float* x, float* y, int stride, int mode) { pattern<float>(x, y, stride, mode); }
extern "C" __global__ void f2(const float* x, float* y, int stride, int mode) { pattern<float2>(x, y, stride, mode); }
extern "C" __global__ void f4(const float* x, float* y, int stride, int mode) { pattern<float4>(x, y, stride, mode); }
"""


def pattern_ways(symbol: str, stride: int, mode: int = 0):
    kern = Kernel("test", symbol, Schedule("test"), (), "", ())
    plan = Plan(kern, Problem((("n", 1),)), (Launch(symbol, (1, 1, 1), (32, 1, 1), ("x", "y", "stride", "mode")),),
                scalars=(Scalar("stride", "int", stride), Scalar("mode", "int", mode)))
    x = np.arange(32 * 32 * 4 + 64, dtype=np.float32)
    t = run(plan, PATTERNS, {"x": x, "y": np.zeros(32, np.float32)})
    s = t.shared("load", "s")
    return s.ways, s.units, s.requests


@pytest.mark.parametrize("symbol, stride, mode, want", [
    ("f1", 1, 0, (1, 1)), ("f1", 2, 0, (2, 2)), ("f1", 32, 0, (32, 32)), ("f1", 33, 0, (1, 1)),
    ("f1", 5, 1, (1, 1)),                      # every lane reads one word: a broadcast
    ("f1", 32, 2, (2, 2)),                     # two words of one bank, each read by 16 lanes
    ("f2", 1, 0, (1, 2)),                      # 64-bit: two phases of 16 lanes, 128 bytes each
    ("f2", 2, 0, (2, 4)),                      # 16 lanes x 16 bytes apart: each bank twice per phase
    ("f4", 1, 0, (1, 4)),                      # 128-bit: four phases of 8 lanes
    ("f4", 2, 0, (2, 8)),
    ("f4", 8, 0, (8, 32)),                     # 8 lanes 128 bytes apart: one bank group, 8 words
])
def test_wavefronts_of_a_warp_request_follow_the_hardware_rules(symbol, stride, mode, want):
    ways, waves, requests = pattern_ways(symbol, stride, mode)
    assert requests == 1 and (ways, waves) == want


def transpose_traffic(sched, dtype="float32", size=(64, 64)):
    op = kg.get_op("transpose")
    return profile(op, sched, op.problem({"M": size[0], "N": size[1]}, dtype=dtype))


def test_transpose_ladder_storage_alignment_removes_the_32_way_column_reads():
    steps = list(LADDER.values())
    naive, staged, padded, _, vec4 = [transpose_traffic(s) for s in steps]
    assert naive.shared("load") is None and naive.shared("store") is None
    assert (staged.shared("store", "tile").ways, staged.shared("load", "tile").ways) == (1, 32)
    assert staged.shared("load", "tile").avg == 32.0
    assert (padded.shared("store", "tile").ways, padded.shared("load", "tile").ways) == (1, 1)
    assert (vec4.shared("store", "tile").ways, vec4.shared("load", "tile").ways) == (1, 1)
    # global: staging makes the stores coalesced (4 sectors per 128-byte warp row instead of 32)
    assert naive.global_("store", "out").avg == 32 and staged.global_("store", "out").avg == 4
    assert naive.global_("load", "x").avg == staged.global_("load", "x").avg == 4
    # float4 rows: a quarter of the requests for the same bytes, on both sides
    for access, name in (("load", "x"), ("store", "out")):
        a, b = padded.global_(access, name), vec4.global_(access, name)
        assert b.requests * 4 == a.requests and b.units == a.units


@pytest.mark.parametrize("dtype, tile, rows, vec, pad", [
    ("float32", 32, 8, 1, 0), ("float32", 32, 8, 1, 1), ("float32", 32, 8, 4, 1), ("float32", 64, 16, 4, 1),
    ("float16", 32, 8, 1, 0), ("float16", 32, 8, 1, 1), ("float16", 32, 8, 1, 2), ("float16", 64, 16, 8, 2),
])
def test_transpose_conflicts_match_the_analytic_count(dtype, tile, rows, vec, pad):
    op = kg.get_op("transpose")
    sched = op.schedule(tile=tile, rows=rows, vec=vec, pad=pad, staged=True)
    t = transpose_traffic(sched, dtype, (tile, tile))
    itemsize = np.dtype(dtype).itemsize
    assert (t.shared("store", "tile").ways, t.shared("load", "tile").ways) == shared_conflicts(tile, rows, vec, pad,
                                                                                              itemsize)


def test_staged_load_padding_removes_the_store_conflicts():
    op = kg.get_op("staged_load")
    bound = op.ladder()[-1].schedule                       # pad 1, 256 threads, float4
    knobs = op.knobs_from_schedule(bound)
    problem = op.problem({"n": 2048})     # whole tiles: lanes that loop a different number of times are not grouped
    padded = profile(op, bound, problem)
    for vec, ways in ((4, 8), (1, 32)):
        unpadded = profile(op, op.schedule_from_knobs(**dict(knobs, pad=0, vec=vec)), problem)
        assert unpadded.shared("store").ways == ways and unpadded.shared("store").avg == ways
    assert padded.shared("store").ways == 1 and padded.shared("load").avg == 1.0
    # float4 loads of x: a quarter of the requests of the scalar ones
    scalar = profile(op, op.schedule_from_knobs(**dict(knobs, vec=1)), problem)
    assert padded.global_("load", "x").requests * 4 == scalar.global_("load", "x").requests


def sgemm_tiles(traffic):
    """(A tile, B tile) statistics by direction: A is staged first in the dynamic shared memory."""
    names = {s.name for s in traffic.stats if s.space == "shared"}
    names = sorted(names, key=lambda n: int(n.split()[-1].split("-")[0]))
    assert len(names) == 2, names
    return [{a: traffic.shared(a, n) for a in ("load", "store")} for n in names]


def test_sgemm_padded_a_tile_removes_its_store_conflicts():
    op = kg.get_op("sgemm")
    step = next(s for s in op.ladder() if "A transposed in shared memory" in s.title)
    knobs = op.knobs_from_schedule(step.schedule)
    assert knobs["pad_a"] == 0 and knobs["a_layout"] == "km"
    problem = op.problem({"M": 64, "N": 64, "K": 16})
    a0, b0 = sgemm_tiles(profile(op, step.schedule, problem))
    a4, b4 = sgemm_tiles(profile(op, op.schedule_from_knobs(**dict(knobs, pad_a=4)), problem))
    # A is stored transposed (As[k][m]): unpadded, lanes 2r and 2r+1 write one bank; padded by 4, none do
    assert (a0["store"].ways, a4["store"].ways) == (2, 1)
    assert a0["load"].ways == a4["load"].ways == 1        # float4 reads of a k row: conflict-free either way
    assert b0["store"].ways == b4["store"].ways == 1
    # the ladder's next step (strided runs of 4) takes B's 2-way float4 reads away too
    nxt = op.ladder()[op.ladder().index(step) + 1]
    a, b = sgemm_tiles(profile(op, nxt.schedule, problem))
    assert b0["load"].ways == 2 and max(s.ways for s in (*a.values(), *b.values())) == 1


def test_cli_run_banks_prints_each_array():
    from click.testing import CliRunner
    from kernelgen.cli import main
    r = CliRunner().invoke(main, ["run", "transpose", "--step", "2", "--size", "M=64,N=64", "--backend", "emulate",
                                  "--banks"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "traffic  tile (shared): loads 32-way (avg 32.0, 128 requests), stores 1-way" in r.output
    assert "traffic  out (global): stores 4.0 sectors/request" in r.output


@pytest.mark.nvrtc
def test_inspect_banks_prints_the_counts_beside_the_sass_facts():
    from click.testing import CliRunner
    from kernelgen.cli import main
    args = ["inspect", "transpose", "--step", "2", "--banks", "--size", "M=64,N=64"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "registers" in r.output and "traffic on the emulator, M=64,N=64" in r.output
    assert "selected: tile (shared): loads 32-way (avg 32.0, 128 requests), stores 1-way" in r.output
    r = CliRunner().invoke(main, args + ["--json"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.output.splitlines()[0])
    loads = next(t for t in row["traffic"] if (t["space"], t["access"]) == ("shared", "load"))
    assert (loads["name"], loads["ways"], loads["conflicts"]) == ("tile", 32, 31 * 128)
    r = CliRunner().invoke(main, ["inspect", "transpose", "--size", "M=64,N=64"])
    assert r.exit_code == 2 and "--size is read only with --banks" in r.output


# -- NVCC's vectoriser (kernelgen/emulate/vectorize.hpp) and the saved Nsight Compute run ---------------------------
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import banks_ncu  # noqa: E402

SAVED_NCU = Path(__file__).resolve().parent.parent / "bench_results" / "2026-11-23-s4" / "banks_ncu.json"
# ncu's own, not the emulator's: SGEMM step 3's ptxas re-loads 7 of A's values per k tile with scalar LDS after
# the LDS.128 that fetched them (its SASS: 16 LDS.128 + 15 LDS a tile, the source needs 16 + 8).
PTXAS_RELOADS = {("sgemm", 3): 7}


def test_ladder_counts_agree_with_the_saved_ncu_run():
    """Every ladder step at bench/banks_ncu.py's sizes against the H100 run in bench_results: the same shared
    requests (NVCC's vectors: staged_load step 1's loops become LDS.128/STS.128, steps 2-4's stay scalar), and
    per-request figures and bank conflicts within 2% (staged_load step 5's 18 and 70 conflicts are within 2% of
    its wavefronts: no address makes them, as every block touches the same shared offsets and 4 blocks divide
    neither 18 nor 70)."""
    saved = banks_ncu.saved_ncu(str(SAVED_NCU))
    requests = "smsp__inst_executed_op_shared_ld.sum"
    for op, i, step in banks_ncu.steps():
        ours, theirs = banks_ncu.emulator_counts(op, step), saved[(op.name, i)]
        reloads = PTXAS_RELOADS.get((op.name, i))
        if reloads is None:
            assert banks_ncu.agree(ours, theirs), (op.name, i, banks_ncu.per_request(ours),
                                                   banks_ncu.per_request(theirs))
            for metric in (requests, "smsp__inst_executed_op_shared_st.sum"):
                assert ours[metric] == theirs[metric], (op.name, i, metric)
            continue
        warp_tiles = (256 // 64) ** 2 * (64 * 64 // 8 // 32) * (64 // 8)     # blocks x warps x k tiles
        assert theirs[requests] - ours[requests] == reloads * warp_tiles


SASS_WIDTH = {"LDS": 4, "LDS.64": 8, "LDS.128": 16}


@pytest.mark.nvrtc
@pytest.mark.parametrize("step", range(2, 10))
def test_sgemm_shared_load_widths_are_the_sass_ones(step, monkeypatch):
    """The widths the emulator's vectoriser gives SGEMM's shared loads are those of the LDS in NVCC's SASS: the
    scalar reads of an A row become LDS.128 from step 2 on, B's stay scalar until its 8 columns are a thread's.
    NVRTC's SASS for one source is not the same in every fresh compile (bench/sass_check.py): step 4's once held
    scalar re-loads of LDS.128 values in CI (ptxas' own, as step 3's always do), so a mismatch is compiled
    afresh twice more and the widths must match one of the three."""
    from kernelgen.compile import compile_cuda
    from kernelgen.inspect import _OPCODE, _functions
    from kernelgen.render import render
    op = kg.get_op("sgemm")
    sched = op.ladder()[step - 1].schedule
    kernel = op.kernel(sched)
    t = profile(op, sched, op.problem({"M": 256, "N": 128, "K": 32}))
    ours = {b for s in t.stats if (s.space, s.access) == ("shared", "load") for b, _ in s.widths}
    seen = []
    for attempt in range(3):
        if attempt:
            monkeypatch.setenv("KERNELGEN_NO_CACHE", "1")
        # the kernel the emulator runs (the sizes are vector-aligned), not its _unaligned twin
        main = _functions(compile_cuda(render(kernel), "sm_90", kernel.name).cubin)[kernel.name]
        seen.append({SASS_WIDTH[m.group(1)] for line in main if (m := _OPCODE.search(line)) and m.group(1) in SASS_WIDTH})
        if ours == seen[-1]:
            return
    assert ours == seen[0], seen


def test_sgemm_vectorised_a_row_reads_cost_what_ncu_counts():
    """Step 2: each thread reads its A row 32 times, one float a time, every lane of a warp the same row: NVCC makes
    8 LDS.128 of them, each a uniform 16-byte load of 2 wavefronts (lanes that pair up on one address return two
    lanes' data a wavefront); B's 32 reads stay scalar, 1 wavefront each: 48 wavefronts for 40 requests (ncu: 1.2)."""
    op = kg.get_op("sgemm")
    a, b = sgemm_tiles(profile(op, op.ladder()[1].schedule, op.problem({"M": 64, "N": 64, "K": 32})))
    assert a["load"].widths == ((16, a["load"].requests),) and b["load"].widths == ((4, b["load"].requests),)
    assert b["load"].requests == 4 * a["load"].requests
    assert (a["load"].units, b["load"].units) == (2 * a["load"].requests, b["load"].requests)
    assert a["load"].conflicts == b["load"].conflicts == 0


def test_sgemm_ladder_storage_alignment_removes_the_load_conflicts():
    """Steps 4 and 5 read B (step 5: A transposed too) with conflicting 16-byte loads; step 6 spaces each thread's
    runs of 4 by BM/2 and pads A's rows, after which no step has a shared-memory bank conflict."""
    op = kg.get_op("sgemm")
    problem = op.problem({"M": 256, "N": 128, "K": 32})
    conflicts = []
    for step in op.ladder()[3:]:
        t = profile(op, step.schedule, problem)
        conflicts.append(tuple(sum(s.conflicts for s in t.stats if (s.space, s.access) == ("shared", a))
                               for a in ("load", "store")))
    assert conflicts[0][0] > 0 and conflicts[1][0] > 0 and conflicts[1][1] > 0     # steps 4, 5
    assert all(c == (0, 0) for c in conflicts[2:]), conflicts                        # steps 6-9
