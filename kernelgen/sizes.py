"""Problem sizes as the command line and suite files write them: `M=127,N=1000,K=1`, values in the op's
dim order (`127x1000x1`), shorthands (conv2d's `stride=2`), a GEMM's layout (`layout=NT`) and the types
a printed problem carries (`:f16`), a batch (`batch=8,stride_b=0`) and a fused epilogue after a semicolon
(`M=64,N=32,K=8;epilogue=gelu(acc + bias)`, ops/fusion.py), or layer norm's residual add
(`rows=8,cols=768;residual=add_store`, ops/layernorm.py). Below the CLI so that results files and suites read sizes too.

>>> from kernelgen.ops import get_op
>>> str(parse_size(get_op("sgemm"), "64x32x8", False, layout="NT"))
'M=64,N=32,K=8,layout=NT'
"""
from __future__ import annotations

import re

from .errors import UsageError
from .ops.base import Op, Problem

_INT = re.compile(r"[+-]?\d+")


def parse_size(op: Op, text: str | None, small: bool, dtype: str | None = None, out_dtype: str | None = None,
               layout: str | None = None) -> Problem:
    """`M=127,N=1000,K=1`, or every value in the op's dim order (`127,1000,1` or `127x1000x1`); GEMM-like
    ops also take their operand layout there (`M=64,N=32,K=8,layout=NT`, as a problem prints).

    Named sizes may leave dims out (they keep the default); values in dim order must give every dim.
    A size given twice, a value that is not a whole number or a dim the op lacks is a UsageError, and so
    is a layout that disagrees with `layout` (--layout)."""
    fused: dict = {}
    if text is not None and ";" in text:       # the epilogue (`;epilogue=EXPR`) or layer norm's `;residual=MODE`
        text, _, tail = text.partition(";")
        name, eq, expr = tail.partition("=")
        if name.strip() not in ("epilogue", "residual") or not eq:
            raise UsageError(f"--size: {tail!r} after ';' must be epilogue=EXPRESSION (e.g. epilogue=gelu(acc + bias)) "
                             "or residual=add|add_store")
        fused[name.strip()] = expr.strip()
        op.check_fusion(fused.get("epilogue"), None, None, None, fused.get("residual"))
    if text is None or not text.strip() and fused:
        return op.problem(small=small, dtype=dtype, out_dtype=out_dtype, layout=layout, **fused)
    dims = ", ".join(d.name for d in op.dims)
    example = ",".join(f"{d.name}={d.small}" for d in op.dims)
    body, colon, suffix = text.partition(":")
    if colon:   # the types a printed problem carries (M=1,N=2:f16) must agree with --dtype/--out-dtype
        short = op.types(dtype, out_dtype).short
        if suffix.strip() != short:
            raise UsageError(f"--size {text!r} names types {suffix.strip()!r} but --dtype/--out-dtype give {short!r}")
    parts = [p.strip() for p in body.split(",")]
    if not body.strip() or any(not p for p in parts):
        raise UsageError(f"--size {text!r} has an empty part; write e.g. {example} (sizes of {op.name}: {dims})")
    sizes: dict[str, int] = {}
    positional = 0
    given = None      # a layout=XY part
    for part in parts:
        name, eq, value = part.partition("=")
        if eq and name.strip().lower() == "layout":
            if given is not None:
                raise UsageError(f"--size {text!r} gives the layout twice; give it once (one of NN, NT, TN, TT)")
            given = op.check_layout(value.strip())
            if layout is not None and op.check_layout(layout) != given:
                raise UsageError(f"--size {text!r} names layout {given} but --layout gives {layout!r}; give one "
                                 "(NN, NT, TN or TT)")
            continue
        if eq and name.strip() in ("batch", "stride_a", "stride_b") and name.strip() not in {d.name for d in op.dims}:
            # a batched GEMM's count and strides (an op with its own `batch` size, attention, reads it below)
            if not _INT.fullmatch(value.strip()) or name.strip() in fused:
                raise UsageError(f"--size {text!r}: {part!r} must be given once, as a whole number")
            fused[name.strip()] = int(value)
            continue
        items = [(name.strip(), value.strip())] if eq else [(None, v.strip()) for v in part.split("x")]
        for name, value in items:
            if name is None:
                if positional >= len(op.dims):
                    raise UsageError(f"{op.name} takes {len(op.dims)} sizes ({dims}); got {text!r}")
                name = op.dims[positional].name
                positional += 1
            if not name:
                raise UsageError(f"--size {text!r}: {part!r} has no name; write e.g. {example}")
            if name not in {d.name for d in op.dims} | {s.name for s in op.shorthands}:
                raise UsageError(f"{op.name}: unknown size {name!r}; sizes are {op.size_names()}")
            if name in sizes:
                raise UsageError(f"--size {text!r} gives {name} twice; give each of {dims} once")
            if not _INT.fullmatch(value):
                raise UsageError(f"size {name}={value!r} is not a whole number; write e.g. {example}")
            sizes[name] = int(value)
    if positional:
        missing = [d.name for d in op.dims if d.name not in sizes]
        if missing:
            raise UsageError(f"--size {text!r} leaves out {', '.join(missing)}: values in dim order must give all of "
                             f"{op.name}'s sizes ({dims}), or name them ({example})")
    return op.problem(sizes, small=small, dtype=dtype, out_dtype=out_dtype, layout=given or layout, **fused)
