"""GPU-only: interop with CuPy and PyTorch arrays, and the checks on caller arrays."""
import numpy as np
import pytest

import kernelgen as kg
from kernelgen.errors import UsageError

pytestmark = pytest.mark.gpu


@pytest.fixture
def op():
    return kg.get_op("reduce_sum")


def test_torch_tensors_in_and_out(op):
    torch = pytest.importorskip("torch")
    x = torch.randint(-16, 17, (100003,), device="cuda").float()
    out = torch.full((1,), float("nan"), device="cuda")
    kg.launch(op, op.default_schedule(), op.problem({"n": 100003}), x=x, out=out)
    assert out.item() == x.double().sum().item()


def test_cupy_arrays_and_wrong_arrays_are_named(op):
    import cupy
    p = op.problem({"n": 1000})
    x = cupy.asarray(np.arange(1000, dtype=np.float32))
    out = cupy.empty(1, dtype=cupy.float32)
    kg.launch(op, op.default_schedule(), p, x=x, out=out)
    assert float(out[0]) == 499500.0
    with pytest.raises(UsageError, match="dtype float64; this kernel takes float32"):
        kg.launch(op, op.default_schedule(), p, x=x.astype(cupy.float64), out=out)
    with pytest.raises(UsageError, match=r"shape \(999,\); the problem needs \(1000,\)"):
        kg.launch(op, op.default_schedule(), p, x=x[:999], out=out)
    with pytest.raises(UsageError, match="not C-contiguous"):
        kg.launch(op, op.default_schedule(), op.problem({"n": 500}), x=x[::2], out=out)
    with pytest.raises(UsageError, match="not aligned to 16 bytes"):
        kg.launch(op, op.default_schedule(), op.problem({"n": 999}), x=x[1:], out=out)
    with pytest.raises(UsageError, match="missing \\['out'\\]"):
        kg.launch(op, op.default_schedule(), p, x=x)


def test_launch_goes_on_the_callers_stream_and_does_not_wait(op):
    torch = pytest.importorskip("torch")
    p = op.problem({"n": 4096})
    x = torch.ones(4096, device="cuda")
    out = torch.full((1,), float("nan"), device="cuda")
    kg.launch(op, op.default_schedule(), p, x=x, out=out)      # build, compile and load outside the test
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        out.fill_(float("nan"))
        torch.cuda._sleep(200_000_000)                          # ~0.1 s of spinning ahead of the kernel
        kg.launch(op, op.default_schedule(), p, x=x, out=out)
        assert not side.query()                                 # launch returned with the work still queued
    side.synchronize()
    assert out.item() == 4096.0                                 # it ran on `side`, after the sleep


def test_a_cached_launch_reuses_the_prepared_kernel(op):
    import cupy
    from kernelgen.prepared import _prepare
    p = op.problem({"n": 777})
    x, out = cupy.ones(777, dtype=cupy.float32), cupy.empty(1, dtype=cupy.float32)
    kg.launch(op, op.default_schedule(), p, x=x, out=out)
    before = _prepare.cache_info()
    for _ in range(10):
        kg.launch(op, op.default_schedule(), p, x=x, out=out)
    after = _prepare.cache_info()
    assert after.hits - before.hits == 10 and after.misses == before.misses
    assert float(out[0]) == 777.0


# -- timing: CUDA-graph replays against events (plausibility, not speed) --------------------------
def _softmax(rows, cols):
    sm = kg.get_op("softmax")
    p = sm.problem({"rows": rows, "cols": cols})
    return sm, sm.schedule_for(p), p


def test_graph_timing_of_a_small_problem_is_below_events_and_above_the_roofline():
    from kernelgen.timing import measure
    sm, s, p = _softmax(8192, 128)   # 8 MB: one launch between events is mostly launch overhead
    events, graph = measure(sm, s, p, timing="events"), measure(sm, s, p, timing="graph")
    assert events.method == "events" and graph.method == "graph"
    assert graph.time_us < events.time_us, (graph, events)
    assert graph.roofline < 1.1, graph   # rotating > 2x L2 of inputs: no launch reads its inputs from L2


def test_graph_and_events_agree_on_a_large_problem():
    from kernelgen.timing import measure
    sm, s, p = _softmax(4096, 4096)  # 128 MB: launch overhead is a few percent
    events, graph = measure(sm, s, p, timing="events"), measure(sm, s, p, timing="graph")
    assert 0.7 < graph.time_us / events.time_us < 1.15, (graph, events)


def test_every_rotated_set_is_written_by_the_graph():
    import cupy
    from kernelgen import gpu
    from kernelgen.timing import device_sets, measure, rotation, set_bytes
    sm, s, p = _softmax(8192, 128)
    sets = rotation(set_bytes(sm, p), gpu.device().l2_bytes)[0]
    assert sets > 1
    for a in device_sets(sm, p, sets):
        a["y"].fill(float("nan"))
    measure(sm, s, p, timing="graph", reps=2, warmup=0)
    for a in device_sets(sm, p, sets):
        assert bool(cupy.allclose(a["y"].sum(axis=1), 1.0, atol=1e-4))


def test_the_vendor_is_graph_timed_on_the_same_rotation():
    pytest.importorskip("torch")
    from kernelgen.timing import measure, measure_vendor
    sm, s, p = _softmax(8192, 128)
    label, v = measure_vendor(sm, p, timing="graph")
    assert label == "torch.softmax" and v.method == "graph", v
    assert v.roofline < 1.1, v
    ratio = v.time_us / measure(sm, s, p, timing="graph").time_us
    assert 0.2 < ratio < 5, ratio
