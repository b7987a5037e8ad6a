"""Epilogues fused into sgemm, gemm and conv2d, and batched products (kernelgen/ops/fusion.py): the
language and its errors, names, plans against recipes, the CLI's --size syntax, NVRTC builds of the
tensor-core kernels, and emulator validation (checker on, conftest.py) at awkward sizes against float64."""
import dataclasses

import pytest

from kernelgen.errors import ScheduleError, UsageError
from kernelgen.ops import get_op
from kernelgen.ops.fusion import Epilogue
from kernelgen.prepared import prepare
from kernelgen.recipe import evaluate
from kernelgen.render import render
from kernelgen.sizes import parse_size
from kernelgen.target import target
from kernelgen.validate import validate
from test_recipe import as_plan, as_recipe

EPILOGUES = ("acc + bias", "relu(acc + bias)", "gelu(acc + bias)", "gelu_erf(acc + bias)", "silu(acc) + res",
             "2.0 * acc + 0.5 * res", "gelu(acc + bias) + res")
AWKWARD = ({"M": 1, "N": 1, "K": 1}, {"M": 33, "N": 17, "K": 5}, {"M": 70, "N": 132, "K": 20})


# -- plain Python ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text,words", [
    ("gelu(acc + x)", "unknown name 'x'; names are acc"),
    ("foo(acc)", "unknown function 'foo'; allowed: relu, gelu"),
    ("acc ** 2", "Pow is not allowed"),
    ("relu(acc", "not an expression"),
    ("relu(bias)", "does not use acc"),
    ("acc; import os", r"character\(s\) ';' not allowed"),
])
def test_bad_epilogues_name_the_token_and_what_is_allowed(text, words):
    with pytest.raises(UsageError, match=words) as e:
        get_op("sgemm").problem(epilogue=text)
    assert "\n" not in str(e.value)


def test_the_epilogue_is_part_of_the_problem_and_the_name():
    op = get_op("sgemm")
    p = op.problem({"M": 8, "N": 4, "K": 2}, epilogue="gelu(acc+bias)")
    assert str(p) == "M=8,N=4,K=2;epilogue=gelu(acc + bias)" and p != op.problem({"M": 8, "N": 4, "K": 2})
    assert parse_size(op, str(p), False) == p
    fused = op.for_problem(p)
    assert fused.inputs == ("A", "B", "bias") and op.inputs == ("A", "B")
    kern = fused.kernel(op.default_schedule(), types=p.types)
    assert Epilogue.parse("gelu(acc + bias)").token in kern.name and kern.epilogue == "gelu(acc + bias)"
    assert op.kernel(op.default_schedule()).name == kern.name.replace("_" + Epilogue.parse("gelu(acc+bias)").token, "")
    with pytest.raises(UsageError, match="is built for epilogue"):
        op.plan(op.kernel(op.default_schedule()), p)


def test_batch_prints_and_refuses_strides_that_are_neither_0_nor_packed():
    op = get_op("sgemm")
    p = parse_size(op, "M=4,N=3,K=2,batch=5,stride_b=0", False)
    assert str(p) == "M=4,N=3,K=2,batch=5,stride_b=0" and p.batch.stride_a == 8
    assert op.for_problem(p).input_shapes(p) == {"A": (5, 4, 2), "B": (1, 2, 3)}
    with pytest.raises(UsageError, match="stride_a=3 is illegal; A is 4x2: its batch stride is 0 .broadcast. or 8"):
        op.problem({"M": 4, "N": 3, "K": 2}, batch=2, stride_a=3)
    with pytest.raises(UsageError, match="softmax takes no batch"):
        get_op("softmax").problem(batch=2)
    with pytest.raises(UsageError, match="conv2d takes no batch"):
        get_op("conv2d").problem(batch=2)


def test_one_epilogue_after_split_k_atomics_is_refused_and_schedule_for_avoids_it():
    op = get_op("sgemm")
    p = op.problem({"M": 16, "N": 16, "K": 100000}, epilogue="relu(acc)")
    with pytest.raises(ScheduleError, match="reduce_k.*atomics add into C with no pass after them.*allowed: workspace"):
        op.for_problem(p).kernel(op.schedule(split_k=4), types=p.types)
    k = op.knobs_from_schedule(op.schedule_for(p))
    assert k["split_k"] == 1 or k["reduce_k"] == "workspace"
    b = op.problem({"M": 16, "N": 16, "K": 100000}, batch=3)
    assert op.knobs_from_schedule(op.schedule_for(b))["split_k"] == 1
    with pytest.raises(ScheduleError, match="blockIdx.z"):
        op.for_problem(b).kernel(op.schedule(split_k=2, reduce_k="workspace"), types=b.types)
    c = get_op("conv2d")
    cp = c.problem(small=True, epilogue="relu(acc + bias)")
    with pytest.raises(ScheduleError, match="split_k"):
        c.for_problem(cp).kernel(c.schedule(split_k=2), types=cp.types)
    assert c.knobs_from_schedule(c.schedule_for(cp))["split_k"] == 1


def test_wgmma_refuses_a_batch_and_schedule_for_takes_mma():
    op = get_op("gemm")
    p = op.problem({"M": 256, "N": 256, "K": 256}, dtype="float16", batch=4)
    assert op.knobs_from_schedule(op.schedule_for(p, target("sm_90a")))["instr"] == "mma"
    from kernelgen.ops.gemm import WGMMA_HEURISTIC
    with pytest.raises(ScheduleError, match="TMA descriptors of the wgmma kernel are 2-D"):
        op.for_problem(p).kernel(op.schedule(**WGMMA_HEURISTIC), target("sm_90a"), p.types)


FUSED = [("sgemm", {}, None, "gelu(acc + bias) + res", None), ("sgemm", {"split_k": 3, "reduce_k": "workspace"}, None,
         "relu(acc + bias)", None), ("sgemm", {}, None, "acc + bias", 3), ("gemm", {}, "float16", "silu(acc) + res", 2),
         ("conv2d", {}, None, "gelu(acc + bias) + res", None), ("conv2d", {"algo": "direct"}, None, "relu(acc + bias)", None)]


@pytest.mark.parametrize("name,knobs,dt,ep,batch", FUSED)
def test_recipe_matches_plan_with_epilogue_and_batch(name, knobs, dt, ep, batch):
    op = get_op(name)
    sizes = op.test_problems()[1]
    p = op.problem(sizes, dtype=dt, epilogue=ep, batch=batch, stride_a=0 if batch else None)
    prep = prepare(op, op.schedule(**knobs), p, target("sm_90"))
    extra = {"batch": p.batch.count, "stride_a": p.batch.stride_a, "stride_b": p.batch.stride_b} if batch else {}
    run = evaluate(prep.op.recipe(prep.kernel), dict(p.as_dict(), **extra), 132)
    assert run.ok and as_recipe(run) == as_plan(prep.plan)
    assert all(b in prep.plan.launches[-1].args for b in prep.op.epilogue.inputs)


def test_plain_kernels_render_as_before():
    """No epilogue, no batch: the templates' new pieces leave the source as generated/ holds it."""
    for name in ("sgemm", "gemm", "conv2d"):
        op = get_op(name)
        src = render(op.kernel(op.default_schedule(), target("sm_90"), op.types()))
        assert "_ep(" not in src and "stride_a" not in src


# -- NVRTC ----------------------------------------------------------------------------------------
@pytest.mark.nvrtc
@pytest.mark.parametrize("knobs,arch", [({}, "sm_90"), (dict(instr="wmma", smem="pad", pad=8, ldmatrix=False), "sm_90"),
                                        ("wgmma", "sm_90a"), ("wgmma_staged", "sm_90a")])
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_tensor_core_gemm_with_an_epilogue_compiles(knobs, arch, dt):
    from kernelgen.ops.gemm import WGMMA_HEURISTIC, WGMMA_KNOBS
    if isinstance(knobs, str):
        knobs = {"wgmma": WGMMA_KNOBS, "wgmma_staged": WGMMA_HEURISTIC}[knobs]
    op = get_op("gemm")
    p = op.problem({"M": 64, "N": 72, "K": 40}, dtype=dt, epilogue="gelu(acc + bias) + res")
    prep = prepare(op, op.schedule(**knobs), p, target(arch))
    assert prep.binary.cubin and "_ep(" in prep.source


# -- CPU emulator ---------------------------------------------------------------------------------
@pytest.mark.emulate
@pytest.mark.parametrize("ep", EPILOGUES)
def test_sgemm_epilogues_on_the_emulator(ep):
    op = get_op("sgemm")
    scheds = (op.default_schedule(), op.ladder()[0].schedule,
              op.schedule(bm=64, bn=64, wm=32, wn=32, tm=4, tn=8, split_k=3, reduce_k="workspace"))
    for sizes in AWKWARD:
        for s in scheds:
            v = validate(op, s, op.problem(sizes, epilogue=ep), backend="emulate", order="reverse")
            assert v.ok, (sizes, s, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("strides", [(None, None), (0, None), (None, 0)])
def test_batched_sgemm_with_broadcast_on_the_emulator(strides):
    op = get_op("sgemm")
    for sizes in AWKWARD[:2]:
        for s in (op.default_schedule(), op.ladder()[0].schedule):
            p = op.problem(sizes, batch=3, stride_a=strides[0], stride_b=strides[1], epilogue="relu(acc + bias) + res")
            v = validate(op, s, p, backend="emulate")
            assert v.ok, (p, v.summary())
    p = op.problem(AWKWARD[1], batch=2, stride_b=0)      # no epilogue: the exact check
    assert validate(op, op.default_schedule(), p, backend="emulate").ok


@pytest.mark.emulate
@pytest.mark.parametrize("algo", ["implicit", "direct", "im2col"])
def test_conv2d_epilogues_on_the_emulator(algo):
    op = get_op("conv2d")
    for ep in ("relu(acc + bias)", "gelu(acc + bias) + res", "silu(acc) * 0.5"):
        for sizes in op.test_problems()[:3]:
            v = validate(op, op.schedule(algo=algo), op.problem(sizes, epilogue=ep), backend="emulate")
            assert v.ok, (ep, sizes, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("dt,out", [("float16", None), ("bfloat16", "float32")])
def test_gemm_epilogue_and_batch_on_the_emulator(dt, out):
    op = get_op("gemm")
    wmma = op.schedule(instr="wmma", smem="pad", pad=8, ldmatrix=False, bm=64, bn=64, wm=32, wn=32, stages=2)
    for s in (op.default_schedule(), wmma):
        for sizes, batch in (({"M": 1, "N": 1, "K": 1}, None), ({"M": 33, "N": 17, "K": 40}, 2)):
            p = op.problem(sizes, dtype=dt, out_dtype=out, epilogue="gelu(acc + bias) + res", batch=batch,
                           stride_b=0 if batch else None)
            v = validate(op, s, p, backend="emulate")
            assert v.ok, (p, v.summary())


# -- GPU ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("name,dt", [("sgemm", None), ("gemm", "float16"), ("gemm", "bfloat16")])
def test_fused_products_on_the_gpu(name, dt):
    from kernelgen import gpu
    op = get_op(name)
    for sizes in ({"M": 1, "N": 8, "K": 8}, {"M": 300, "N": 520, "K": 1000}):
        for ep, batch in (("gelu(acc + bias)", None), ("relu(acc + bias) + res", 3)):
            p = op.problem(sizes, dtype=dt, epilogue=ep, batch=batch, stride_a=0 if batch else None)
            v = validate(op, op.schedule_for(p, gpu.device()), p, backend="gpu")
            assert v.ok, (p, v.summary())
