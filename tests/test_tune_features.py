"""kernelgen.features: one flat, deterministic numeric vector per schedule (what a model learns from)."""
import math

import pytest

from kernelgen import get_op
from kernelgen.features import features, main_launch, occupancy
from kernelgen.ops import OPS
from kernelgen.target import target
from kernelgen.tune.space import legal_space


def vectors(op_name, problem=None):
    op = get_op(op_name)
    problem = problem or op.problem()
    space, _ = legal_space(op, problem, target())
    return [features(c.kernel, target(), plan=c.plan) for c in space]


@pytest.mark.parametrize("name", ["reduce_sum", "softmax", "transpose", "gemv"])
def test_every_schedule_of_an_op_has_the_same_keys_in_the_same_order_and_finite_floats(name):
    vs = vectors(name)
    assert len(vs) > 1 and all(list(v) == list(vs[0]) for v in vs)
    assert all(type(x) is float and math.isfinite(x) for v in vs for x in v.values())


def test_knobs_numbers_as_they_are_booleans_0_1_choices_one_hot():
    op = get_op("transpose")
    kern = op.kernel(op.schedule(staged=False, vec=1, order="diagonal", tile=32), target())
    f = features(kern, target())
    assert f["tile"] == 32.0 and f["staged"] == 0.0
    assert f["order=diagonal"] == 1.0 and f["order=row"] == 0.0 and "order" not in f
    reduce = vectors("reduce_sum")
    assert all(sum(v[k] for k in v if k.startswith("finish=")) == 1.0 for v in reduce)
    assert {v["finish=atomic"] for v in reduce} == {0.0, 1.0}


def test_occupancy_is_the_least_of_what_threads_shared_memory_and_registers_allow():
    t = target()                                   # 2048 threads, 228 KB shared, 64 K registers per SM
    assert occupancy(256, 0, 32, t)["blocks_per_sm"] == 8.0                     # threads
    assert occupancy(256, 100 * 1024, 32, t)["blocks_per_sm"] == 2.0            # shared memory
    o = occupancy(256, 0, 128, t)                                               # 128 x 256 = 32 K registers
    assert (o["blocks_per_sm.regs"], o["blocks_per_sm"], o["occupancy"]) == (2.0, 2.0, 0.25)
    assert occupancy(256, 0, 33, t)["blocks_per_sm.regs"] == 6.0                # 33 rounds up to 40 a thread
    staged = get_op("staged_load")
    kern = staged.kernel(staged.default_schedule(), t)
    f = features(kern, t, plan=staged.plan(kern, staged.problem(), t))
    assert f["dynamic_smem_bytes"] == 131200.0 and f["blocks_per_sm.smem"] == 1.0   # not counted twice


def test_plan_gives_threads_grid_waves_and_sizes_of_the_main_launch():
    op = get_op("reduce_sum")
    kern = op.kernel(op.schedule(threads=256, grid_stride=2), target())
    plan = op.plan(kern, op.problem({"n": 1 << 24}), target())
    f = features(kern, target(), plan=plan)
    assert f["threads_per_block"] == 256.0 and f["launches"] == 2.0             # the partial pass, not the final
    assert f["grid_blocks"] == 2 * 132 and f["size.n"] == float(1 << 24)
    assert f["waves"] == f["grid_blocks"] / (132 * f["blocks_per_sm"])


def split_k_sgemm(reduce_k):
    """sgemm at 2047x2049x1023 with K in 3 slices of 128x128 tiles: 17 x 16 x 3 = 816 blocks of 128 threads, and a
    fill (atomics: 4096 blocks of 256 threads zeroing C first) or a reduction of the slices (the workspace)."""
    op = get_op("sgemm")
    kern = op.kernel(op.schedule(bm=128, bn=128, split_k=3, reduce_k=reduce_k), target())
    return op, kern, op.plan(kern, op.problem({"M": 2047, "N": 2049, "K": 1023}), target())


@pytest.mark.parametrize("reduce_k, helper", [("atomic", "_zero"), ("workspace", "_reduce")])
def test_a_split_k_plan_has_the_features_of_its_gemm_not_of_the_fill_or_the_reduction(reduce_k, helper):
    op, kern, plan = split_k_sgemm(reduce_k)
    (other,) = [l for l in plan.launches if l.symbol.endswith(helper)]
    assert other.grid == (4096, 1, 1) and other.threads == 256        # more threads in all than the GEMM
    gemm = main_launch(plan)
    assert gemm is not other and gemm.grid == (17, 16, 3) and [l for l in plan.launches if l is not gemm] == [other]
    f = features(kern, target(), plan=plan)
    assert f["launches"] == 2.0 and f["grid_blocks"] == 816.0 and f["threads_per_block"] == 128.0
    assert f["waves"] == 816 / (132 * f["blocks_per_sm"]) and f["blocks_per_sm"] == 2.0


@pytest.mark.parametrize("algo, helpers", [("implicit", ["_zero"]), ("im2col", ["_im2col", "_zero"])])
def test_conv2d_split_k_has_the_features_of_its_gemm(algo, helpers):
    op = get_op("conv2d")
    kern = op.kernel(op.schedule(algo=algo, split_k=4), target())
    plan = op.plan(kern, op.problem(), target())
    assert [l.symbol[len(kern.name):] for l in plan.launches] == helpers + ["_gemm"]
    assert main_launch(plan).symbol == kern.name + "_gemm"
    assert features(kern, target(), plan=plan)["grid_blocks"] == math.prod(plan.launches[-1].grid)


def test_history_recomputes_the_stored_features_of_a_plan_of_several_launches():
    """Records written before the helpers were told apart describe split-K's fill (4096 blocks at every size):
    read as history they get today's features, as do new records of the same schedule, and both lose their
    ptxas facts (read from the fill by the old, which nothing tells apart from the new); a record of one
    launch keeps what it stored."""
    from kernelgen.tune.db import Record
    from kernelgen.tune.history import observations
    op, kern, plan = split_k_sgemm("atomic")
    sched, problem = kern.schedule, plan.problem
    today = features(kern, target(), plan=plan)
    fill = max(plan.launches, key=lambda l: math.prod(l.grid) * l.threads)           # the rule of the old records
    old = dict(today, grid_blocks=4096.0, threads_per_block=256.0, waves=31.0, **{"ptxas.registers": 8.0})
    new = dict(today, **{"ptxas.registers": 128.0})
    one = op.kernel(op.schedule(bm=128, bn=128), target())
    alone = dict(features(one, target(), plan=op.plan(one, problem, target())), **{"ptxas.registers": 96.0})
    recs = [Record.make("sgemm", str(problem), "sm_90", "H100", s.to_dict(), op.knobs_from_schedule(s), "ok", 9.0,
                        features=f) for s, f in ((sched, old), (sched, new), (one.schedule, alone))]
    got = observations(op, op.problem({"M": 4096, "N": 4096, "K": 4096}), recs)
    assert fill.symbol.endswith("_zero") and [o.features for o in got] == [today, today, alone]


def test_vector_widths_come_from_the_params_where_the_op_has_them():
    f = vectors("sgemm", get_op("sgemm").problem({"M": 512, "N": 512, "K": 512}))[0]
    assert {k for k in f if k.startswith("vec.")} >= {"vec.vec_a", "vec.vec_b", "vec.vec_c"}
    assert "vec.a_vecs" not in f                    # a count of vectors, not a width


def test_every_op_default_has_features():
    for op in OPS.values():
        kern = op.kernel(op.default_schedule(), target())
        f = features(kern, target(), plan=op.plan(kern, op.problem(), target()))
        assert f["threads_per_block"] > 0 and f["blocks_per_sm"] >= 1, op.name


@pytest.mark.nvrtc
def test_cubin_facts_of_the_main_kernel_replace_the_register_estimate():
    from kernelgen.inspect import inspect_kernel
    op = get_op("reduce_sum")
    kern = op.kernel(op.default_schedule(), target())
    plan = op.plan(kern, op.problem(), target())
    facts = inspect_kernel(kern, "sm_90")                       # the partial and the final kernel
    f = features(kern, target(), facts, plan=plan)
    main = next(x for x in facts if x.symbol == plan.launches[0].symbol)
    assert f["cubin.registers"] == main.registers and f["cubin.spill_bytes"] == 0.0
    assert f["blocks_per_sm.regs"] == occupancy(512, 0, main.registers, target())["blocks_per_sm.regs"]
    assert list(f)[-len(facts[0].row()) + 1:] == [f"cubin.{k}" for k in facts[0].row() if k != "symbol"]


@pytest.mark.nvrtc
def test_the_builder_reads_the_registers_of_the_split_k_gemm_not_of_the_fill(tmp_path, monkeypatch):
    from kernelgen.features import ptxas_features
    from kernelgen.prepared import prepare
    from kernelgen.tune.builder import build
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path))
    op, kern, plan = split_k_sgemm("atomic")
    built = build(op, kern.schedule, plan.problem, target())
    log = prepare(op, kern.schedule, plan.problem, target()).binary.log
    fill, gemm = plan.launches
    assert built.status == "ok" and built.features == ptxas_features(log, gemm.symbol)
    assert built.features["ptxas.registers"] > ptxas_features(log, fill.symbol)["ptxas.registers"]
