"""kernelgen.features: one flat, deterministic numeric vector per schedule (what a model learns from)."""
import math

import pytest

from kernelgen import get_op
from kernelgen.features import features, occupancy
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
