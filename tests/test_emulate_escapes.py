"""Bugs that leave the answer right, caught because every emulator validation of the suite runs with the
checker on (tests/conftest.py sets KERNELGEN_EMULATE_CHECK): each test mutates one template line the way
the 2026-11-23 mutation run did, and the plain validation call the op tests make must now fail."""
from __future__ import annotations

import pytest

from kernelgen import get_op
from kernelgen.emulate import EmulationError
from kernelgen.mutate import Mutation, render_mutant
from kernelgen.prepared import prepare
from kernelgen.validate import target_for, validate

pytestmark = pytest.mark.emulate

ESCAPES = {
    # reduce's strided step one level too far: thread 0 adds sdata[threads], one past the end
    "reduce strided step reads one past the end": (
        "reduce_sum", dict(strategy="strided", threads=128), {"n": 4097},
        Mutation("reduce_sum.cu.j2", "for (int s = 1; s < {{ threads }}; s *= 2) {\n    const int index",
                 "for (int s = 1; s <= {{ threads }}; s *= 2) {\n    const int index"),
        "out-of-bounds shared-memory read"),
    # the shuffle all-reduce without its trailing barrier: the next reduction's stores race the reads
    "softmax all-reduce without its trailing barrier": (
        "softmax", {}, {"rows": 5, "cols": 1000},
        Mutation("lib/reduce.j2", "  {{ warp(vals, op, warps) | indent(2) | trim }}\n  __syncthreads();\n",
                 "  {{ warp(vals, op, warps) | indent(2) | trim }}\n"),
        "shared-memory race"),
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_escapes_are_caught_by_the_default_validation(name):
    opname, knobs, sizes, mutation, message = ESCAPES[name]
    op = get_op(opname)
    sched, p = op.schedule(**knobs), op.problem(sizes)
    v = validate(op, sched, p, backend="emulate")
    assert v.ok, v.summary()
    mutant = render_mutant(prepare(op, sched, p, target_for("emulate", None)).kernel, mutation)
    for order in ("forward", "reverse"):
        with pytest.raises(EmulationError, match=message):
            validate(op, sched, p, backend="emulate", order=order, mutate=lambda _: mutant)
    # the answer stays right: without the checker the bug goes unseen
    assert validate(op, sched, p, backend="emulate", check=False, mutate=lambda _: mutant).ok
