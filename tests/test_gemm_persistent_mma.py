"""Persistent mma.sync blocks (annotate(persistent, coop) on mma.m16n8k16): the cp.async pipeline runs on
from one tile of C to the next. What a schedule may combine them with and the error that says so; the
plan (and the emitted launcher's recipe) launching `_persistent`, min_blocks blocks an SM, only where every
tile lies inside C and K is a whole number of rounds of the stages, else the per-tile kernels; the emulator
running blocks that walk one, two and three tiles (a target of 2 SMs), with a fused epilogue, fp32 C and
the transposed layouts; and on the GPU, sizes where each block walks many tiles."""
import dataclasses

import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen import validate as validation
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.recipe import evaluate
from kernelgen.target import target

op = get_op("gemm")
H100 = target("sm_90a")
TWO_SMS = dataclasses.replace(H100, sms=2)       # 4 blocks of min_blocks 2: most test sizes walk several tiles
WALK = dict(op.default_knobs(), persistent="coop", min_blocks=2, epilogue="smem")
DIRECT = dict(WALK, epilogue="direct")
F16 = op.types("float16")


def kernel(knobs, types=F16, layout="NN", arch=H100):
    return op.kernel(op.schedule_from_knobs(**knobs), arch, types, layout)


@pytest.mark.parametrize("change,message", [
    (dict(WALK, persistent="pingpong"), r"mma.sync's persistent blocks need annotate\(persistent, coop\)"),
    (dict(WALK, frag_buffers=2), r"need annotate\(warp_fragments, 1\)"),
    (dict(WALK, copy="sync", stages=2), r"need annotate\(copy, cp_async\)"),
    (dict(WALK, ldmatrix=False), r"need annotate\(ldmatrix, 1\)"),
    (dict(WALK, split_k=2), r"need annotate\(split_k, 1\)"),
    (dict(WALK, bk=64), r"min_blocks\): 2 is illegal .* 2 x 149504 bytes of shared memory > 233472 on sm_90a"),
])
def test_persistent_mma_schedules_that_cannot_run_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        kernel(change)


def test_the_staging_areas_lie_beside_the_stages_and_the_name_carries_the_knob():
    k = kernel(WALK)
    assert k.name.endswith("_mb2_esmem_pscoop_sw1")
    stages = 4 * 2 * (128 * 32 + 32 * 128)
    assert k.static_smem == stages + 4 * 16 * (64 * 4 + 16)              # 4 warps, 16 rows of fp32 at most
    assert kernel(dict(WALK, persistent="off")).static_smem == stages     # per tile: C staged in the stages
    assert kernel(DIRECT).static_smem == stages


@pytest.mark.parametrize("M,N,K,walks", [
    (4096, 4096, 4096, True), (256, 384, 128, True), (128, 128, 128, True),
    (4096, 4096, 4000, False),            # K not a multiple of 4 stages x 32
    (4000, 4096, 4096, False),            # a tile crosses C's edge
    (4096, 4094, 4096, False),            # rows of B and C not 16-byte aligned (and a ragged tile)
])
def test_the_plan_walks_only_whole_tiles_and_the_recipe_agrees(M, N, K, walks):
    k = kernel(WALK)
    p = op.problem({"M": M, "N": N, "K": K}, dtype="float16")
    tiles = -(-M // 128) * -(-N // 128)
    for tgt in (H100, TWO_SMS):
        (launch,) = op.plan(k, p, tgt).launches
        if walks:
            assert launch.symbol == k.name + "_persistent" and launch.grid == (min(tiles, 2 * tgt.sms), 1, 1)
        else:
            assert launch.symbol in (k.name, k.name + "_unaligned") and launch.grid[:2] == (-(-N // 128), -(-M // 128))
        (run,) = evaluate(op.recipe(k), {"M": M, "N": N, "K": K}, sms=tgt.sms).launches
        assert (run.symbol, run.grid, run.block) == (launch.symbol, launch.grid, launch.block)


@pytest.mark.nvrtc
def test_the_walk_compiles_without_spills_and_keeps_one_round_of_mma_per_stage():
    k = kernel(WALK)
    facts = {f.symbol: f for f in facts_of(compile_cuda(render(k), k.arch, k.name))}
    walk = facts[k.name + "_persistent"]
    assert walk.spill_bytes == 0 and walk.registers <= 255
    # two unrolled rounds (the tile's rounds, and the last one, which copies the next tile's K tiles)
    assert walk.hmma == 2 * 4 * 64


@pytest.fixture
def two_sms(monkeypatch):
    """Validation on a target of 2 SMs: the persistent grid is 4 blocks, so blocks walk several tiles."""
    monkeypatch.setattr(validation, "target_for", lambda backend, arch: TWO_SMS)


@pytest.mark.emulate
@pytest.mark.parametrize("knobs", [WALK, DIRECT], ids=["staged", "direct"])
@pytest.mark.parametrize("M,N,K", [
    (512, 384, 128),     # 12 tiles on 4 blocks: three each; K one round (the copies cross at once)
    (384, 256, 256),     # 6 tiles: blocks walk two tiles or one
    (256, 128, 384),     # 2 tiles: one each (no next tile), three rounds
    (130, 130, 128),     # ragged: the per-tile kernels
])
def test_the_emulator_runs_walks_of_one_two_and_three_tiles(two_sms, knobs, M, N, K):
    p = op.problem({"M": M, "N": N, "K": K}, dtype="float16")
    r = validation.validate(op, op.schedule_from_knobs(**knobs), p, backend="emulate", seed=7)
    assert r.ok, r.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("dtype,out,layout,epilogue", [
    ("bfloat16", "float32", "NN", None), ("float16", None, "TN", "acc + bias"),
    ("float16", None, "NT", None), ("bfloat16", None, "TT", "relu(acc) + res"),
])
def test_the_walk_in_every_layout_with_fp32_c_and_a_fused_epilogue(two_sms, dtype, out, layout, epilogue):
    p = op.problem({"M": 384, "N": 384, "K": 256}, dtype=dtype, out_dtype=out, layout=layout, epilogue=epilogue)
    inst = op.for_problem(p)
    sched = inst.schedule_from_knobs(**WALK)
    assert inst.plan(inst.kernel(sched, TWO_SMS, p.types, layout), p, TWO_SMS).launches[0].symbol.endswith("_persistent")
    r = validation.validate(inst, sched, p, backend="emulate", seed=11)
    assert r.ok, r.summary()


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(4096, 4096, 256), (2048, 3072, 1024), (1280, 896, 4096), (4096, 4096, 4000)])
def test_the_walk_on_the_gpu(M, N, K):
    """At the GPU's own SM count: 4096 x 4096 gives each of 264 blocks 3 or 4 tiles; K = 4000 the per-tile
    kernel beside it."""
    for dtype in ("float16", "bfloat16"):
        r = validation.validate(op, op.schedule_from_knobs(**WALK), op.problem({"M": M, "N": N, "K": K}, dtype=dtype))
        assert r.ok, r.summary()
        assert np.isfinite(r.errors[0][1])
