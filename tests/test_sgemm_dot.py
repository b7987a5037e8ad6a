"""SGEMM's dot layout (templates/sgemm_dot.cu.j2): a warp's lanes split K, for products x . W^T (layout NT) with
a side of C of 1-16. Its schedule and refusals, the held operand, the cost model's dot families, and its results
at awkward sizes on the emulator (every size, slices of K both ways, epilogues, batches) and on the GPU."""
import pytest

from kernelgen import get_op, render, schedule
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.ops.sgemm_cost import candidates, dot_rows, dot_side
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("sgemm")
DOT = dict(shared=False, layout="dot", wm=0, wn=0)
TILES = {   # thin M held (a warp row), thin N held (a warp column), a 2 x 4 grid of warps, prefetched or not
    "1 row held, 4 warps of 1x4, 2 chunks a trip, prefetched": dict(DOT, bm=1, tm=1, bn=16, tn=4, unroll_k=2),
    "16 rows held by 2 warp rows of 8x8, prefetched": dict(DOT, bm=16, tm=8, bn=32, tn=8, unroll_k=1),
    "16 rows held by one warp row of 16x4, 2 chunks, not prefetched": dict(DOT, bm=16, tm=16, bn=32, tn=4, stages=1,
                                                                             unroll_k=2),
    "8 columns held by 4 warps of 4x8, 4 chunks a trip": dict(DOT, bm=16, tm=4, bn=8, tn=8, stages=1, unroll_k=4),
    "3 of 4 rows: 4 rows held, split 3 ways into a workspace": dict(DOT, bm=4, tm=4, bn=8, tn=2, split_k=3,
                                                                   reduce_k="workspace"),
    "8 columns held, 2 slices added by atomics": dict(DOT, bm=32, tm=8, bn=8, tn=8, split_k=2),
}
# K of 1 (the tail alone), under a chunk, one chunk and one past, a trip of two and more; sides of 1 and past a tile
AWKWARD = [(1, 1, 1), (1, 67, 37), (5, 131, 128), (16, 33, 129), (3, 9, 256 + 4), (17, 2, 1000), (131, 5, 513),
           (40, 8, 777)]


def kernel_of(knobs, layout="NT"):
    return op.kernel(op.schedule(**knobs), target("sm_90"), None, layout)


def test_the_schedule_binds_k_to_lanes_and_sums_them_by_shuffles():
    s = op.schedule(**TILES["16 rows held by 2 warp rows of 8x8, prefetched"])
    assert s.to_python() == (
        'schedule("sgemm").split("i", 16, 8).bind("i.0", "blockIdx.y").bind("i.1", "warp").split("j", 32, 8)'
        '.bind("j.0", "blockIdx.x").bind("j.1", "warp").split("k", 128, 4).bind("k.1", "lane").reduction("k", "shuffle")'
        '.unroll("k.0", 1).double_buffer("A", 2).double_buffer("B", 2).swizzle(8)')
    k = op.knobs_from_schedule(s)
    assert (k["layout"], k["bm"], k["tm"], k["bn"], k["tn"], k["stages"]) == ("dot", 16, 8, 32, 8, 2)
    kern = kernel_of(TILES["16 rows held by 2 warp rows of 8x8, prefetched"])
    assert "_ldot_" in kern.name and kern.static_smem == 0 and op.threads(dict(kern.knobs)) == 256


@pytest.mark.parametrize("change,message", [
    (dict(layout_nt="NN"), r"both stored K-contiguous \(layout NT, x . W\^T\), not NN"),
    (dict(layout_nt="TN"), r"not TN"),
    (dict(stages=3), r"at most the stream's next trip in registers"),
    (dict(unroll_k=4, tm=16, tn=8, bm=16, bn=32), r"the dot tile needs ~\d+"),
])
def test_illegal_dot_schedules_say_why(change, message):
    knobs = dict(TILES["16 rows held by 2 warp rows of 8x8, prefetched"])
    layout = change.pop("layout_nt", "NT")
    knobs.update(change)
    with pytest.raises(ScheduleError, match=message):
        kernel_of(knobs, layout)


def test_hand_written_dot_steps_are_checked():
    base = op.schedule(**TILES["16 rows held by 2 warp rows of 8x8, prefetched"])
    text = base.to_python()
    for old, new, message in (('.split("k", 128, 4)', '.split("k", 64, 4)', r"\(128, 4\)"),
                              ('.reduction("k", "shuffle")', '', "their sums are added by shuffles"),
                              ('.split("k", 128, 4)', '.cache_read("A", "shared").cache_read("B", "shared").split("k", 128, 4)',
                               "nothing is staged")):
        bad = eval(text.replace(old, new), {"schedule": schedule})
        with pytest.raises(ScheduleError, match=message):
            op.knobs_from_schedule(bad)


def test_the_naive_kernel_refuses_slices_of_k():
    with pytest.raises(ScheduleError, match="the naive kernel sums each element's whole K in one thread"):
        op.kernel(op.schedule(shared=False, layout="contiguous", wm=0, wn=0, bm=16, bn=16, tm=1, tn=1, split_k=2))


@pytest.mark.parametrize("knobs,held", [(dict(bm=1, tm=1, bn=16, tn=4), "A"), (dict(bm=16, tm=4, bn=8, tn=8), "B"),
                                        (dict(bm=16, tm=8, bn=32, tn=8), "A"), (dict(bm=8, tm=8, bn=8, tn=4), "A")])
def test_the_held_operand_is_the_one_every_warp_of_the_block_reads(knobs, held):
    assert op.dot_held(dict(DOT, **knobs)) == held
    src = render(kernel_of(dict(DOT, **knobs)))
    assert f"{'B' if held == 'A' else 'A'} is streamed" in src and f"{held} held" in src


def test_dot_families_serve_thin_nt_products_only():
    h100 = target("sm_90a")
    assert [dot_side(s) for s in (1, 3, 5, 9, 16, 17, 64)] == [1, 4, 8, 16, 16, 0, 0]
    assert {k["bm"] for _, k, _ in dot_rows(16, 0)} == {16} and {k["bn"] for _, k, _ in dot_rows(0, 2)} == {2}
    for sizes in ({"M": 16, "N": 4096, "K": 4096}, {"M": 1, "N": 11008, "K": 4096}, {"M": 8192, "N": 8, "K": 4096}):
        pick = candidates(op, op.problem(sizes, layout="NT"), h100)[0]
        assert pick.family.startswith("dot"), (sizes, pick)
        assert not candidates(op, op.problem(sizes, layout="NN"), h100)[0].family.startswith("dot")
    wide = candidates(op, op.problem({"M": 64, "N": 4096, "K": 4096}, layout="NT"), h100)
    assert not any(c.family.startswith("dot") for c in wide)


@pytest.mark.nvrtc
def test_the_loads_are_128_bit_and_nothing_spills():
    for name, knobs in TILES.items():
        k = kernel_of(knobs)
        facts = {f.symbol: f for f in facts_of(compile_cuda(render(k), "sm_90", k.name))}
        f, loose = facts[k.name], facts[k.name + "_unaligned"]
        assert f.spill_bytes == 0 and loose.spill_bytes == 0, (name, f, loose)
        if f.ldg128 is None:
            pytest.skip("this nvdisasm cannot read sm_90 SASS")
        # the loads of the loops over whole chunks, 128-bit (ptxas may copy a loop, never narrow its loads): the
        # stream's (ns rows) first trip and next trips where prefetched, else each trip's, and the held rows' (nh)
        # each trip; then single chunks (a trip of several, or none prefetched). The partial chunk's are element-wise.
        kn = dict(op.default_knobs(), **knobs)
        ns, nh = (kn["tn"], kn["tm"]) if op.dot_held(kn) == "A" else (kn["tm"], kn["tn"])
        u = max(kn["unroll_k"], 1)
        trips = (2 * ns * u if kn["stages"] == 2 else ns * u if u > 1 else 0) + (nh * u if kn["stages"] == 2 or u > 1 else 0)
        single = ns + nh if u > 1 or kn["stages"] == 1 else 0
        assert f.ldg128 >= trips + single, (name, f.ldg128, trips + single)
        assert loose.ldg128 == 0 and loose.ldg > f.ldg, (name, "the element-wise twin loads each float alone")


@pytest.mark.emulate
@pytest.mark.parametrize("name", list(TILES) + ["schedule_for"])
def test_dot_tiles_at_awkward_sizes_on_the_emulator(name):
    for m, n, k in AWKWARD:
        p = op.problem({"M": m, "N": n, "K": k}, layout="NT")
        sched = op.schedule_for(p) if name == "schedule_for" else op.schedule(**TILES[name])
        v = validate(op, sched, p, backend="emulate", order="random", check=True)
        assert v.ok, ((m, n, k), v.summary())


@pytest.mark.emulate
def test_dot_epilogues_and_batches_on_the_emulator():
    for ep, knobs in (("gelu(acc + bias) + res", {}), ("relu(acc + bias)", dict(split_k=3, reduce_k="workspace"))):
        for sizes in ({"M": 5, "N": 37, "K": 300}, {"M": 70, "N": 3, "K": 129}):
            for tile in (TILES["16 rows held by 2 warp rows of 8x8, prefetched"], TILES["8 columns held by 4 warps of 4x8, 4 chunks a trip"]):
                p = op.problem(sizes, layout="NT", epilogue=ep)
                v = validate(op, op.schedule(**dict(tile, **knobs)), p, backend="emulate", order="reverse")
                assert v.ok, (ep, sizes, v.summary())
    p = op.problem({"M": 3, "N": 40, "K": 260}, layout="NT", batch=3, stride_b=0, epilogue="acc + bias")
    v = validate(op, op.schedule(**TILES["1 row held, 4 warps of 1x4, 2 chunks a trip, prefetched"]), p, backend="emulate")
    assert v.ok, v.summary()


GPU_SIZES = [(1, 1, 1), (1, 4096, 4096), (16, 4096, 4097), (7, 50257, 768), (16, 512, 100000), (4099, 8, 2048),
             (3000, 16, 3000), (13, 1000, 12345)]


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(TILES) + ["schedule_for"])
def test_dot_tiles_on_the_gpu(name):
    from kernelgen import gpu
    for m, n, k in GPU_SIZES:
        p = op.problem({"M": m, "N": n, "K": k}, layout="NT")
        sched = op.schedule_for(p, gpu.device()) if name == "schedule_for" else op.schedule(**TILES[name])
        v = validate(op, sched, p, backend="gpu")
        assert v.ok, ((m, n, k), v.summary())
