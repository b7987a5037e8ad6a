"""Run generated CUDA kernels on the CPU, and find their races and out-of-bounds accesses.

>>> import numpy as np
>>> from kernelgen.emulate import execute
>>> from kernelgen.ops.base import Kernel, Launch, Plan, Problem, Scalar
>>> from kernelgen.schedule import Schedule
>>> src = '''extern "C" __global__ void __launch_bounds__(64) twice(const float* __restrict__ x, float* y, int n) {
...   int i = blockIdx.x * blockDim.x + threadIdx.x;
...   if (i < n) y[i] = 2.0f * x[i];
... }'''
>>> kern = Kernel("demo", "twice", Schedule("demo"), (), "", ())
>>> plan = Plan(kern, Problem((("n", 100),)), (Launch("twice", (2, 1, 1), (64, 1, 1), ("x", "y", "n")),),
...             scalars=(Scalar("n", "int", 100),))
>>> x, y = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
>>> execute(plan, src, {"x": x, "y": y}, check=True)
>>> bool((y == 2 * x).all())
True

Each buffer starts at the weakest alignment the plan accepts (Plan.alignment, else one element), not
at cudaMalloc's 256 bytes. `execute` compiles the very `.cu` text kernelgen emits with the host C++ compiler (build.py, cached
on disk), then runs each launch: every CUDA thread is a fiber, blocks run one after another, and
threads switch only at barriers and warp exchanges (runner.cpp). `order` runs the threads of a
phase (and the blocks) forward, reversed or in a seeded random order, so a missing barrier reads a
value not written yet; `check=True` also reports out-of-bounds global and shared accesses and
shared-memory races between two barriers, as an EmulationError naming the thread and the offset.
A cp.async copy lands only when its group is waited for (cp.async.wait_group), its destination
poisoned until then; `check=True` reports any access to it before that.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ops.base import Plan
from ..target import Target
from . import build as _build
from .launch import ORDERS, EmulationError, run_launches

__all__ = ["execute", "EmulationError", "ORDERS", "GPU_ONLY_FEATURES", "runnable_target"]

# Target features whose instructions need hardware state no fiber has (source.UNSUPPORTED_ASM names them):
# a kernel that uses one is refused by name here and proven on the GPU.
GPU_ONLY_FEATURES = frozenset({"tma", "clusters", "wgmma", "setmaxnreg"})


def runnable_target(target: Target) -> Target:
    """`target` as the emulator runs it: its limits without GPU_ONLY_FEATURES, so that a search space or a
    heuristic asked with it offers only schedules the emulator can run."""
    return dataclasses.replace(target, features=target.features - GPU_ONLY_FEATURES)


def execute(plan: Plan, source: str, buffers: dict[str, np.ndarray], *, check: bool = False,
            order: str = "forward", seed: int = 0) -> None:
    """Run `plan`'s launches of the kernels in `source` on the CPU, updating `buffers` in place.

    `buffers` maps names to C-contiguous numpy arrays (inputs and outputs); the plan's workspaces are
    allocated here (filled with `fill`, or NaN) and its scalars passed by value. Raises CompileError
    when g++ rejects the source or it uses a construct the emulator lacks, EmulationError when a
    kernel faults, deadlocks or (with `check`) accesses memory out of bounds or races.
    """
    symbols = [launch.symbol for launch in plan.launches]
    lib = _build.build(source, symbols, check=check, name=plan.kernel.name or (symbols[0] if symbols else None))
    # each buffer at the weakest alignment the plan accepts (its declared bytes, else an element;
    # a TMA descriptor's buffer 16 bytes), as the GPU path can be handed it
    align = {m.buffer: 16 for m in plan.tensor_maps}
    for name, a in plan.alignment:
        align[name] = max(align.get(name, 1), int(a))
    run_launches(lib, plan.launches, buffers, plan.workspaces, plan.scalars, check=check, order=order, seed=seed,
                 alignment=align)
