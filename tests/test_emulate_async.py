"""cp.async on the CPU emulator with its real semantics: a copy lands in shared memory only when its
group is waited for (cp.async.commit_group closes a group, cp.async.wait_group N completes all but the
newest N); before that its destination reads as poison (NaN), and in check mode any access to it is
reported. A pipeline that waits for one group too few is caught, in hand-written kernels and in the
generated sgemm and gemm pipelines."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from kernelgen import get_op
from kernelgen.emulate import EmulationError, execute
from kernelgen.ops.base import Kernel, Launch, Plan, Problem
from kernelgen.schedule import Schedule
from kernelgen.validate import validate

pytestmark = pytest.mark.emulate

PRELUDE = (Path(__file__).resolve().parent.parent / "templates" / "common" / "prelude.cuh").read_text()

# Two groups per thread: x[t] into a[t] (group 0), x[64 + t] into b[t] (group 1). WAIT is how many of
# the newest groups may still be in flight when the block reads both arrays.
PIPE = PRELUDE + r"""
extern "C" __global__ void __launch_bounds__(64) two_groups(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float a[64];
  __shared__ float b[64];
  const int t = threadIdx.x;
  kg_cp_async4(&a[t], &x[t]);
  kg_cp_async_commit();
  kg_cp_async4(&b[t], &x[64 + t]);
  kg_cp_async_commit();
  kg_cp_async_wait<WAIT>();
  __syncthreads();
  y[t] = a[63 - t] + 1000.0f * b[63 - t];
}
"""


def run_pipe(wait: int, *, check: bool, order: str = "forward"):
    src = PIPE.replace("WAIT", str(wait))
    kern = Kernel("test", f"two_groups_{wait}", Schedule("test"), (), "", ())
    plan = Plan(kern, Problem((("n", 1),)), (Launch("two_groups", (1, 1, 1), (64, 1, 1), ("x", "y")),))
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(64, np.float32)
    execute(plan, src, {"x": x, "y": y}, check=check, order=order)
    return x, y


@pytest.mark.parametrize("order", ["forward", "reverse"])
@pytest.mark.parametrize("check", [False, True])
def test_copies_land_when_their_group_is_waited_for(check, order):
    x, y = run_pipe(0, check=check, order=order)
    assert np.array_equal(y, x[63::-1] + 1000.0 * x[:63:-1])


def test_a_group_not_waited_for_reads_as_poison():
    # group 1 (b) still in flight: its destination is NaN until its thread waits or exits (forward
    # order: the threads of the first half read b before the second half exits)
    _, y = run_pipe(1, check=False)
    assert np.isnan(y[:32]).all()


def test_a_group_not_waited_for_is_reported_in_check_mode():
    with pytest.raises(EmulationError, match=r"shared read of a cp.async destination before its group was "
                                             r"waited for: b\[63\].*thread \(0,0,0\).*thread \(63,0,0\) issued") as e:
        run_pipe(1, check=True)
    assert e.value.kind == "race" and e.value.buffer == "b"


def test_uncommitted_copies_are_not_waited_for():
    src = PIPE.replace("WAIT", "0").replace("  kg_cp_async4(&b[t], &x[64 + t]);\n  kg_cp_async_commit();\n",
                                            "  kg_cp_async4(&b[t], &x[64 + t]);\n")
    kern = Kernel("test", "uncommitted", Schedule("test"), (), "", ())
    plan = Plan(kern, Problem((("n", 1),)), (Launch("two_groups", (1, 1, 1), (64, 1, 1), ("x", "y")),))
    with pytest.raises(EmulationError, match="cp.async destination before its group was waited for: b"):
        execute(plan, src, {"x": np.arange(128, dtype=np.float32), "y": np.zeros(64, np.float32)}, check=True)


# ---- the generated pipelines: one group too few waited for ------------------------------------------
def wait_one_fewer(src: str) -> str:
    """kg_cp_async_wait<N>() -> kg_cp_async_wait<N + 1>(): one more group left in flight than the pipeline allows."""
    out, n = re.subn(r"kg_cp_async_wait<(\d+)>\(\)", lambda m: f"kg_cp_async_wait<{int(m[1]) + 1}>()", src)
    assert n, "no cp.async wait in the kernel"
    return out


PIPELINES = {
    "sgemm, 3 stages": ("sgemm", dict(copy="cp_async", stages=3, vec_a=1), {"M": 67, "N": 45, "K": 77}),
    "sgemm, 4 stages, bk 16": ("sgemm", dict(copy="cp_async", stages=4, a_layout="mk", bk=16),
                               {"M": 33, "N": 68, "K": 100}),
    "gemm (wmma), 3 stages": ("gemm", dict(copy="cp_async", stages=3), {"M": 40, "N": 72, "K": 136}),
}


@pytest.mark.parametrize("name", list(PIPELINES))
def test_waiting_for_one_group_too_few_is_caught(name):
    opname, knobs, sizes = PIPELINES[name]
    op = get_op(opname)
    sched, p = op.schedule(**knobs), op.problem(sizes)
    v = validate(op, sched, p, backend="emulate", check=True, seed=1)
    assert v.ok, v.summary()
    with pytest.raises(EmulationError, match="cp.async destination before its group was waited for"):
        validate(op, sched, p, backend="emulate", check=True, seed=1, mutate=wait_one_fewer)
    # without the checker the tile read before it landed is poison: the answer is wrong
    assert not validate(op, sched, p, backend="emulate", check=False, seed=1, mutate=wait_one_fewer).ok


def test_a_destination_outside_shared_memory_is_refused():
    src = PRELUDE + r"""
extern "C" __global__ void to_register(const float* __restrict__ x, float* __restrict__ y) {
  float v;
  kg_cp_async4(&v, &x[threadIdx.x]);
  kg_cp_async_wait<0>();
  y[threadIdx.x] = v;
}
"""
    kern = Kernel("test", "to_register", Schedule("test"), (), "", ())
    plan = Plan(kern, Problem((("n", 1),)), (Launch("to_register", (1, 1, 1), (32, 1, 1), ("x", "y")),))
    with pytest.raises(EmulationError, match="cp.async destination 0x[0-9a-f]+ is not in shared memory"):
        execute(plan, src, {"x": np.zeros(32, np.float32), "y": np.zeros(32, np.float32)})
