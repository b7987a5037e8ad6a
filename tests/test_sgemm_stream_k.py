"""Stream-K SGEMM (annotate(stream_k, True); templates/lib/streamk.j2): where the tiles outnumber the SMs' slots and
leave a remainder, the last partial wave's tiles and one whole wave before them are cut along K into equal runs, one
a block; a tile two blocks share is summed by the second to finish. On the emulator the target has 2 or 3 SMs, so
small awkward sizes take every path: runs that start or end inside a tile, whole tiles inside a run, tiles after
the region one a block, ragged edges, K of a few tiles and fused epilogues."""
import dataclasses

import numpy as np
import pytest

from kernelgen import validate as validation
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.ops import get_op
from kernelgen.ops.streamk import stream_k_blocks, stream_k_region
from kernelgen.recipe import evaluate
from kernelgen.target import default_target

op = get_op("sgemm")
SK = op.schedule(stream_k=True)


def with_stream_k(inst, p):
    """schedule_for's tile for `p`, K whole, with stream-K."""
    knobs = dict(op.knobs_from_schedule(op.schedule_for(p)), stream_k=True, split_k=1, reduce_k="atomic")
    return inst.schedule_from_knobs(**knobs)


def small_target(sms: int):
    return dataclasses.replace(default_target(), sms=sms)


@pytest.fixture
def sms(monkeypatch):
    """Validation on a target of `n` SMs (the fixture's value is the setter)."""
    def use(n: int):
        monkeypatch.setattr(validation, "target_for", lambda backend, arch: small_target(n))
    return use


def runs(tiles: int, ktiles: int, slots: int) -> list[list[tuple[int, int, int]]]:
    """Each stream-K block's units (tile, k0, k1), as lib/streamk.j2 walks them (the model the tests check)."""
    region = stream_k_region(tiles, slots)
    total, out = region * ktiles, []
    for b in range(slots if region else 0):
        it, end, units = b * total // slots, (b + 1) * total // slots, []
        while it < end:
            t, k0 = divmod(it, ktiles)
            k1 = min(ktiles, k0 + end - it)
            units.append((t, k0, k1))
            it += k1 - k0
        out.append(units)
    return out


@pytest.mark.parametrize("tiles,slots", [(9, 2), (133, 132), (263, 132), (768, 132), (5, 3), (7, 3)])
@pytest.mark.parametrize("ktiles", [1, 2, 5, 512])
def test_every_region_tile_is_summed_from_at_most_two_runs_that_cover_its_k_once(tiles, slots, ktiles):
    region = stream_k_region(tiles, slots)
    assert region == tiles % slots + slots and stream_k_blocks(tiles, slots) == slots + tiles - region
    cover = {}
    for b, units in enumerate(runs(tiles, ktiles, slots)):
        for t, k0, k1 in units:
            cover.setdefault(t, []).append((k0, k1, b))
    assert sorted(cover) == list(range(region))
    for t, parts in cover.items():
        parts.sort()
        assert len(parts) <= 2, (t, parts)       # the exchange sums two partials: the same bits either order
        assert parts[0][0] == 0 and parts[-1][1] == ktiles and all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
        if len(parts) == 2:                      # head in block b, tail in block b + 1: they meet at boundary b
            assert parts[1][2] == parts[0][2] + 1


@pytest.mark.parametrize("tiles,slots", [(132, 132), (264, 132), (100, 132), (1, 2)])
def test_tiles_that_fill_their_waves_or_one_partial_wave_run_one_a_block(tiles, slots):
    assert stream_k_region(tiles, slots) == 0 and stream_k_blocks(tiles, slots) == tiles


@pytest.mark.emulate
@pytest.mark.parametrize("n,M,N,K", [
    (2, 600, 300, 37),     # 9 tiles on 2 slots: 3 in the region (runs end and start inside tile 1), 6 one a block
    (2, 600, 100, 100),    # 3 tiles, all in the region; every edge ragged
    (3, 1100, 129, 64),    # 10 tiles on 3 slots: region 4; K of 8 tiles
    (3, 513, 260, 9),      # 9 tiles: no remainder, no region (a block a tile)
    (2, 257, 129, 8),      # 4 tiles, K one tile: the region's runs are whole tiles
    (3, 1300, 7, 2000),    # 6 tiles of one column, long K
])
def test_the_emulator_validates_stream_k(sms, n, M, N, K):
    sms(n)
    r = validation.validate(op, SK, op.problem({"M": M, "N": N, "K": K}), backend="emulate", seed=5)
    assert r.ok, r.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("order", ["reverse", "random"])
def test_either_block_of_a_shared_tile_can_finish_it(sms, order):
    """The block that arrives second sums the tile: reversed or shuffled block orders swap the roles."""
    sms(2)
    r = validation.validate(op, SK, op.problem({"M": 600, "N": 300, "K": 37}), backend="emulate", seed=9, order=order)
    assert r.ok, r.summary()


@pytest.mark.emulate
@pytest.mark.parametrize("layout,epilogue", [("NT", "gelu(acc + bias)"), ("TN", "acc + bias + res"),
                                             ("NN", "relu(acc) * 0.5"), ("TT", None)])
def test_stream_k_in_every_layout_with_fused_epilogues(sms, layout, epilogue):
    """An epilogue runs once, on the sum of both blocks' partials (gelu of a partial would not add up)."""
    sms(2)
    p = op.problem({"M": 600, "N": 300, "K": 45}, layout=layout, epilogue=epilogue)
    inst = op.for_problem(p)
    sched = with_stream_k(inst, p)
    r = validation.validate(inst, sched, p, backend="emulate", seed=13)
    assert r.ok, r.summary()


def test_the_plan_and_the_launchers_recipe_agree():
    for sms_, (M, N, K) in ((132, (2048, 12288, 4096)), (3, (1100, 129, 64)), (132, (100, 100, 100))):
        tgt = small_target(sms_)
        p = op.problem({"M": M, "N": N, "K": K})
        kern = op.kernel(SK, tgt)
        plan = op.plan(kern, p, tgt)
        run = evaluate(op.recipe(kern), {"M": M, "N": N, "K": K}, sms=sms_)
        assert [l.grid for l in run.launches] == [l.grid for l in plan.launches]
        tiles = -(-M // 256) * -(-N // 128)
        assert plan.launches[0].grid == (stream_k_blocks(tiles, sms_), 1, 1)
        assert {w.name: w.count for w in plan.workspaces} == {"sk_part": 2 * sms_ * 256 * 128, "sk_flags": sms_}
        assert [w.fill for w in plan.workspaces] == [None, 0]      # the flags start at 0 every launch


def test_the_7b_qkv_grid():
    """2048 x 12288 in 256x128 tiles on 132 SMs: 768 tiles, 108 over 5 waves; 240 in the region, 528 one a block."""
    tgt = small_target(132)
    plan = op.plan(op.kernel(SK, tgt), op.problem({"M": 2048, "N": 12288, "K": 4096}), tgt)
    assert plan.launches[0].grid == (132 + 528, 1, 1)


@pytest.mark.parametrize("knobs,message", [
    (dict(split_k=2), r"stream-K cuts K into runs of its own; split_k=2"),
])
def test_stream_k_schedules_that_cannot_run_say_why(knobs, message):
    with pytest.raises(ScheduleError, match=message):
        op.kernel(op.schedule(stream_k=True, **knobs))


def test_a_batched_product_refuses_stream_k():
    p = op.problem({"M": 300, "N": 300, "K": 64}, batch=4)
    inst = op.for_problem(p)
    with pytest.raises(ScheduleError, match="stream-K walks one product's tiles"):
        inst.kernel(inst.schedule(stream_k=True))


def test_a_tile_count_past_the_int_that_numbers_them_is_refused_with_the_numbers():
    kern = op.kernel(op.schedule(stream_k=True, swizzle=1))
    with pytest.raises(UsageError, match=r"976562500000 tiles; stream-K numbers them as an int: at most 2147483647"):
        op.plan(kern, op.problem({"M": 16000000, "N": 2000000000, "K": 8}))


def test_kernels_without_stream_k_keep_their_names():
    assert op.kernel(op.default_schedule()).name == op.kernel(op.schedule(stream_k=False)).name
    assert op.kernel(SK).name.endswith("_stk1")


@pytest.mark.parametrize("M,N,K,layout,epilogue,picked", [
    (2047, 2049, 1023, "NN", None, True),                    # 136 tiles of 256x128 on 132 SMs: a second wave of 4
    (2048, 12288, 4096, "NT", "acc + bias", True),           # the 7B QKV projection: 5.8 waves
    (2048, 12288, 4096, "NT", "gelu(acc + bias)", False),    # a GELU: the tile at its register cap (stream_k_fits)
    (2048, 4096, 16384, "NT", "acc + bias + res", False),    # a residual read in the store: likewise
    (2048, 8448, 4096, "NT", None, False),                   # 528 tiles: four whole waves, nothing to spread
    (512, 512, 512, "NN", None, False),                      # fewer tiles than SMs: K slices instead
])
def test_schedule_for_takes_stream_k_where_the_last_wave_is_partial(M, N, K, layout, epilogue, picked):
    p = op.problem({"M": M, "N": N, "K": K}, layout=layout, epilogue=epilogue)
    assert op.knobs_from_schedule(op.for_problem(p).schedule_for(p))["stream_k"] is picked


def test_the_tuning_space_holds_stream_k():
    p = op.problem({"M": 3000, "N": 3000, "K": 3000})
    picks = [k for k in op.space(p, default_target()) if k.get("stream_k")]
    assert picks and all(op.kernel(op.schedule_from_knobs(**k)) for k in picks)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K,layout,epilogue", [
    (2100, 2100, 1000, "NN", None),            # 153 tiles on 132 SMs: 21 + 132 in the region
    (2048, 4096, 777, "NT", "gelu(acc + bias)"),
    (3001, 2999, 64, "TN", "acc + bias + res"),
    (4096, 4096, 4096, "NN", None),
])
def test_stream_k_on_the_gpu(M, N, K, layout, epilogue):
    p = op.problem({"M": M, "N": N, "K": K}, layout=layout, epilogue=epilogue)
    inst = op.for_problem(p)
    sched = with_stream_k(inst, p)
    r = validation.validate(inst, sched, p)
    assert r.ok, r.summary()
    assert np.isfinite(r.errors[0][1])
