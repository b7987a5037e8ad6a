"""What is specific to sgemm: the layouts a split describes, legality messages, the launch plan, SASS
facts of the ladder (128-bit accesses exactly where vectorised), and edge sizes on the emulator/GPU."""
import numpy as np
import pytest

from kernelgen import get_op, render, schedule
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.ops.sgemm_cost import STREAM_K_PREFETCHES
from kernelgen.target import Target, target
from kernelgen.validate import validate

op = get_op("sgemm")
STEPS = op.ladder()
VECTORISED = [i for i, s in enumerate(STEPS) if op.knobs_from_schedule(s.schedule).get("vec_b", 1) == 4]


def kernel_of(**knobs):
    return op.kernel(op.schedule(**knobs))


def all_facts(sched) -> dict:
    """{symbol: facts}: vectorised schedules hold a kernel for aligned rows, one for any (_unaligned), and one for
    each size alone at any value (_unaligned_k, _unaligned_n)."""
    k = op.kernel(sched)
    return {f.symbol: f for f in facts_of(compile_cuda(render(k), "sm_90", k.name))}


def facts(sched):
    return all_facts(sched)[op.kernel(sched).name]


# -- schedules and knobs --------------------------------------------------------------------------
@pytest.mark.parametrize("layout,split_i,thread_loop", [
    ("contiguous", (128, 8), "i.1"), ("strided", (128, 64, 4), "i.2"), ("warp", (128, 64, 32, 4), "i.3")])
def test_the_loop_bound_to_threads_decides_the_layout(layout, split_i, thread_loop):
    warp = layout == "warp"
    s = op.schedule_from_knobs(**dict(op.default_knobs(), layout=layout, bm=128, bn=128, tm=8, tn=8,
                                      wm=64 if warp else 0, wn=32 if warp else 0))
    assert s.steps[0].factors == split_i
    assert ("bind", thread_loop, "lane" if warp else "threadIdx.y") in [(t.prim, *t.args()) for t in s.steps]
    knobs = op.knobs_from_schedule(s)
    assert (knobs["layout"], knobs["tm"], knobs["tn"]) == (layout, 8, 8)
    one = op.knobs_from_schedule(schedule("sgemm").split("i", 32).split("j", 32))
    assert (one["layout"], one["tm"], one["bm"]) == ("contiguous", 1, 32)


def test_ladder_follows_the_seed_notes():
    titles = [s.title for s in STEPS]
    assert titles[0].startswith("naive") and "shared" in titles[1] and "double buffering" in titles[7]
    knobs = [op.knobs_from_schedule(s.schedule) for s in STEPS]
    assert [k["shared"] for k in knobs[:2]] == [False, True]
    assert [k["layout"] for k in knobs[5:8]] == ["strided", "warp", "warp"]
    assert knobs[7]["stages"] == 2 and knobs[6]["stages"] == 1
    assert STEPS[-1].schedule == op.default_schedule()


@pytest.mark.parametrize("change,message", [
    (dict(tm=8, tn=8, bm=128, bn=128, wm=64, wn=64), "a warp tile holds 32 thread tiles, this one 64"),
    (dict(copy="cp_async", stages=3, a_layout="km", vec_a=4), "cp.async cannot transpose"),
    (dict(copy="sync", stages=3), "at most 2 stages"),
    (dict(copy="cp_async", stages=1, vec_a=1), "2..4 stages"),
    (dict(layout="contiguous", wm=0, wn=0, bm=256, bn=256, tm=4, tn=4), "4096 threads"),
    (dict(layout="strided", wm=0, wn=0, tm=2), "tm=2.*the strided layout gives a thread runs of 4 adjacent rows"),
    (dict(shared=False), "one element"),
    (dict(vec_c=4, layout="contiguous", wm=0, wn=0, bn=128, tn=2), "a run of 2 adjacent columns"),
    (dict(bk=32, stages=2, bm=256, bn=256, tm=16, tn=16, wm=128, wn=64), "registers"),
    (dict(min_blocks=2), "registers per thread"),
])
def test_illegal_schedules_say_why_with_the_numbers(change, message):
    with pytest.raises(ScheduleError, match=message):
        kernel_of(**change)


def test_steps_the_kernel_cannot_honour_are_rejected():
    s = op.default_schedule()
    with pytest.raises(ScheduleError, match="no use for this step"):
        op.kernel(s.reorder("k.0", "i.0"))
    with pytest.raises(ScheduleError, match="same layout"):
        op.kernel(schedule("sgemm").split("i", 128, 8).split("j", 128, 64, 4))
    with pytest.raises(ScheduleError, match="run of 4"):
        op.kernel(schedule("sgemm").split("i", 128, 64, 8).split("j", 128, 64, 8))
    with pytest.raises(ScheduleError, match=r"double_buffer\(B\): 1 .*knob stages sets A and B alike; double_buffer\(A\) is 2"):
        op.kernel(schedule("sgemm").cache_read("A", "shared").cache_read("B", "shared").split("k", 8)
                  .double_buffer("A", 2).double_buffer("B", 1))
    with pytest.raises(ScheduleError, match=r"cache_read\(B\): None .*knob shared sets A and B alike; cache_read\(A\) is 'shared'"):
        op.kernel(schedule("sgemm").cache_read("A", "shared"))
    with pytest.raises(ScheduleError, match="blockIdx.y"):
        op.kernel(schedule("sgemm").split("i", 128, 8).bind("i.0", "blockIdx.x"))


def test_shared_memory_beyond_the_device_is_an_error():
    k = dict(op.default_knobs(), bk=32, copy="cp_async", stages=4, vec_a=1)
    op.kernel(op.schedule_from_knobs(**k))                          # 4 x (32x132 + 32x256) floats = 194 KiB
    with pytest.raises(ScheduleError, match="bytes of shared memory"):
        op.kernel(op.schedule_from_knobs(**k), Target(max_smem=100 * 1024))


# -- plans ----------------------------------------------------------------------------------------
def test_plan_covers_the_matrix_with_runtime_sizes():
    k = op.kernel(op.default_schedule())
    plan = op.plan(k, op.problem({"M": 1000, "N": 3000, "K": 7}))
    (launch,) = plan.launches
    assert launch.grid == (24, 4, 1) and launch.block == (256, 1, 1)
    assert launch.args == ("A", "B", "C", "M", "N", "K")
    assert launch.symbol == k.name + "_unaligned_k"              # K = 7: rows of A at any offset, B's and C's aligned
    symbol = lambda **s: op.plan(k, op.problem(dict(M=1000, **s))).launches[0].symbol
    assert symbol(N=3000, K=8) == k.name
    assert symbol(N=35, K=8) == k.name + "_unaligned_n"          # B's and C's rows at any offset, A's aligned
    assert symbol(N=35, K=7) == k.name + "_unaligned"
    assert launch.shared_bytes == k.static_smem == 4 * 2 * (8 * 260 + 8 * 128)
    assert dict(plan.alignment) == {"A": 16, "B": 16, "C": 16}
    assert "1000" not in render(k) and "3000" not in render(k)
    naive = op.plan(op.kernel(STEPS[0].schedule), op.problem({"M": 33, "N": 17, "K": 5}))
    assert naive.launches[0].grid == (2, 3, 1) and naive.launches[0].block == (16, 16, 1) and naive.alignment == ()
    with pytest.raises(UsageError, match="block rows"):
        op.plan(k, op.problem({"M": 256 * 70000, "N": 1, "K": 1}))


def test_inputs_are_small_integers_so_the_check_is_exact():
    p = op.problem({"M": 5, "N": 7, "K": 3000})
    inputs = op.make_inputs(p, np.random.default_rng(0))
    assert all(np.array_equal(v, np.round(v)) and np.abs(v).max() <= 3 for v in inputs.values())
    ref = op.reference(inputs, p)["C"]
    assert op.tolerance(p) == 0.5 and op.error("C", ref.astype(np.float32), ref, inputs, p) == 0.0
    off = ref.astype(np.float32)
    off[4, 6] += 1
    assert op.error("C", off, ref, inputs, p) == 1.0


def test_schedule_for_follows_the_regimes():
    # rules of the cost model (kernelgen/ops/sgemm_cost.py), not a table of picks
    pick = lambda m, n, k: op.knobs_from_schedule(op.schedule_for(op.problem({"M": m, "N": n, "K": k})))
    assert op.schedule_for(op.problem()) == op.default_schedule()          # 128 blocks fill one wave
    assert pick(2048, 8448, 4096) == pick(2048, 2048, 1024) == op.default_knobs()  # 4 whole waves; 128 tiles, one
    assert pick(4096, 4096, 4096) == dict(op.default_knobs(), stream_k=True)          # 512 tiles: 3.88 waves
    blocks = lambda k, m, n: -(-m // k["bm"]) * -(-n // k["bn"]) * k["split_k"]
    small = pick(1000, 1000, 1000)            # 16 default tiles for 132 SMs: smaller tiles or K in slices fill them
    assert blocks(small, 1000, 1000) >= 0.9 * 132 and (small["bm"] * small["bn"] < 256 * 128 or small["split_k"] > 1)
    long_k = pick(512, 16, 500000)                                           # K slices stream A at full speed
    assert long_k["bn"] <= 16 and long_k["split_k"] >= 16 and long_k["reduce_k"] == "workspace"
    assert pick(4096, 8, 100000)["bn"] == 8                                  # no columns computed for nothing
    assert pick(16, 5000, 4000)["bm"] <= 16
    assert pick(1, 1, 1)["split_k"] == pick(4096, 4096, 4096)["split_k"] == 1


def test_fitted_tiles_span_a_thin_side_no_power_of_two_fits():
    """A thin side of 17-24 or 33-48 gets a tile of the next multiple of 8 (8 threads of 3, 5 or 6), not 32 or 64;
    56 columns would save too little for threads of 7 (measured slower), powers of two need no fitting."""
    from kernelgen.ops.sgemm_cost import fitted_side
    assert [fitted_side(n) for n in (1, 16, 17, 20, 24, 25, 32, 33, 35, 44, 48, 49, 56, 63, 64, 100)] == \
        [0, 0, 24, 24, 24, 0, 0, 40, 40, 48, 48, 0, 0, 0, 0, 0]
    h100 = target("sm_90a")
    for layout in ("NN", "NT"):
        k = op.knobs_from_schedule(op.schedule_for(op.problem({"M": 8457, "N": 35, "K": 4096}, layout=layout), h100))
        assert (k["bn"], k["tn"], k["layout"], k["split_k"] > 1) == (40, 5, "contiguous", True), (layout, k)
    k = op.knobs_from_schedule(op.schedule_for(op.problem({"M": 40, "N": 3000, "K": 3000}, layout="TN"), h100))
    assert (k["bm"], k["tm"], k["layout"]) == (40, 5, "contiguous"), k
    k = op.knobs_from_schedule(op.schedule_for(op.problem({"M": 2000, "N": 56, "K": 2000}, layout="NT"), h100))
    assert k["bn"] == 64, k


def test_fitted_tiles_are_refused_where_their_threads_cannot_hold_them():
    # a fitted side is a whole number of thread tiles, and the warp layout's runs of 4 do not take threads of 5
    with pytest.raises(ScheduleError, match=r"\(40, 3\) is illegal .*the thread tile 3 divides the block tile 40"):
        kernel_of(layout="contiguous", wm=0, wn=0, bm=64, tm=4, bn=40, tn=3, vec_c=1)
    with pytest.raises(ScheduleError, match="vectorize.*a vector of C lies in a run of 5 adjacent columns"):
        kernel_of(layout="contiguous", wm=0, wn=0, bm=64, tm=4, bn=40, tn=5, vec_c=4)
    with pytest.raises(ScheduleError, match="tn=5.* runs of 4 adjacent columns.*layout contiguous"):
        kernel_of(bm=64, bn=40, wm=32, wn=8, tm=4, tn=5, vec_c=1)
    with pytest.raises(ScheduleError, match="tm=6.*strided layout gives a thread runs of 4 adjacent rows"):
        kernel_of(layout="strided", wm=0, wn=0, bm=48, tm=6, bn=64, tn=8)
    # a split written by hand names its own factors
    code = op.schedule(layout="strided", wm=0, wn=0, bm=256, tm=8).to_python()
    with pytest.raises(ScheduleError, match=r"\(256, 96, 4\) is illegal .*the run stride S divides the block extent"):
        op.kernel(eval(code.replace('split("i", 256, 128, 4)', 'split("i", 256, 96, 4)'), {"schedule": schedule}))


def test_schedule_for_is_legal_at_every_size():
    # prepared against the target without compiling: the kernel's checks and the plan's, at sizes of 1,
    # odd sizes (the element-wise twin), sizes past a tile, and at the dims' limits
    values = (1, 3, 17, 33, 1000, 4097)
    sizes = [(m, n, k) for m in values for n in values for k in values]
    sizes += [(16776960, 1, 1), (16776960, 3, 7), (1, 2**31 - 257, 1), (7, 7, 2**31 - 257), (65536, 65536, 3)]
    tgt = target("sm_90")
    cases = [(s, "NN") for s in sizes] + [(s, lay) for s in sizes[::7] for lay in ("NT", "TN", "TT")]
    for (m, n, k), layout in cases:
        p = op.problem({"M": m, "N": n, "K": k}, layout=layout)
        kernel = op.kernel(op.schedule_for(p, tgt), tgt, None, layout)
        plan = op.plan(kernel, p, tgt)
        assert plan.launches[0].grid[2] == kernel.knob("split_k")
        tile = op.k_tile(dict(kernel.knobs))        # bk, or the dot layout's chunk of K
        slices = sum(1 for z in range(kernel.knob("split_k")) if z * -(-k // (kernel.knob("split_k") * tile)) * tile < k)
        assert slices == kernel.knob("split_k"), ((m, n, k), "no slice of K is empty")


def test_regimes_probe_plans_its_candidates_without_a_gpu():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "bench" / "sgemm_regimes_probe.py"
    spec = importlib.util.spec_from_file_location("sgemm_regimes_probe", path)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    for shape in probe.SHAPES:
        found = probe.plan_candidates(op, op.problem(dict(zip("MNK", shape))), target("sm_90a"))
        assert found[0]["label"] == "schedule_for" and len(found) >= 4, shape
        assert len({probe.knob_key(c["knobs"]) for c in found}) == len(found)
        for c in found:
            op.kernel(op.schedule_from_knobs(**c["knobs"]), target("sm_90a"))


# -- SASS -----------------------------------------------------------------------------------------
@pytest.mark.nvrtc
@pytest.mark.parametrize("step", range(len(STEPS)), ids=lambda i: f"step{i + 1}")
def test_sass_shows_128_bit_accesses_exactly_where_vectorised(step):
    name = op.kernel(STEPS[step].schedule).name
    found = all_facts(STEPS[step].schedule)
    mixed = op.knobs_from_schedule(STEPS[step].schedule)["min_blocks"] == 1     # else capped registers: two ends
    twins = ({"", "_unaligned_k", "_unaligned_n", "_unaligned"} if mixed else {"", "_unaligned"}) \
        if step in VECTORISED else {""}
    assert set(found) == {name + t for t in twins}
    for f in found.values():
        assert f.spill_bytes == 0 and f.local_ops == 0, f
    f = found[name]
    if step in VECTORISED:
        assert f.ldg128 > 0 and f.stg128 > 0, f
        assert f.lds128 > 0, f                        # fragments: A transposed, B rows, 16 bytes a load
        u = found[name + "_unaligned"]                # rows at any offset: element-wise global accesses
        assert u.ldg128 == 0 and u.stg128 == 0 and u.lds128 > 0, u
        if mixed:   # one size at any value: the operands whose rows it does not measure keep their 128-bit accesses
            uk, un = found[name + "_unaligned_k"], found[name + "_unaligned_n"]
            assert 0 < uk.ldg128 < f.ldg128 and uk.stg128 == f.stg128, uk     # A (rows K long) alone element-wise
            assert un.ldg128 > 0 and un.stg128 == 0, un                       # B and C (rows N long) element-wise
    else:
        assert f.ldg128 == 0 and f.stg128 == 0, f


SLICED = dict(bm=128, split_k=8, reduce_k="workspace")      # 128x4096x4096's pick before 2026-11-25's s16


@pytest.mark.nvrtc
@pytest.mark.parametrize("sched, layout", [(op.default_schedule(), "NN"), (STEPS[7].schedule, "NN"),
                                           (op.schedule(**SLICED), "NN"), (op.schedule(**SLICED), "TN"),
                                           (op.schedule(**SLICED), "TT"), (op.schedule(**SLICED), "NT"),
                                           (op.schedule(stream_k=True), "NN"), (op.schedule(stream_k=True), "NT")],
                         ids=["default", "step8", "sliced-NN", "sliced-TN", "sliced-TT", "sliced-NT", "stream-k-NN",
                              "stream-k-NT"])
def test_prefetch_loads_overlap_the_math(sched, layout):
    # Register-staged double buffering only pays if the next tile's global loads issue before the
    # tile's FFMAs. ptxas once sank them next to their shared-memory stores at the loop's end (a
    # 40% slower SGEMM on the H100, with the same instruction mix): between every LDG and the next
    # STS (the loop read cyclically: ptxas may rotate it) lie nearly all of the loop's FFMAs. It did
    # so again in a K slice's tile (split_k > 1) of NN, TN and TT (128x4096x4096 at 8 slices: 125.5 us,
    # 107.0 pinned by a __syncwarp after the loads), and in stream-K tiles: with a GELU epilogue (1.4x slower;
    # sgemm_cost.stream_k_fits), and in TN, TT and NT's _unaligned_n twins (sgemm_cost.STREAM_K_PREFETCHES: the
    # twins it is picked for on a 256x128 tile are checked here).
    from kernelgen.inspect import hot_loops
    k = op.kernel(sched, layout=layout)
    loops = hot_loops(compile_cuda(render(k), "sm_90", k.name).cubin)
    twins = [k.name + t["suffix"] for t in dict(k.params)["twins"]]
    assert len(twins) == (4 if k.knob("min_blocks") == 1 else 2) or layout == "TT" and len(twins) == 8
    if k.knob("stream_k"):     # the twins the cost model takes stream-K for (in the others ptxas sank the loads)
        twins = [k.name + t for t in STREAM_K_PREFETCHES[layout]]
    for sym in twins:
        assert loops[sym], sym
        for ops in innermost(loops[sym]):
            total = sum(o.startswith("FFMA") for o in ops)
            for i in (i for i, o in enumerate(ops) if o.startswith("LDG")):
                after = ops[i + 1:] + ops[:i]
                until = next((j for j, o in enumerate(after) if o.startswith("STS")), len(after))
                covered = sum(o.startswith("FFMA") for o in after[:until])
                assert covered >= 0.9 * total, f"{sym}: LDG at {i} of {len(ops)} precedes {covered} of {total} FFMAs"


def innermost(loops: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The loops that hold no other: a stream-K kernel's loop over its units holds the tiles' K loops."""
    text = [" ".join(ops) for ops in loops]
    return [ops for ops, t in zip(loops, text) if not any(len(u) < len(t) and u in t for u in text)]


@pytest.mark.nvrtc
def test_cp_async_pipeline_and_register_cap_compile_as_asked():
    k = op.kernel(op.schedule(copy="cp_async", stages=3, vec_a=1))
    src = render(k)
    assert "kg_cp_async16" in src and "kg_cp_async_wait<1>" in src
    from kernelgen.inspect import _sass
    ops = _sass(compile_cuda(src, "sm_90", k.name).cubin)[k.name]
    assert any(o.startswith("LDGSTS") for o in ops), ops
    capped = facts(op.schedule(bm=128, bn=128, tm=8, tn=8, wn=32, min_blocks=2))
    assert capped.registers <= 128


# -- running --------------------------------------------------------------------------------------
VARIANTS = {
    "cp.async 3 stages, A transposed": dict(copy="cp_async", stages=3, vec_a=1),
    "cp.async 4 stages, A as in memory, bk 16": dict(copy="cp_async", stages=4, a_layout="mk", bk=16),
    "strided 64x64, float2 loads, no swizzle": dict(layout="strided", wm=0, wn=0, bm=64, bn=64, tm=8, tn=8,
                                                     vec_a=2, vec_b=2, vec_c=2, swizzle=1, pad_a=1),
    "contiguous 4x4, bk 16, partial unroll": dict(layout="contiguous", wm=0, wn=0, bm=64, bn=32, tm=4, tn=4,
                                                   bk=16, unroll_k=2, swizzle=4),
    "K in 3 slices added into a zeroed C, 128x128": dict(bm=128, bn=128, split_k=3),
    "K in 8 slices, cp.async (slices shorter than a tile)": dict(split_k=8, copy="cp_async", stages=3, vec_a=1),
    "K in 5 slices summed through a workspace, 64x64": dict(bm=64, bn=64, wm=32, wn=32, tm=4, tn=8, split_k=5,
                                                              reduce_k="workspace"),
}
SMALL_TILES = {   # the skinny families of schedule_for, with K in slices
    "8 columns a block, cp.async, 16 slices summed through a workspace":
        dict(bm=256, bn=8, wm=64, wn=8, tm=4, tn=4, copy="cp_async", stages=4, bk=16, a_layout="mk", split_k=16,
             reduce_k="workspace"),
    "16 rows a block, 3 slices added by atomics": dict(bm=16, bn=128, wm=16, wn=32, tm=4, tn=4, split_k=3),
    "8 rows a block, float2 stores, 2 slices through a workspace":
        dict(bm=8, bn=256, wm=8, wn=64, tm=4, tn=4, vec_c=2, split_k=2, reduce_k="workspace"),
    "40 columns fitted (threads of 5), 4 slices through a workspace":
        dict(layout="contiguous", wm=0, wn=0, bm=64, tm=4, bn=40, tn=5, vec_c=1, split_k=4, reduce_k="workspace"),
    "24 rows fitted (threads of 3), 2 slices added by atomics":
        dict(layout="contiguous", wm=0, wn=0, bm=24, tm=3, bn=128, tn=8, split_k=2),
    "48 columns fitted (threads of 6), float2 stores, K whole":
        dict(layout="contiguous", wm=0, wn=0, bm=128, tm=8, bn=48, tn=6, vec_c=2),
}
AWKWARD = [(1, 1, 1), (17, 33, 1), (33, 17, 33), (1, 17, 1000), (33, 1, 777), (17, 33, 2049)]   # K >> N too


@pytest.mark.emulate
@pytest.mark.parametrize("name", list(VARIANTS) + ["schedule_for"])
def test_variants_beyond_the_ladder_on_the_emulator(name):
    for sizes in op.test_problems():
        p = op.problem(sizes)
        sched = op.schedule_for(p) if name == "schedule_for" else op.schedule(**VARIANTS[name])
        v = validate(op, sched, p, backend="emulate", order="random", check=True)
        assert v.ok, (sizes, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("name", list(SMALL_TILES) + ["schedule_for"])
def test_small_tiles_and_workspace_split_k_at_awkward_sizes_on_the_emulator(name):
    for m, n, k in AWKWARD:
        p = op.problem({"M": m, "N": n, "K": k})
        sched = op.schedule_for(p) if name == "schedule_for" else op.schedule(**SMALL_TILES[name])
        v = validate(op, sched, p, backend="emulate", order="random", check=True)
        assert v.ok, ((m, n, k), v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("layout", ["NT", "TN", "TT"])
def test_small_tiles_and_workspace_split_k_in_transposed_layouts_on_the_emulator(layout):
    for name, m, n, k in (("16 rows a block, 3 slices added by atomics", 17, 33, 1000),
                          ("8 rows a block, float2 stores, 2 slices through a workspace", 33, 17, 33),
                          ("40 columns fitted (threads of 5), 4 slices through a workspace", 131, 35, 77),
                          ("24 rows fitted (threads of 3), 2 slices added by atomics", 20, 130, 41)):
        p = op.problem({"M": m, "N": n, "K": k}, layout=layout)
        for sched in (op.schedule(**SMALL_TILES[name]), op.schedule_for(p)):
            v = validate(op, sched, p, backend="emulate", order="random", check=True)
            assert v.ok, (name, (m, n, k), v.summary())


@pytest.mark.emulate
def test_cp_async_families_copy_a_stored_transposed_as_its_rows_lie_on_the_emulator():
    """A stored transposed (TN): the cp.async families take A's km tile (16-byte copies of its rows along M),
    sliced and ragged, races and bounds checked."""
    from kernelgen.ops.sgemm_cost import families
    layout = "TN"
    fams = {f.name: f.knobs for f in families(op, target("sm_90"), layout) if f.knobs["copy"] == "cp_async"}
    assert fams and all(k["a_layout"] == "km" and k["vec_a"] == 4 for k in fams.values()), fams
    for name, (m, n, k) in (("64x64/cp.async", (33, 70, 37)), ("16x256/cp.async", (17, 260, 100)),
                            ("64x64/cp.async", (64, 128, 64))):
        p = op.problem({"M": m, "N": n, "K": k}, layout=layout)
        v = validate(op, op.schedule_from_knobs(**dict(fams[name], split_k=2, reduce_k="workspace")), p,
                     backend="emulate", order="random", check=True)
        assert v.ok, (name, (m, n, k), v.summary())


def test_layouts_keep_the_families_their_copies_suit():
    """B stored transposed has no cp.async family (4-byte copies that transpose ran slower than the register-copied
    tiles); where several candidates tie (launch- and latency-bound), the one computing fewest rows past C wins."""
    from kernelgen.ops.sgemm_cost import families
    h100 = target("sm_90a")
    for layout in ("NT", "TT"):
        assert not [f.name for f in families(op, h100, layout) if f.knobs["copy"] == "cp_async"]
    for layout in ("NN", "NT", "TN", "TT"):
        k = op.knobs_from_schedule(op.schedule_for(op.problem({"M": 32, "N": 512, "K": 512}, layout=layout), h100))
        assert k["bm"] <= 64, (layout, k)


@pytest.mark.emulate
def test_workspace_sums_the_slices_in_a_fixed_order():
    # floats whose sum depends on the order: the workspace reduction gives the same bits on every run
    # (the emulator's block order is random), and K in slices never reads an unwritten slab (NaN)
    p = op.problem({"M": 33, "N": 17, "K": 300})
    sched = op.schedule(bm=64, bn=64, wm=32, wn=32, tm=4, tn=8, split_k=5, reduce_k="workspace")
    from kernelgen.prepared import prepare
    from kernelgen import emulate
    prep = prepare(op, sched, p)
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((33, 300)) * 10.0 ** rng.integers(-6, 6, (33, 300))).astype(np.float32)
    b = rng.standard_normal((300, 17)).astype(np.float32)
    outs = []
    for seed in (1, 2, 3):
        c = np.full((33, 17), np.nan, np.float32)
        emulate.execute(prep.plan, prep.source, {"A": a, "B": b, "C": c}, check=True, order="random", seed=seed)
        outs.append(c)
    assert all(np.array_equal(o, outs[0]) for o in outs)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.all(np.abs(outs[0] - ref) <= 300 * 2.0 ** -23 * (np.abs(a).astype(np.float64) @ np.abs(b)))


EDGE = [(1, 1, 1), (1, 1000, 3), (1000, 1, 1000), (129, 255, 1023), (1300, 67, 9), (2047, 2049, 1025),
        (256, 256, 256), (33, 8, 100001), (17, 5000, 4000), (3001, 63, 2000)]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["default", "schedule_for"] + list(VARIANTS) + list(SMALL_TILES))
def test_edge_sizes_on_the_gpu(name):
    from kernelgen import gpu
    for m, n, k in EDGE:
        p = op.problem({"M": m, "N": n, "K": k})
        sched = {"default": op.default_schedule(), "schedule_for": op.schedule_for(p, gpu.device())}.get(name)
        v = validate(op, sched or op.schedule(**dict(VARIANTS, **SMALL_TILES)[name]), p, backend="gpu")
        assert v.ok, ((m, n, k), v.summary())


@pytest.mark.gpu
def test_workspace_split_k_gives_the_same_bits_every_run_on_the_gpu():
    # floats whose sum depends on the order of additions: atomics may differ between runs, the
    # workspace reduction may not
    import cupy
    from kernelgen.prepared import launch
    p = op.problem({"M": 1000, "N": 16, "K": 200000})
    sched = op.schedule(bm=256, bn=16, wm=64, wn=16, tm=8, tn=4, split_k=32, reduce_k="workspace")
    rng = cupy.random.default_rng(0)
    a = rng.standard_normal((1000, 200000), dtype=cupy.float32)
    b = rng.standard_normal((200000, 16), dtype=cupy.float32)
    outs = []
    for _ in range(3):
        c = cupy.full((1000, 16), cupy.nan, dtype=cupy.float32)
        launch(op, sched, p, A=a, B=b, C=c)
        outs.append(cupy.asnumpy(c))
    assert all(np.array_equal(o, outs[0]) for o in outs)
    ref = cupy.asnumpy(a.astype(cupy.float64) @ b.astype(cupy.float64))
    assert np.abs(outs[0] - ref).max() <= 1e-3 * np.abs(ref).max()
