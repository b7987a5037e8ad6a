"""Layer norm with a fused residual add (y = LN(x + res), optionally h = x + res written): the problem
parameter (printed, parsed, refused where it does not belong), the op instance's buffers and names, the
plan, and every algorithm on the emulator at awkward sizes in float32, float16 and bfloat16."""
import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen.errors import UsageError
from kernelgen.sizes import parse_size
from kernelgen.validate import validate

op = get_op("layernorm")
MODES = ("add", "add_store")


def test_the_residual_is_a_problem_parameter_that_prints_and_parses():
    p = op.problem({"rows": 3, "cols": 37}, residual="add_store", dtype="bfloat16")
    assert str(p) == "rows=3,cols=37:bf16;residual=add_store"
    assert parse_size(op, str(p), False, "bfloat16") == p
    assert str(op.problem({"rows": 3, "cols": 37})) == "rows=3,cols=37"        # plain problems print as before
    inst = op.for_problem(p)
    assert (inst.inputs, inst.outputs) == (("x", "res", "gamma", "beta"), ("y", "h"))
    assert op.for_problem(op.problem(residual="add")).outputs == ("y",)
    assert op.for_problem(op.problem()) is op and inst.for_problem(op.problem()) is op
    assert inst.input_shapes(p) == {"x": (3, 37), "res": (3, 37), "gamma": (37,), "beta": (37,)}
    assert inst.output_shapes(p) == {"y": (3, 37), "h": (3, 37)}


def test_kernels_are_named_by_the_mode_and_plain_ones_keep_their_names():
    sched = op.default_schedule()
    plain = op.kernel(sched)
    for mode, token in (("add", "res"), ("add_store", "resh")):
        inst = op.for_problem(op.problem(residual=mode))
        k = inst.kernel(sched)
        assert k.name == plain.name.replace("_f32_", f"_f32_{token}_") and k.residual == mode
        assert get_op("layernorm").for_kernel(k) is inst
    assert plain.residual is None and "__restrict__ res" not in render(plain)


def test_plan_passes_the_residual_buffers_in_order():
    p = op.problem({"rows": 3, "cols": 8}, residual="add_store")
    inst = op.for_problem(p)
    plan = inst.plan(inst.kernel(op.default_schedule()), p)
    assert plan.launches[0].args == ("x", "res", "gamma", "beta", "y", "h", "rows", "cols", "eps")
    assert dict(plan.alignment)["res"] == dict(plan.alignment)["h"] == 16
    split = op.schedule(algo="split", threads=64, items=2)
    launches = inst.plan(inst.kernel(split), p).launches
    assert launches[0].args[:4] == ("x", "res", "stats", "h") and launches[1].args[:2] == ("x", "res")


@pytest.mark.parametrize("call,message", [
    (lambda: op.problem(residual="mul"), r"residual='mul' is not a residual mode; choose one of add \(y = LN"),
    (lambda: get_op("softmax").problem(residual="add"), "softmax takes no residual; residuals are for layernorm"),
    (lambda: parse_size(get_op("sgemm"), "M=2,N=2,K=2;residual=add", False), "sgemm takes no residual"),
    (lambda: parse_size(op, "rows=2,cols=2;resid=add", False), "must be epilogue=EXPRESSION .* or residual=add|add_store"),
    (lambda: op.plan(op.kernel(op.default_schedule()), op.problem(residual="add")),
     "built for residual None, the problem rows=8192,cols=4096;residual=add has residual 'add'"),
])
def test_bad_residuals_say_what_is_allowed(call, message):
    with pytest.raises(UsageError, match=message):
        call()


def test_reference_normalises_the_sum_and_returns_it():
    p = op.problem({"rows": 3, "cols": 6}, residual="add_store")
    inst = op.for_problem(p)
    inputs = inst.make_inputs(p, np.random.default_rng(1))
    ref = inst.reference(inputs, p)
    plain = op.problem({"rows": 3, "cols": 6})
    summed = dict(inputs, x=inputs["x"].astype(np.float64) + inputs["res"])
    assert np.allclose(ref["h"], summed["x"])
    assert np.allclose(ref["y"], op.reference({k: summed[k] for k in op.inputs}, plain)["y"])


SCHEDULES = {   # every algorithm: the row in registers, Welford, two passes (scalar), split over blocks
    "registers": dict(threads=128, rows_per_block=1, items=9),      # 4097 columns fit (9 x 128 x vec)
    "welford": dict(algo="welford", threads=32, rows_per_block=4, items=2),
    "two_pass": dict(algo="two_pass", threads=32, rows_per_block=2, items=1, vec=1, reduction="shared"),
    "split": dict(algo="split", threads=64, items=2),
}


@pytest.mark.emulate
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("algo", sorted(SCHEDULES))
def test_residual_layer_norm_is_right_on_the_emulator(algo, mode, dtype):
    for cols in (1, 37, 4097):
        p = op.problem({"rows": 3, "cols": cols}, residual=mode, dtype=dtype)
        knobs = dict(SCHEDULES[algo], **({"vec": 8} if dtype != "float32" and "vec" not in SCHEDULES[algo] else {}))
        v = validate(op, op.schedule(**knobs), p, backend="emulate", check=True)
        assert v.ok, (algo, mode, dtype, cols, v.summary())


@pytest.mark.emulate
def test_heuristic_schedule_with_a_residual_on_the_emulator():
    p = op.problem({"rows": 3, "cols": 4097}, residual="add_store", dtype="bfloat16")
    v = validate(op, op.schedule_for(p), p, backend="emulate", check=True)
    assert v.ok, v.summary()


@pytest.mark.emulate
def test_a_kernel_that_drops_the_residual_fails():
    p = op.problem({"rows": 3, "cols": 37}, residual="add")
    sched = op.schedule(**SCHEDULES["welford"])
    assert validate(op, sched, p, backend="emulate", seed=3).ok
    v = validate(op, sched, p, backend="emulate", seed=3, mutate=lambda src: src.replace("] += ", "] -= "))
    assert not v.ok


@pytest.mark.nvrtc
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_residual_kernels_compile_wide_and_spill_nothing(dtype):
    from kernelgen.compile import compile_cuda
    from kernelgen.inspect import facts_of
    from kernelgen.ops.rows import ANY_SUFFIX
    p = op.problem({"rows": 8192, "cols": 4096}, residual="add_store", dtype=dtype)
    inst = op.for_problem(p)
    # the heuristic's forms (row_heuristic); the 16-bit Welford loop at 256 x 2 (not a heuristic pick) has ptxas
    # keep two row pointers on the stack (16-32 bytes) with h's
    for knobs in (dict(algo="registers", threads=256, items=2), dict(algo="welford", threads=512, items=4),
                  dict(algo="split", threads=128, items=2)):
        k = inst.kernel(op.schedule(**knobs, vec=4 if dtype == "float32" else 8), types=p.types)
        for sym, f in {f.symbol: f for f in facts_of(compile_cuda(render(k), "sm_90", k.name))}.items():
            if sym.endswith(ANY_SUFFIX):
                # the any-alignment twin (cols % vec != 0) keeps a row's offset and edge lanes besides; at
                # 512 threads ptxas holds the float32 Welford loop to 64 registers and spills a few words
                assert f.spill_bytes <= 32, (knobs, sym, f.spill_bytes)
            else:
                assert f.spill_bytes == 0 and f.local_ops == 0, (knobs, sym)
            # x, res, y and h in 16-byte accesses (the any-alignment twin too)
            assert f.ldg128 > 0 and f.stg128 > 0, (knobs, sym, f.ldg128, f.stg128)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mode", MODES)
def test_residual_layer_norm_on_the_gpu(mode, dtype):
    from kernelgen import gpu
    for sizes in ({"rows": 3, "cols": 1}, {"rows": 37, "cols": 4097}, {"rows": 8192, "cols": 768}, {"rows": 2, "cols": 70000}):
        p = op.problem(sizes, residual=mode, dtype=dtype)
        for sched in (op.schedule_for(p, gpu.device()), op.schedule(**SCHEDULES["split"])):
            v = validate(op, sched, p, backend="gpu")
            assert v.ok, (sizes, v.summary())
