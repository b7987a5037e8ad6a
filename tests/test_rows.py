"""Row ops (layer norm, softmax) on any row length, and transpose on sizes that are not multiples of its
vector: the forms each heuristic picks (registers, a block per row looping, several blocks per row),
their legality over a grid of shapes and targets, the split form's plan and recipe, bad input, and
the kernels on the emulator at row lengths 1, 2, 31, 33, 4097 and a long row with few rows."""
import dataclasses

import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.ops.rows import ANY_SUFFIX, MAX_CHUNK, RowRules, row_heuristic
from kernelgen.recipe import evaluate
from kernelgen.target import target
from kernelgen.validate import validate

ln, sm, tr = get_op("layernorm"), get_op("softmax"), get_op("transpose")
ROW_OPS = (ln, sm)
ROWS = (1, 2, 7, 64, 65, 1000, 8192)
COLS = (1, 2, 31, 33, 768, 4097, 32768, 32769, 50257, 262144, 1 << 24)
H100 = target("sm_90")


def knobs(op, problem, tgt=H100):
    return op.knobs_from_schedule(op.schedule_for(problem, tgt))


# -- the heuristic ---------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ROW_OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_heuristic_is_legal_and_plans_every_shape(op, arch, dtype):
    tgt = target(arch)
    for rows in ROWS:
        for cols in COLS:
            if rows * cols > 1 << 31:          # the batches of a split form would be millions of launches
                continue
            p = op.problem({"rows": rows, "cols": cols}, dtype=dtype)
            kern = op.kernel(op.schedule_for(p, tgt), tgt, op.types(dtype))
            plan = op.plan(kern, p, tgt)
            run = evaluate(op.recipe(kern), {"rows": rows, "cols": cols}, tgt.sms)
            assert run.ok and len(run.launches) == len(plan.launches), (rows, cols, kern.name)


def test_heuristic_holds_hidden_sizes_in_registers_and_splits_long_rows():
    for cols in (768, 1000, 5120, 8192, 12288, 16384, 32768):
        for dtype in ("float32", "float16", "bfloat16"):
            k = knobs(ln, ln.problem({"rows": 4096, "cols": cols}, dtype=dtype))
            assert k["algo"] == "registers" and k["items"] * k["threads"] * k["vec"] >= cols, (cols, dtype, k)
            assert k["items"] * k["vec"] <= 32 and k["vec"] * ln.types(dtype)["x"].itemsize == 16
    assert knobs(ln, ln.problem({"rows": 4096, "cols": 50257}))["algo"] == "welford"   # an SM's row fits L2
    assert knobs(sm, sm.problem({"rows": 4096, "cols": 50257}))["algo"] == "online"
    for op in ROW_OPS:
        # rows enough to fill the SMs: a block per row, even where 132 rows of 1 MB overflow L2 (faster on the H100)
        assert knobs(op, op.problem({"rows": 4096, "cols": 262144}))["algo"] in ("welford", "online")
        one = knobs(op, op.problem({"rows": 1, "cols": 262144}))
        chunks = 262144 // (one["items"] * one["threads"] * 4)      # a few large chunks beat hundreds of small ones
        assert one["algo"] == "split" and H100.sms * RowRules().split_blocks_per_sm <= chunks <= H100.sms, chunks
        assert knobs(op, op.problem({"rows": 1, "cols": 4096}))["algo"] == "registers"          # one launch, tiny


def test_heuristic_reads_the_target():
    p = ln.problem({"rows": 200, "cols": 50257})
    assert knobs(ln, p, H100)["algo"] == "welford"                                    # 200 rows fill 132 SMs ...
    many = knobs(ln, p, dataclasses.replace(H100, sms=1000))
    assert many["algo"] == "split" and many["l2_batch_mb"] == 0                       # ... not 1000: split, unbatched
    batched = row_heuristic(8, 1 << 20, 4, dataclasses.replace(H100, l2_bytes=16 << 20),
                            RowRules(batch_share=1 / 3), "welford")
    assert batched["algo"] == "split" and batched["l2_batch_mb"] == 8   # the smallest batch: a third of 16 MB is less
    assert knobs(ln, ln.problem({"rows": 40, "cols": 100000}), H100)["algo"] == "split"  # 40 < 132 / 2 rows
    r = row_heuristic(8192, 32768, 4, dataclasses.replace(H100, regs_per_sm=32768), RowRules(), "welford")
    assert r["algo"] != "registers"                           # half the registers cannot hold 32 floats x 1024


def test_split_batches_fit_a_share_of_l2_where_asked():
    for l2, mb in ((50 << 20, 16), (40 << 20, 8), (96 << 20, 32), (6 << 20, 8)):
        k = row_heuristic(16, 1 << 20, 4, dataclasses.replace(H100, l2_bytes=l2), RowRules(batch_share=1 / 3), "welford")
        assert k["algo"] == "split" and k["l2_batch_mb"] == mb, (l2, k)
    # the shipped rules do not batch: unbatched equalled or beat every batch size on the H100
    assert row_heuristic(16, 1 << 20, 4, H100, RowRules(), "welford")["l2_batch_mb"] == 0


# -- the split form of layer norm -----------------------------------------------------------------
def test_layernorm_split_reads_and_plans_like_softmax():
    s = ln.schedule(threads=256, items=4, algo="split", l2_batch_mb=8)
    assert [(x.prim, x.target) for x in s.steps][-2:] == [("bind", "j.0"), ("annotate", "l2_batch_mb")]
    assert ln.knobs_from_schedule(s)["algo"] == "split"
    k = ln.kernel(s)
    assert k.name.endswith("_asplit_b8") and not ln.kernel(ln.default_schedule()).name.endswith("b16")
    p = ln.plan(k, ln.problem({"rows": 1024, "cols": 32768}))
    # 4096 columns per block -> 8 blocks per row; 8 MB = 64 rows of 128 KB per launch pair
    assert len(p.launches) == 32 and p.launches[0].grid == (64, 8, 1) and p.launches[0].block == (256, 1, 1)
    assert [x.symbol.rsplit("_", 1)[-1] for x in p.launches[:2]] == ["stats", "write"]
    assert p.workspaces[0].count == 2 * 1024 * 8 and p.launches[1].args[-1] == "eps"
    odd = ln.plan(k, ln.problem({"rows": 3, "cols": 32769}))
    assert odd.launches[0].symbol.endswith("_stats_anyalign") and dict(odd.alignment)["x"] == 16


@pytest.mark.parametrize("change,message", [
    (dict(threads=16, rows_per_block=4, algo="split"), "threads per row >= 32 and one row per block"),
    (dict(threads=1024, items=16, algo="split"), "floats per thread in registers with 1024 threads"),
])
def test_layernorm_split_illegal_knobs_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        ln.kernel(ln.schedule(**change))


def test_bad_split_input_is_refused_with_its_numbers():
    with pytest.raises(ScheduleError, match=r"annotate\(l2_batch_mb\): 12 .*allowed: 0, 8, 16, 32, 64"):
        ln.kernel(ln.schedule(algo="split").annotate("l2_batch_mb", 12))
    with pytest.raises(ScheduleError, match=r"applies only with algo split, not algo=welford"):
        ln.kernel(ln.schedule(algo="welford").annotate("l2_batch_mb", 8))
    with pytest.raises(ScheduleError, match="several blocks per row"):
        ln.kernel(ln.schedule(algo="split").cache_read("x", "register"))
    k = ln.kernel(ln.schedule(threads=32, items=1, vec=1, algo="split"))
    with pytest.raises(ScheduleError, match=r"65536 blocks per row' is illegal \(limit: 65535 \(gridDim.y\)"):
        ln.plan(k, ln.problem({"rows": 1, "cols": 32 * 65536}))
    with pytest.raises(UsageError, match="cols=0"):
        ln.problem({"rows": 4, "cols": 0})
    with pytest.raises(UsageError, match=f"cols={2**31 - 1}"):
        ln.problem({"rows": 1, "cols": 2**31 - 1})
    assert ln.problem({"rows": 1, "cols": 2**31 - 1 - MAX_CHUNK})


@pytest.mark.parametrize("op", ROW_OPS, ids=lambda o: o.name)
def test_split_recipe_matches_plan_over_batches(op):
    for knobs_ in (dict(threads=128, items=4, algo="split", l2_batch_mb=8), dict(threads=32, items=2, vec=1, algo="split")):
        kern = op.kernel(op.schedule(**knobs_))
        for rows, cols in ((1, 1), (3, 7), (1000, 4097), (300, 8191), (5000, 1000), (2, 1 << 20)):
            plan = op.plan(kern, op.problem({"rows": rows, "cols": cols}))
            run = evaluate(op.recipe(kern), {"rows": rows, "cols": cols}, H100.sms)
            assert [(x.symbol, x.grid, x.block) for x in run.launches] == \
                [(x.symbol, x.grid, x.block) for x in plan.launches], (knobs_, rows, cols)
            assert [(n, c) for n, _, c, _ in run.workspaces] == [(w.name, w.count) for w in plan.workspaces]


# -- SASS ------------------------------------------------------------------------------------------
@pytest.mark.nvrtc
@pytest.mark.parametrize("cols", [16384, 32768])
def test_long_register_rows_do_not_spill(cols):
    for dtype in ("float32", "float16"):
        kern = ln.kernel(ln.schedule_for(ln.problem({"rows": 4096, "cols": cols}, dtype=dtype)), types=ln.types(dtype))
        for f in facts_of(compile_cuda(render(kern), "sm_90", kern.name)):
            if f.symbol.endswith(ANY_SUFFIX):
                # the any-alignment twin (cols % vec != 0) keeps a row's offset and edge lanes besides the
                # 32 floats a thread holds at 1024 threads (64 registers): a few words spill there
                assert f.spill_bytes <= 32, (dtype, f.symbol, f.spill_bytes)
            else:
                assert f.spill_bytes == 0 and f.local_ops == 0, (dtype, f.symbol)


@pytest.mark.nvrtc
def test_layernorm_split_moves_128_bits_and_does_not_spill():
    kern = ln.kernel(ln.schedule(threads=256, items=4, algo="split"))
    found = {f.symbol: f for f in facts_of(compile_cuda(render(kern), "sm_90", kern.name))}
    assert set(found) == {kern.name + s for s in ("_stats", "_write", "_stats_anyalign", "_write_anyalign")}
    for sym, f in found.items():
        assert f.spill_bytes == 0 and f.local_ops == 0, sym
        assert f.ldg128 > 0, sym                  # the any-alignment twins too
    assert found[kern.name + "_write"].stg128 > 0 and found[kern.name + "_stats"].stg128 == 0


@pytest.mark.nvrtc
def test_transpose_whole_tiles_keep_their_registers():
    kern = tr.kernel(tr.default_schedule())
    (f,) = facts_of(compile_cuda(render(kern), "sm_90", kern.name))
    assert f.registers <= 32 and f.spill_bytes == 0 and f.ldg128 > 0 and f.stg128 > 0


# -- the emulator ----------------------------------------------------------------------------------
LENGTHS = (1, 2, 31, 33, 4097)


@pytest.mark.emulate
@pytest.mark.parametrize("knobs_", [
    dict(threads=32, rows_per_block=4, items=2, algo="welford"),            # a warp per row, looping
    dict(threads=128, items=2, algo="welford"),                             # a block per row, looping
    dict(threads=32, items=2, algo="split"),
    dict(threads=64, items=1, vec=1, algo="split", reduction="shared"),
])
def test_layernorm_forms_on_any_row_length(knobs_):
    for cols in LENGTHS:
        v = validate(ln, ln.schedule(**knobs_), ln.problem({"rows": 3, "cols": cols}), backend="emulate", order="reverse")
        assert v.ok, (knobs_, cols, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("op", ROW_OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_heuristics_on_any_row_length(op, dtype):
    for rows, cols in [(5, c) for c in LENGTHS] + [(2, 70001)]:
        p = op.problem({"rows": rows, "cols": cols}, dtype=dtype)
        v = validate(op, op.schedule_for(p), p, backend="emulate", order="random")
        assert v.ok, (rows, cols, op.knobs_from_schedule(op.schedule_for(p)), v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("op", ROW_OPS, ids=lambda o: o.name)
def test_split_over_several_row_batches(op):
    # 8 MB batches of rows a little under 4 MB: two launch pairs, the second starting at row 2; the last
    # chunk partial and the column count odd (the any-alignment twins)
    p = op.problem({"rows": 3, "cols": (1 << 20) - 3})
    s = op.schedule(threads=256, items=4, algo="split", l2_batch_mb=8)
    assert len(op.plan(op.kernel(s), p).launches) == 4
    v = validate(op, s, p, backend="emulate", order="reverse")
    assert v.ok, v.summary()


@pytest.mark.emulate
def test_layernorm_split_in_16_bit_types():
    for dtype in ("float16", "bfloat16"):
        for cols in (1, 33, 4097):
            p = ln.problem({"rows": 3, "cols": cols}, dtype=dtype)
            v = validate(ln, ln.schedule(threads=32, items=2, vec=8, algo="split"), p, backend="emulate", order="reverse")
            assert v.ok, (dtype, cols, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("sizes", [dict(M=97, N=67), dict(M=130, N=98), dict(M=33, N=33)])
def test_transpose_unaligned_whole_tiles_on_the_emulator(sizes):
    for knobs_, dtype in ((dict(), "float32"), (dict(tile=64, rows=16, vec=8, pad=2), "float16")):
        v = validate(tr, tr.schedule(**knobs_), tr.problem(sizes, dtype=dtype), backend="emulate", check=True)
        assert v.ok, (sizes, dtype, v.summary())


# -- the GPU ---------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("op", ROW_OPS, ids=lambda o: o.name)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_long_rows_on_the_gpu(op, dtype):
    for rows, cols in ((4096, 5120), (1024, 12289), (512, 32768), (300, 50257), (1, 262144), (64, 262147),
                       (4, 1 << 22)):
        p = op.problem({"rows": rows, "cols": cols}, dtype=dtype)
        v = validate(op, op.schedule_for(p), p, backend="gpu")
        assert v.ok, (rows, cols, op.knobs_from_schedule(op.schedule_for(p)), v.summary())


@pytest.mark.gpu
def test_transpose_unaligned_sizes_on_the_gpu():
    for m, n in ((12345, 6789), (5000, 7001), (4097, 4100)):
        p = tr.problem({"M": m, "N": n})
        v = validate(tr, tr.schedule_for(p), p, backend="gpu")
        assert v.ok, (m, n, v.summary())
