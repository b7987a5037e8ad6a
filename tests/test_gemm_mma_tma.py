"""mma.sync fed by TMA (annotate(copy, tma) on mma.m16n8k16, sm_90a): A and B arrive as the wgmma kernel's do
(128-byte swizzled rows of 64 k, boxes of 64 columns for an operand stored along M or N), ldmatrix reads them
into mma.sync fragments, and mbarriers replace the block barrier of the cp.async pipeline. What a schedule may
combine it with and the error that says so; the tiles' shared layout as TMA writes it; the plan and the emitted
launcher's recipe picking the twin by C's rows; the SASS (HMMA, no local memory, no block barrier in the main
loop); and on the GPU (the emulator refuses TMA by name), every layout at ragged sizes, K of 1, fp32 C and a
fused epilogue."""
import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen import validate as validation
from kernelgen.compile import compile_cuda
from kernelgen.errors import CompileError, ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.recipe import evaluate
from kernelgen.target import target

op = get_op("gemm")
H100 = target("sm_90a")
TMA = dict(op.default_knobs(), copy="tma", bk=64, stages=3, epilogue="smem")
F16 = op.types("float16")


def kernel(knobs, types=F16, layout="NN", arch=H100):
    return op.kernel(op.schedule_from_knobs(**knobs), arch, types, layout)


@pytest.mark.parametrize("change,message", [
    (dict(bk=32), "K is read 64 at a time"),
    (dict(ldmatrix=False), "annotate(ldmatrix, 1)"),
    (dict(smem="pad", pad=8), "XOR-swizzled rows"),
    (dict(frag_buffers=2), "fragments double-buffered across tiles need a cp.async pipeline"),
    (dict(persistent="coop", min_blocks=2), "persistent blocks need annotate(copy, cp_async)"),
    (dict(instr="wmma", wm=32, wn=32, smem="pad", pad=8, ldmatrix=False), "TMA copies feed wgmma and mma.sync"),
])
def test_schedules_tma_cannot_feed_say_why(change, message):
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kernel(dict(TMA, **change))


def test_tma_needs_an_sm90_target_and_16_bit_data():
    with pytest.raises(ScheduleError, match="tma"):
        kernel(TMA, arch=target("sm_80"))
    with pytest.raises(ScheduleError, match="TMA fills 16-bit tiles"):
        kernel(TMA, types=op.types("tf32"))


def test_the_search_space_offers_tma_where_the_target_has_it_and_the_emulator_none():
    from kernelgen.emulate import runnable_target
    p = op.problem({"M": 1000, "N": 1000, "K": 1000}, dtype="float16")
    assert any(k["copy"] == "tma" and k["instr"] == "mma" for k in op.space(p, target("sm_90")))
    assert not any(k["copy"] == "tma" for k in op.space(p, runnable_target(H100)))
    with pytest.raises(ScheduleError, match="tma"):
        kernel(TMA, arch=runnable_target(H100))


def test_an_operand_stored_along_m_or_n_keeps_each_warps_share_in_one_box():
    kernel(dict(TMA, bn=128, wn=32), layout="NN")        # B's boxes of 64 columns: two warps a box
    with pytest.raises(ScheduleError, match="within one box"):
        kernel(dict(TMA, bn=192, wn=96), layout="NN")
    with pytest.raises(ScheduleError, match="within one box"):
        kernel(dict(TMA, bm=96, wm=32), layout="TN")       # A stored transposed: 96 rows are no whole box
    kernel(dict(TMA, bm=96, wm=32), layout="NN")           # A K-major: rows of 64 k, any bm


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
def test_the_shared_tiles_are_tmas_boxes(layout):
    """64-element rows, chunk c of row r at c ^ (r % 8) (TMA's 128-byte swizzle); a stage is A's bytes then B's."""
    p = dict(kernel(TMA, layout=layout).params)
    for t in (p["ta"], p["tb"]):
        assert (t["ld"], t["cols"], t["xor_div"], t["xor_mod"]) == (64, 64, 1, 8)
    assert p["stage_bytes"] == 2 * (128 + 128) * 64 and p["a_bytes"] == 2 * 128 * 64
    assert len(p["a_boxes"]) == (2 if layout[0] == "T" else 1) and len(p["b_boxes"]) == 2


@pytest.mark.parametrize("M,N,K,symbol", [(4096, 4096, 4096, ""), (100, 130, 37, "_unaligned"), (64, 72, 8, "")])
def test_the_plan_pads_rows_tma_cannot_read_and_picks_the_twin_by_cs_rows(M, N, K, symbol):
    k = kernel(TMA)
    p = op.problem({"M": M, "N": N, "K": K}, dtype="float16")
    plan = op.plan(k, p, H100)
    assert plan.launches[-1].symbol == k.name + symbol
    assert [m.name for m in plan.tensor_maps] == ["tmA", "tmB"]
    pads = (K % 8 != 0) + (N % 8 != 0)                     # A's rows (K long), B's (N long) copied into padded rows first
    assert len(plan.workspaces) == pads
    run = evaluate(op.recipe(k), {"M": M, "N": N, "K": K}, sms=H100.sms).launches
    assert [r.symbol for r in run if not r.symbol.endswith("_pad")] == [k.name + symbol]
    assert len(run) == 1 + pads


@pytest.mark.nvrtc
@pytest.mark.parametrize("layout,arch", [("NN", "sm_90a"), ("TN", "sm_90")])
def test_the_kernel_compiles_without_spills_and_no_block_barrier_in_its_main_loop(layout, arch):
    """TMA and mbarriers are sm_90's (no arch-specific instruction): plain sm_90 compiles it too."""
    from kernelgen.inspect import _sass
    k = kernel(TMA, layout=layout, arch=target(arch))
    binary = compile_cuda(render(k), k.arch, k.name)
    main = {f.symbol: f for f in facts_of(binary)}[k.name]
    assert main.spill_bytes == 0 and main.local_bytes == 0
    ops = _sass(binary.cubin)[k.name]
    hmma = sum(n for o, n in ops.items() if o.startswith("HMMA"))
    bars = sum(n for o, n in ops.items() if o.startswith("BAR.SYNC"))
    # both tile instantiations (inside C, crossing it) unroll the 3 stages of 4 k16 steps x 32 mma, and each
    # has two block barriers: after the mbarriers' setup and before the staged epilogue; none a K tile
    assert hmma >= 2 * 3 * 128 and bars == 4, (hmma, bars)


@pytest.mark.emulate
def test_the_emulator_refuses_tma_by_name():
    with pytest.raises(CompileError, match="does not support mbarrier"):
        validation.validate(op, op.schedule_from_knobs(**TMA), op.problem({"M": 64, "N": 64, "K": 64}, dtype="float16"),
                            backend="emulate")


def test_k_in_slices_reads_each_slices_tiles_and_stores_fp32_slabs():
    src = render(kernel(dict(TMA, split_k=4)))
    assert "(kt0 + kt) * 64" in src and "const int kt0 = kbeg / 64;" in src and "_reduce(" in src
    assert "int kt0 =" not in src.split("_tile(")[1].split("\n}\n")[0]    # no loop shadows the slice's first tile


def _validate(knobs, sizes, dtype="float16", layout="NN", out=None, epilogue=None):
    p = op.problem(sizes, dtype=dtype, out_dtype=out, layout=layout, epilogue=epilogue)
    inst = op.for_problem(p)
    r = validation.validate(inst, inst.schedule_from_knobs(**knobs), p, backend="gpu", seed=5)
    assert r.ok, r.summary()
    assert np.isfinite(r.errors[0][1])


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (131, 68, 37), (200, 136, 200), (640, 512, 576), (257, 264, 1)])
def test_every_layout_at_ragged_sizes_on_the_gpu(layout, M, N, K):
    for dtype in ("float16", "bfloat16"):
        _validate(TMA, {"M": M, "N": N, "K": K}, dtype, layout)


@pytest.mark.gpu
@pytest.mark.parametrize("knobs", [dict(TMA, epilogue="direct"), dict(TMA, stages=2), dict(TMA, stages=5, swizzle=8),
                                   dict(TMA, bm=256, stages=4), dict(TMA, bn=256, stages=4), dict(TMA, split_k=3)],
                         ids=["direct", "2 stages", "5 stages", "256x128", "128x256", "3 slices of K"])
def test_other_tiles_and_depths_on_the_gpu(knobs):
    for sizes in ({"M": 1000, "N": 1032, "K": 1000}, {"M": 2048, "N": 2048, "K": 512}):
        _validate(knobs, sizes)


@pytest.mark.gpu
def test_fp32_c_and_a_fused_epilogue_on_the_gpu():
    _validate(TMA, {"M": 300, "N": 520, "K": 264}, "bfloat16", "NT", out="float32")
    _validate(TMA, {"M": 300, "N": 520, "K": 264}, "float16", "TN", epilogue="relu(acc + bias) + res")


@pytest.mark.gpu
def test_random_schedules_of_the_space_at_random_sizes_on_the_gpu():
    """24 seeded draws: a TMA-fed schedule of the tuner's space (with split-K beside it), a layout, a type and
    sizes of 1 .. 700 that are no multiple of anything in particular."""
    rng = np.random.default_rng(2026)
    space = [k for k in op.space(op.problem(), H100) if k["copy"] == "tma" and k["instr"] == "mma"]
    done = 0
    while done < 24:
        knobs = dict(space[rng.integers(len(space))], split_k=int(rng.choice([1, 1, 2, 3])))
        dtype, layout = str(rng.choice(["float16", "bfloat16"])), str(rng.choice(["NN", "NT", "TN", "TT"]))
        try:
            kernel(knobs, op.types(dtype), layout)
        except ScheduleError:     # e.g. 5 stages of 128x256 in a layout whose tiles take more shared memory
            continue
        _validate(knobs, {d: int(rng.integers(1, 700)) for d in "MNK"}, dtype, layout)
        done += 1
