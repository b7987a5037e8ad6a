"""A flat numeric vector per schedule, for any model to learn from: knobs, kernel, target, cubin.

>>> from kernelgen.ops import get_op
>>> from kernelgen.target import target
>>> from kernelgen.features import features
>>> op = get_op("reduce_sum")
>>> kern = op.kernel(op.default_schedule())
>>> f = features(kern, target(), plan=op.plan(kern, op.problem({"n": 1 << 20})))
>>> f["threads"], f["strategy=shuffle"], f["strategy=divergent"], f["threads_per_block"]
(512.0, 1.0, 0.0, 512.0)
>>> f["blocks_per_sm.threads"], f["blocks_per_sm.regs"], f["blocks_per_sm"]     # 96 registers x 512 threads
(4.0, 1.0, 1.0)

The keys, in this order (every value a float):
  knobs          numbers as they are, booleans 0/1, any other knob one-hot over the op's declared
                 choices as `knob=value` (so every schedule of an op has the same knob keys);
  kernel         threads_per_block, static_smem_bytes, dynamic_smem_bytes, registers_estimate,
                 vector widths from the template params (`vec.vec_a`, ...) where the op has them;
  occupancy      blocks_per_sm.threads / .smem / .regs (what each resource alone lets fit on one
                 SM of the target), blocks_per_sm (the least of them) and occupancy (resident
                 threads over the SM's maximum);
  plan           (when a plan is given) launches, grid_blocks, waves, and the sizes as `size.N`;
  target         target.sms, target.cc, target.max_threads_per_sm, target.smem_per_sm, target.regs_per_sm;
  cubin          (when facts are given) `cubin.registers`, `cubin.spill_bytes`, `cubin.ldg128`, ...
                 of the main kernel; its registers then replace the estimate in blocks_per_sm.regs.

`ptxas_features(log, symbol)` reads the cheaper subset that every compile already prints (ptxas -v:
registers, spills, stack, shared memory) without cuobjdump or nvdisasm; the tuner's builders add it
to each record as `ptxas.registers`, `ptxas.spill_bytes`, `ptxas.stack_bytes`, `ptxas.smem_bytes`.

Threads per block, dynamic shared memory, grid_blocks, waves and the cubin facts (and the builder's
ptxas.*) are those of the plan's main launch (main_launch: the launch with the most threads in all among
those computing the op, not a helper filling, reducing or copying for them); without a plan threads and
shared memory come from the template params where the op states them.
"""
from __future__ import annotations

import math
import re
from dataclasses import fields
from typing import Any, Iterable

from .inspect import KernelFacts
from .ops.base import Kernel, Launch, Plan
from .target import Target, capability

_VECTOR_PARAM = re.compile(r"(^|_)vec(_[a-z])?$")   # vec, vec_a, frag_vec_b; not a_vecs (a count)
REGISTER_UNIT = 256        # registers are allocated per warp in units of 256


def features(kernel: Kernel, target: Target, facts: KernelFacts | Iterable[KernelFacts] | None = None, *,
             plan: Plan | None = None) -> dict[str, float]:
    main = main_launch(plan) if plan else None
    fact = _main_facts(facts, main)
    out: dict[str, float] = {}
    out.update(knob_features(kernel))
    out.update(kernel_features(kernel, main))
    out.update(occupancy(out["threads_per_block"], max(out["static_smem_bytes"], out["dynamic_smem_bytes"]),
                         fact.registers if fact else kernel.registers_estimate, target))
    if plan:
        out.update(plan_features(plan, main, out["blocks_per_sm"], target))
    out.update(target_features(target))
    if fact:
        out.update({f"cubin.{f.name}": float(getattr(fact, f.name)) for f in fields(fact) if f.name != "symbol"})
    return out


def knob_features(kernel: Kernel) -> dict[str, float]:
    from .ops import OPS
    op = OPS.get(kernel.op)
    declared = {k.name: k.choices for k in op.knobs} if op else {}
    out: dict[str, float] = {}
    for name, value in kernel.knobs:
        choices = declared.get(name, (value,))
        if all(_is_number(c) for c in choices) and _is_number(value):
            out[name] = float(value)
        elif all(isinstance(c, bool) for c in choices) and isinstance(value, bool):
            out[name] = float(value)
        else:
            for c in dict.fromkeys((*choices, value)):   # the declared choices, then an undeclared value
                out[f"{name}={c}"] = 1.0 if c == value else 0.0
    return out


def kernel_features(kernel: Kernel, main: Launch | None) -> dict[str, float]:
    params = dict(kernel.params)
    out = {"threads_per_block": float(main.threads if main else _threads_from_params(params, kernel)),
           "static_smem_bytes": float(kernel.static_smem),
           "dynamic_smem_bytes": float(main.shared_bytes if main else 0),
           "registers_estimate": float(kernel.registers_estimate)}
    out.update({f"vec.{k}": float(v) for k, v in sorted(params.items()) if _VECTOR_PARAM.search(k) and _is_number(v)})
    return out


def occupancy(threads: float, smem: float, registers: float, target: Target) -> dict[str, float]:
    """Blocks of one SM by each resource. Shared memory is the larger of the static and dynamic
    figures, not their sum: ops that allocate dynamically (sgemm, staged_load) state the same bytes
    as static_smem for the legality check, so a sum would count them twice. A resource the kernel
    does not use (no shared memory) gets the threads' figure, a finite stand-in for "no limit"."""
    if threads <= 0:
        return {"blocks_per_sm.threads": 0.0, "blocks_per_sm.smem": 0.0, "blocks_per_sm.regs": 0.0,
                "blocks_per_sm": 0.0, "occupancy": 0.0}
    warps = math.ceil(threads / 32)
    by_threads = target.max_threads_per_sm // (warps * 32)
    by_smem = target.smem_per_sm // smem if smem else by_threads
    per_warp = math.ceil(registers * 32 / REGISTER_UNIT) * REGISTER_UNIT
    by_regs = target.regs_per_sm // (per_warp * warps) if registers else by_threads
    blocks = min(by_threads, by_smem, by_regs)
    return {"blocks_per_sm.threads": float(by_threads), "blocks_per_sm.smem": float(by_smem),
            "blocks_per_sm.regs": float(by_regs), "blocks_per_sm": float(blocks),
            "occupancy": blocks * threads / target.max_threads_per_sm}


def plan_features(plan: Plan, main: Launch, blocks_per_sm: float, target: Target) -> dict[str, float]:
    grid = main.grid[0] * main.grid[1] * main.grid[2]
    out = {"launches": float(len(plan.launches)), "grid_blocks": float(grid),
           "waves": grid / (target.sms * blocks_per_sm) if blocks_per_sm else 0.0}
    out.update({f"size.{k}": float(v) for k, v in plan.problem.sizes})
    return out


def target_features(target: Target) -> dict[str, float]:
    major, minor = capability(target.arch)
    return {"target.sms": float(target.sms), "target.cc": float(10 * major + minor),
            "target.max_threads_per_sm": float(target.max_threads_per_sm),
            "target.smem_per_sm": float(target.smem_per_sm), "target.regs_per_sm": float(target.regs_per_sm)}


def main_launch(plan: Plan) -> Launch:
    """The launch computing the op: of the launches that are not its helpers (a `role`, ops/base.py HELPERS:
    a fill, a reduction of partial results, a copy), the one with the most threads in all (the first of
    equals: a row's statistics pass before the pass writing the row). Not the fill zeroing C before split-K's
    slices add into it (4096 blocks at every size), nor the reduction of the slices' partial tiles, nor
    conv2d's im2col. A plan of helpers alone: of them all."""
    work = [l for l in plan.launches if not l.role] or plan.launches
    return max(work, key=launch_size)


def launch_size(launch: Launch) -> tuple[int, int]:
    """(threads in all, threads a block): what orders the candidates for main_launch."""
    return launch.grid[0] * launch.grid[1] * launch.grid[2] * launch.threads, launch.threads


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")


def ptxas_features(log: str, symbol: str | None = None) -> dict[str, float]:
    """Registers, spills, stack and shared bytes of one entry of a ptxas -v log (the named one, or
    the one with the most registers); {} when the log reports no entry (a cached compile always has it).

    >>> log = ("ptxas info : Compiling entry function 'k' for 'sm_90'\\n"
    ...        "ptxas info : Function properties for k\\n"
    ...        "ptxas . 8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\\n"
    ...        "ptxas info : Used 40 registers, used 1 barriers, 2048 bytes smem")
    >>> ptxas_features(log)
    {'ptxas.registers': 40.0, 'ptxas.spill_bytes': 8.0, 'ptxas.stack_bytes': 8.0, 'ptxas.smem_bytes': 2048.0}
    """
    parts = _ENTRY.split(log)
    entries = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        regs = re.search(r"Used (\d+) registers", body)
        spill = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", body)
        smem = re.search(r"(\d+) bytes smem", body)
        entries[name] = {"ptxas.registers": float(regs.group(1)) if regs else 0.0,
                         "ptxas.spill_bytes": float(int(spill.group(2)) + int(spill.group(3))) if spill else 0.0,
                         "ptxas.stack_bytes": float(spill.group(1)) if spill else 0.0,
                         "ptxas.smem_bytes": float(smem.group(1)) if smem else 0.0}
    if not entries:
        return {}
    if symbol in entries:
        return entries[symbol]
    return max(entries.values(), key=lambda e: e["ptxas.registers"])


def _main_facts(facts, main: Launch | None) -> KernelFacts | None:
    """The facts of the main launch's kernel, or of the largest kernel where no plan names one."""
    if facts is None:
        return None
    if isinstance(facts, KernelFacts):
        return facts
    facts = list(facts)
    named = [f for f in facts if main and f.symbol == main.symbol]
    return named[0] if named else max(facts, key=lambda f: f.instructions, default=None)


def _threads_from_params(params: dict[str, Any], kernel: Kernel) -> int:
    block = params.get("block", params.get("threads", dict(kernel.knobs).get("threads", 0)))
    return math.prod(block) if isinstance(block, (tuple, list)) else int(block)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
