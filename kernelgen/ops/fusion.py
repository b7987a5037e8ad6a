"""What a matrix product can fuse into its store, and batched (strided) products: values that sgemm,
gemm and conv2d add to their Problem, because they change the math.

An epilogue is an expression in the elementwise op's language (kernelgen/ops/elementwise.py: the same
parser, functions and CUDA emitter) over three names:

    acc    the product's fp32 accumulator for this element of C (y for conv2d)
    bias   a vector: one value per column of C (per output channel of conv2d)
    res    a residual: a tensor of C's shape (and layout)

Numbers are constants (a scale: `2.0 * acc`), functions are relu, gelu (tanh form), gelu_erf, silu,
sigmoid, exp, tanh, abs, min, max. It is applied once per element of C, in fp32, before C is
rounded to its type.

>>> e = Epilogue.parse("gelu(acc+bias)")
>>> e.expr, e.inputs, e.token
('gelu(acc + bias)', ('bias',), 'ep3ac88ab5')
>>> Epilogue.parse("relu(acc + x)")
Traceback (most recent call last):
...
kernelgen.errors.UsageError: epilogue 'relu(acc + x)': unknown name 'x'; names are acc (the product), bias (a vector per column of C), res (a tensor of C's shape)

A batched product (sgemm and gemm) runs `count` products of the same sizes on blockIdx.z: operand
A of product z starts at z * stride_a elements, B at z * stride_b, C (and res) at z * M * N. A stride of 0
broadcasts that operand to every product; otherwise the stride is the operand's size (packed).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

from ..errors import ScheduleError, UsageError
from . import elementwise as ew

NAMES = {"acc": "the product", "bias": "a vector per column of C", "res": "a tensor of C's shape"}
INPUTS = ("bias", "res")          # the epilogue's inputs, in the kernels' parameter order


def _allowed() -> str:
    return ", ".join(f"{n} ({w})" for n, w in NAMES.items())


@dataclass(frozen=True)
class Epilogue:
    """A parsed epilogue; what follows from its text is computed once (plan() reads `inputs` per call)."""
    expr: str                     # canonical text (ast.unparse), as problems print it

    @staticmethod
    def parse(text) -> "Epilogue":
        """The epilogue `text` names, or a one-line UsageError naming the bad token and what is allowed."""
        if isinstance(text, Epilogue):
            return text
        try:
            tree = ew.parse(text)
            expr = ew.canonical(text)
        except ScheduleError as e:
            why = e.limit + (f"; allowed: {e.allowed}" if e.allowed else "")
            raise UsageError(f"epilogue {text!r}: {why}") from None
        used = ew.names(tree)
        for name in used:
            if name not in NAMES:
                raise UsageError(f"epilogue {text!r}: unknown name {name!r}; names are {_allowed()}")
        if "acc" not in used:
            raise UsageError(f"epilogue {text!r} does not use acc (the product); e.g. 'gelu(acc + bias)'")
        return Epilogue(expr)

    @cached_property
    def tree(self) -> ew.Node:
        return ew.parse(self.expr)

    @cached_property
    def inputs(self) -> tuple[str, ...]:
        used = ew.names(self.tree)
        return tuple(n for n in INPUTS if n in used)

    @cached_property
    def token(self) -> str:
        """Its part of a kernel's name: a hash of the canonical text (names come from parameters)."""
        return "ep" + hashlib.sha1(self.expr.encode()).hexdigest()[:8]

    @cached_property
    def helpers(self) -> list[str]:
        return sorted({o.value for o in ew.ops(self.tree) if o.kind == "call"})

    @cached_property
    def flops(self) -> int:
        return sum(ew.FUNCS[o.value][3] if o.kind == "call" else 1 for o in ew.ops(self.tree))

    def template(self, ctype: str, to_float: str, itemsize: int = 4, out16: bool = False) -> dict:
        """What lib/epilogue.j2's ep_fn and ep_value take: the C body over acc, bias[col], res[at], the
        pointer parameters and the call's arguments, for inputs of C type `ctype` (`itemsize` bytes); the
        input names and type, for a template that loads a run of them at once; `out16`: C is a 16-bit type
        (gelu16: lib/ew_funcs.j2's cheaper gelu where it is the last step)."""
        loads = {"acc": "acc", "bias": to_float % "bias[col]", "res": to_float % "res[at]"}
        body = ew.to_c(self.tree, lambda x: loads[x.value] if x.kind == "in" else None)
        return dict(expr=self.expr, body=body, helpers=self.helpers,
                    params="".join(f", const {ctype}* __restrict__ {b}" for b in self.inputs),
                    args="".join(f", {b}" for b in self.inputs), inputs=self.inputs, ctype=ctype, itemsize=itemsize,
                    gelu16=out16 and ew.gelu_last(self.tree))

    def apply(self, acc, env: dict):
        """float64 numpy evaluation: `acc` the product, env the decoded bias (broadcastable) and res."""
        return ew.evaluate(self.tree, dict(env, acc=acc))


@dataclass(frozen=True)
class Batch:
    """`count` products; A and B strides in elements (0: broadcast, else the operand's size)."""
    count: int
    stride_a: int
    stride_b: int

    def counts(self) -> tuple[int, int]:
        """How many A and B matrices the caller's arrays hold."""
        return (1 if self.stride_a == 0 else self.count), (1 if self.stride_b == 0 else self.count)


def make_batch(op: str, count, stride_a, stride_b, sizes: dict, stored: dict) -> Batch:
    """A Batch from the caller's values (strides None: packed), checked: a stride is 0 or the size of
    the operand as stored (`stored`: A's and B's shapes)."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 65535:
        raise UsageError(f"{op}: batch={count!r} is illegal (an integer 1..65535: gridDim.z)")
    out = []
    for b, given in (("A", stride_a), ("B", stride_b)):
        size = stored[b][0] * stored[b][1]
        value = size if given is None else given
        if value not in (0, size):
            raise UsageError(f"{op}: stride_{b.lower()}={value!r} is illegal; {b} is {stored[b][0]}x{stored[b][1]}: "
                             f"its batch stride is 0 (broadcast) or {size} (packed)")
        out.append(value)
    return Batch(count, *out)


# -- the op side ---------------------------------------------------------------------------------
BATCH_SCALARS = ("batch", "stride_a", "stride_b")


class Fusing:
    """Base (before Op) of the ops whose problems may carry an epilogue or a batch. The registered op
    computes plain products; `with_fusion` gives the instance (a `Fused` subclass, cached) whose
    inputs, shapes, reference and kernels carry them. The op's own plan, recipe and template take the
    pieces below: `fusion_args` (the kernel arguments after the op's own), `fusion_params` (the
    template's `ep` and `batched`)."""

    epilogue: Epilogue | None = None
    batched: bool = False
    bias_dim = "N"                 # the size the bias vector runs along (conv2d: K, the channels)
    exact_check = True             # the plain op checks exactly (sgemm, gemm): a relative measure with an epilogue

    def bias_shape(self, ndim: int) -> tuple:
        """How the bias broadcasts against the output: along its last axis (C's columns)."""
        return (-1,)

    def with_fusion(self, epilogue=None, batched: bool = False, residual=None):
        ep = None if epilogue is None else Epilogue.parse(epilogue)
        if ep == self.epilogue and bool(batched) == self.batched:
            return self
        from . import get_op
        return _fused(get_op(self.name), ep, bool(batched))

    def for_problem(self, problem):
        return self.with_fusion(problem.epilogue, problem.batch is not None)

    def for_kernel(self, kernel):
        return self.for_schedule(kernel.schedule).with_fusion(kernel.epilogue, kernel.batched)

    def name_tokens(self) -> list[str]:
        return (["batched"] if self.batched else []) + ([self.epilogue.token] if self.epilogue else [])

    def kernel_fields(self) -> dict:
        return dict(epilogue=self.epilogue.expr if self.epilogue else None, batched=self.batched)

    def same_fusion(self, kernel, problem) -> None:
        """A plan runs a kernel only on problems of its epilogue and batching."""
        if kernel.epilogue != problem.epilogue or kernel.batched != (problem.batch is not None):
            raise UsageError(f"{kernel.name} is built for epilogue {kernel.epilogue!r}{' batched' if kernel.batched else ''}"
                             f", the problem {problem} has epilogue {problem.epilogue!r}"
                             f"{' batched' if problem.batch is not None else ''}: build the kernel with "
                             f"op.for_problem(problem).kernel(...)")

    def fusion_args(self) -> tuple[str, ...]:
        return (BATCH_SCALARS if self.batched else ()) + (self.epilogue.inputs if self.epilogue else ())

    def fusion_scalars(self, problem) -> tuple:
        from .base import Scalar
        b = problem.batch
        if b is None:
            return ()
        return (Scalar("batch", "int", b.count), Scalar("stride_a", "long long", b.stride_a),
                Scalar("stride_b", "long long", b.stride_b))

    def fusion_params(self, types) -> dict:
        """The template's `ep` (None, or Epilogue.template for the epilogue inputs' type) and `batched`."""
        ep = None
        if self.epilogue:
            d = types[self.epilogue.inputs[0]] if self.epilogue.inputs else types.input
            ep = self.epilogue.template(d.ctype, d.to_float, d.itemsize, out16=types.output.itemsize == 2)
        return dict(ep=ep, batched=self.batched)

    def fusion_recipe(self, recipe):
        """The recipe with the batch's sizes (runtime ints: the count and A's and B's strides, 0 allowed)."""
        import dataclasses
        if not self.batched:
            return recipe
        return dataclasses.replace(recipe, sizes=recipe.sizes + BATCH_SCALARS)

    def recipe(self, kernel):
        """Op.recipe, with the batch's limits (a stride may be 0; at most 65535 products: gridDim.z)."""
        import dataclasses
        r = super().recipe(kernel)
        if not self.batched:
            return r
        return dataclasses.replace(r, minimum=r.minimum + (("stride_a", 0), ("stride_b", 0)),
                                   maximum=r.maximum + (("batch", 65535),))


class Fused:
    """The numbers of a fused instance (mixed in before the op's class): extra inputs, batch dims,
    the reference with the epilogue applied, and a relative error measure where the epilogue makes
    the plain product's exact check inexact."""

    def input_shapes(self, problem):
        shapes = dict(super().input_shapes(problem))
        if problem.batch is not None:
            ca, cb = problem.batch.counts()
            shapes["A"], shapes["B"] = (ca, *shapes["A"]), (cb, *shapes["B"])
        out = self.output_shapes(problem)[self.outputs[0]]
        for b in self.epilogue.inputs if self.epilogue else ():
            shapes[b] = (problem[self.bias_dim],) if b == "bias" else out
        return shapes

    def output_shapes(self, problem):
        shapes = super().output_shapes(problem)
        if problem.batch is None:
            return shapes
        return {k: (problem.batch.count, *v) for k, v in shapes.items()}

    def make_inputs(self, problem, rng):
        import numpy as np
        inputs = super().make_inputs(problem, rng)
        shapes = self.input_shapes(problem)
        for b in self.epilogue.inputs if self.epilogue else ():
            inputs[b] = problem.dtype(b).encode(rng.standard_normal(shapes[b], dtype=np.float32))
        return inputs

    def reference(self, inputs, problem, xp=None):
        import numpy as np
        xp = xp or np
        plain = get_base(self)
        kw = {} if xp is np else {"xp": xp}
        name = self.outputs[0]
        if problem.batch is None:
            acc = plain.reference({k: inputs[k] for k in plain.inputs}, problem, **kw)[name]
        else:
            b = problem.batch
            one = _unbatched(problem)
            acc = xp.stack([plain.reference({"A": inputs["A"][z if b.stride_a else 0],
                                             "B": inputs["B"][z if b.stride_b else 0]}, one, **kw)[name]
                            for z in range(b.count)])
        if not self.epilogue:
            return {name: acc}
        env = {}
        for k in self.epilogue.inputs:
            v = problem.dtype(k).decode(inputs[k], xp)
            env[k] = v.reshape(self.bias_shape(acc.ndim)) if k == "bias" else v
        return {name: self.epilogue.apply(acc, env)}


    def measure(self, problem):
        return "max |C - ref| / (1 + |ref|)" if self.epilogue and self.exact_check else super().measure(problem)

    def error(self, name, out, ref, inputs, problem):
        from .base import pointwise_error
        if not (self.epilogue and self.exact_check):    # the op's own measure holds for any number of products
            return super().error(name, out, ref, inputs, problem)
        return pointwise_error(out, ref)

    def tolerance(self, problem):
        if not (self.epilogue and self.exact_check):
            return super().tolerance(problem)
        d = problem.dtype(self.outputs[0])
        K = problem["K"]
        slack = 0.0 if 9 * K < 2 ** 24 else 9.0 * K * K * 2.0 ** -24
        return (2 * d.unit_roundoff if d.itemsize == 2 else 1e-5) + slack

    def flops(self, problem):
        count = problem.batch.count if problem.batch is not None else 1
        out = 1
        for s in super().output_shapes(problem).values():
            for v in s:
                out *= v
        return count * (super().flops(problem) + (self.epilogue.flops * out if self.epilogue else 0))

    def bytes_moved(self, problem):
        total = 0
        for b, shape in list(self.input_shapes(problem).items()) + list(self.output_shapes(problem).items()):
            n = 1
            for v in shape:
                n *= v
            total += n * problem.dtype(b).itemsize
        return total

    def vendor(self, dev_inputs, problem):
        return None                             # no fused vendor call to compare with


def get_base(op):
    from . import get_op
    return get_op(op.name)


def _unbatched(problem):
    import dataclasses
    return dataclasses.replace(problem, batch=None, epilogue=None)


_CLASSES: dict = {}
_INSTANCES: dict = {}


def _fused(base, ep: Epilogue | None, batched: bool):
    """The fused instance of registered op `base`, one per (epilogue, batched)."""
    if ep is None and not batched:
        return base
    key = (base.name, ep, batched)
    if key not in _INSTANCES:
        cls = type(base)
        sub = _CLASSES.setdefault(cls, type(f"Fused{cls.__name__}", (Fused, cls), {}))
        inst = object.__new__(sub)
        inst.__dict__.update(base.__dict__)
        inst.epilogue, inst.batched = ep, batched
        inst.inputs = cls.inputs + (ep.inputs if ep else ())
        _INSTANCES[key] = inst
    return _INSTANCES[key]
