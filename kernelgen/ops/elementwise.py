"""Fused elementwise chains: out[M, N] = expr(inputs), e.g. "relu(a * b + c)" or "gelu(x + bias) * 2.0".

>>> from kernelgen.ops import get_op
>>> op = get_op("elementwise").with_expr("gelu(x + bias) * 2.0")
>>> op.inputs
('x', 'bias')
>>> len(op.plan(op.kernel(op.schedule(fusion="none")), op.problem(small=True)).launches)
3

The expression is the knob `expr` (`annotate("expr", ...)`): a tiny language parsed with Python's
`ast` and a whitelist. Names are the inputs, in order of first appearance; a name starting with
`bias` is a per-column vector of N floats, every other name an M x N matrix. Numbers are float
constants; operators + - * / and unary -; functions in FUNCS. Anything else (an unknown function,
`**`, a keyword argument, a string) is a ScheduleError naming it, raised before any compile.
Because the inputs follow the expression, an op instance computes one expression:
`op.with_expr(e)` (or `op.for_schedule(s)`) gives the instance whose inputs and float64 reference
match a schedule's `expr`; `plan` refuses a kernel whose expression differs from its instance's.

Loop `i` runs over the M*N elements as one flat loop: `split("i", items*threads*vec, threads*vec,
vec)` gives i.0 (chunks, blockIdx.x), i.1 (items per thread, unrolled: loads in flight), i.2
(threadIdx.x) and i.3 (vectorize: float4 loads/stores; the n % vec tail is done by scalar code).
`annotate("fusion", "none")` is the unfused baseline: one kernel per operator, intermediates in
workspaces, as a framework runs it; the default fuses the chain so it costs one pass.
`annotate("grid_stride", k)` launches k blocks per SM that stride over the chunks (1: one block per
SM). `prefetch(b, D, scope, mode)` on every matrix input b alike (and `storage_align(b, pad)` for
shared slots) loads D grid-stride iterations ahead: see kernelgen/ops/prefetch.py.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import math
import operator
import re

import numpy as np

from ..errors import ScheduleError, UsageError, check
from ..schedule import Schedule, ScheduleReader, schedule
from .base import (INT_MAX, Dim, Kernel, Knob, LadderStep, Launch, Op, Plan, Problem, Scalar, Workspace, cdiv,
                   pointwise_error)
from ..dtypes import FLOAT32, Types
from . import prefetch
from .knobs import Prim, Range
from .io import element_io, torch_tensor, vector_widths, zero_vector
from ..target import Target, default_target

DEFAULT_EXPR = "relu(a * b + c)"
FUSIONS = ("full", "none")
_GELU_C = math.sqrt(2.0 / math.pi)
# name: (arity, CUDA helper in the template, float64 numpy, flops per element)
FUNCS = {
    "relu": (1, "kg_ew_relu", lambda x: np.maximum(x, 0.0), 1),
    "gelu": (1, "kg_ew_gelu", lambda x: 0.5 * x * (1 + np.tanh(_GELU_C * (x + 0.044715 * x ** 3))), 9),
    "gelu_erf": (1, "kg_ew_gelu_erf", lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2.0))), 6),
    "sigmoid": (1, "kg_ew_sigmoid", lambda x: 1 / (1 + np.exp(-x)), 4),
    "silu": (1, "kg_ew_silu", lambda x: x / (1 + np.exp(-x)), 5),
    "exp": (1, "expf", np.exp, 1),
    "tanh": (1, "tanhf", np.tanh, 1),
    "abs": (1, "fabsf", np.abs, 1),
    "min": (2, "fminf", np.minimum, 1),
    "max": (2, "fmaxf", np.maximum, 1),
}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_BINOP_FNS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
_RESERVED = ("out", "n", "cols")
SPLIT = Prim("split", "i", args="items*threads*vec, threads*vec, vec")


def _erf(x):
    """erf of a numpy or, for references computed on the GPU (xp=cupy), a CuPy array; numpy has no erf
    ufunc, and np.vectorize would copy a device array to the host element by element."""
    if type(x).__module__.startswith("cupy"):
        from cupyx.scipy.special import erf
        return erf(x)
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# -- the expression language -------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Node:
    kind: str              # "in" (an input name), "const", "op" (a binary operator), "neg", "call"
    value: object          # the name, the float, the operator symbol or the function name
    args: tuple = ()


def _fail(expr, why: str, allowed: str = ""):
    raise ScheduleError("annotate", "expr", expr, limit=why, allowed=allowed)


def gelu_last(root: Node) -> bool:
    """Whether the expression's one gelu is its last step, its result the value rounded into the output: a
    16-bit output may then take lib/ew_funcs.j2's cheaper gelu (whose error, in a value that later steps
    combined, could cancel into a large one)."""
    return root.kind == "call" and root.value == "gelu" and sum(o.kind == "call" and o.value == "gelu"
                                                                for o in ops(root)) == 1


def parse(expr) -> Node:
    """Parse `expr` into Nodes, or raise a ScheduleError that names what is not allowed."""
    if not isinstance(expr, str) or not expr.strip():
        _fail(expr, "a non-empty string such as " + repr(DEFAULT_EXPR))
    bad = "".join(sorted(set(re.sub(r"[A-Za-z0-9_.+\-*/(), ]", "", expr))))
    if bad or len(expr) > 400:
        _fail(expr, f"character(s) {bad!r} not allowed" if bad else f"{len(expr)} characters > 400",
              "names, numbers, + - * / ( ) , and spaces")
    try:
        tree = ast.parse(expr, mode="eval").body
    except SyntaxError as e:
        _fail(expr, f"not an expression ({e.msg})")

    def walk(t) -> Node:
        if isinstance(t, ast.BinOp) and type(t.op) in _BINOPS:
            return Node("op", _BINOPS[type(t.op)], (walk(t.left), walk(t.right)))
        if isinstance(t, ast.UnaryOp) and isinstance(t.op, (ast.USub, ast.UAdd)):
            inner = walk(t.operand)
            return Node("neg", "-", (inner,)) if isinstance(t.op, ast.USub) else inner
        if isinstance(t, ast.Call):
            fname = t.func.id if isinstance(t.func, ast.Name) else ast.unparse(t.func)
            if fname not in FUNCS:
                _fail(expr, f"unknown function {fname!r}", ", ".join(FUNCS))
            if t.keywords or len(t.args) != FUNCS[fname][0]:
                _fail(expr, f"{fname} takes {FUNCS[fname][0]} positional argument(s)")
            return Node("call", fname, tuple(walk(a) for a in t.args))
        if isinstance(t, ast.Name):
            if t.id in FUNCS:
                _fail(expr, f"{t.id} is a function; call it as {t.id}(...)")
            if not re.fullmatch(r"[a-z][a-z0-9_]{0,15}", t.id) or t.id in _RESERVED or re.fullmatch(r"tmp\d+", t.id):
                _fail(expr, f"input name {t.id!r}: lower case, <= 16 characters, not out, n, cols or tmpK")
            return Node("in", t.id)
        if isinstance(t, ast.Constant) and type(t.value) in (int, float) and math.isfinite(t.value):
            return Node("const", float(t.value))
        what = type(t.op).__name__ if isinstance(t, (ast.BinOp, ast.UnaryOp)) else type(t).__name__
        _fail(expr, f"{what} is not allowed", "names, numbers, + - * /, unary -, " + ", ".join(FUNCS))

    root = walk(tree)
    if not names(root):
        _fail(expr, "the expression uses no input")
    if len(ops(root)) > 64:
        _fail(expr, f"{len(ops(root))} operators > 64")
    return root


def canonical(expr: str) -> str:
    """The form kept in knobs: spacing and redundant parentheses normalised (`ast.unparse`)."""
    parse(expr)
    return ast.unparse(ast.parse(expr, mode="eval"))


def names(node: Node) -> tuple[str, ...]:
    """Input names in order of first appearance."""
    if node.kind == "in":
        return (node.value,)
    out = []
    for a in node.args:
        out += [n for n in names(a) if n not in out]
    return tuple(dict.fromkeys(out))


def ops(node: Node) -> list[Node]:
    """Operator nodes in evaluation order (children first): the kernels of the unfused plan."""
    if node.kind in ("in", "const"):
        return []
    return [o for a in node.args for o in ops(a)] + [node]


def is_bias(name: str) -> bool:
    return name.startswith("bias")


def to_c(node: Node, var) -> str:
    """CUDA text of `node`; `var(node)` names the float holding an input or an intermediate (or None)."""
    v = var(node)
    if v is not None:
        return v
    if node.kind == "const":
        return f"{node.value!r}f"
    a = [to_c(x, var) for x in node.args]
    if node.kind == "op":
        return f"({a[0]} {node.value} {a[1]})"
    if node.kind == "neg":
        return f"(-{a[0]})"
    return f"{FUNCS[node.value][1]}({', '.join(a)})"


def evaluate(node: Node, env: dict, lib="numpy"):
    """float64 numpy (or torch / cupy, for vendor()) evaluation of `node` over the arrays in `env`."""
    if node.kind == "in":
        return env[node.value]
    if node.kind == "const":
        return node.value
    a = [evaluate(x, env, lib) for x in node.args]
    if node.kind == "op":
        return _BINOP_FNS[node.value](*a)
    if node.kind == "neg":
        return -a[0]
    if lib == "numpy":
        return FUNCS[node.value][2](*a)
    return _vendor_fn(lib, node.value)(*a)


def _vendor_fn(lib: str, fname: str):
    if lib == "torch":
        import torch
        import torch.nn.functional as F
        return {"relu": torch.relu, "gelu": lambda x: F.gelu(x, approximate="tanh"), "gelu_erf": F.gelu,
                "sigmoid": torch.sigmoid, "silu": F.silu, "exp": torch.exp, "tanh": torch.tanh, "abs": torch.abs,
                "min": torch.minimum, "max": torch.maximum}[fname]
    import cupy as cp
    import cupyx.scipy.special as sp
    return {"relu": lambda x: cp.maximum(x, 0), "gelu": lambda x: 0.5 * x * (1 + cp.tanh(_GELU_C * (x + 0.044715 * x * x * x))),
            "gelu_erf": lambda x: 0.5 * x * (1 + sp.erf(x * (1 / math.sqrt(2)))), "sigmoid": lambda x: 1 / (1 + cp.exp(-x)),
            "silu": lambda x: x / (1 + cp.exp(-x)), "exp": cp.exp, "tanh": cp.tanh, "abs": cp.abs,
            "min": cp.minimum, "max": cp.maximum}[fname]


class ExprKnob(Knob):
    """The expression knob: its part of the kernel name is a hash, so "a*b+c" and "a+b*c" differ."""

    def encode(self, value) -> str:
        return "e" + hashlib.sha1(str(value).encode()).hexdigest()[:8]

    def allows(self, value) -> bool:
        return isinstance(value, str)

    def checked(self, value, op: str, step=None):
        """The canonical form of any expression (its parse checks it, naming what is not allowed)."""
        return canonical(value)

    def check(self, value, op: str = ""):
        """Any expression (its parse checks it), not only the current one."""
        if not isinstance(value, str):
            raise UsageError(f"{op + ': ' if op else ''}knob expr={value!r} is a {type(value).__name__}; "
                             "it must be an expression such as 'relu(a * b + c)'")
        return value


class Elementwise(Op):
    name = "elementwise"
    summary = ("out[M, N] = expr(inputs), one fused pass (bias* names are per-column vectors); float32, float16 "
               "or bfloat16 in and out, fp32 math")
    dtypes = ("float32", "float16", "bfloat16")
    dims = (Dim("M", 1 << 14, 37), Dim("N", 1 << 12, 1001, maximum=INT_MAX - 8,
                                       why="a vector's int bias column runs up to 8 past N"))
    loops = ("i",)
    outputs = ("out",)
    structure_help = "expressions use the functions " + ", ".join(FUNCS)

    def __init__(self, expr: str = DEFAULT_EXPR):
        self.expr = canonical(expr)
        self.tree = parse(self.expr)
        self.inputs = names(self.tree)
        self.matrices = tuple(b for b in self.inputs if not is_bias(b))   # what prefetch() names
        self.knobs = (
            ExprKnob("expr", self.expr, (self.expr,), "the expression: names are inputs", "e",
                     Prim("annotate", "expr", always=True, args="EXPRESSION")),
            Knob("fusion", "full", FUSIONS, "full: one kernel; none: one kernel per operator", "f",
                 Prim("annotate", "fusion", absent="full"), tune=("full",)),
            Knob("threads", 256, (32, 64, 128, 256, 512, 1024), "threads per block (i.2)", "t", SPLIT,
                 tune=(128, 256, 512)),
            Knob("items", 1, Range(1, 8), "vectors per thread per chunk, loaded before any is used (i.1)", "i", SPLIT,
                 tune=(1, 2, 4)),
            Knob("vec", 4, (1, 2, 4, 8), "elements per access (i.3): float32 1|2|4, 16-bit types 1|2|4|8 (16 bytes)",
                 "v", Prim("vectorize", "i.3", always=True)),
            Knob("grid_stride", 0, (0, 1, 2, 4, 8, 16, 32), "blocks per SM striding over chunks; 0 = one block per "
                 "chunk", "g", Prim("annotate", "grid_stride", absent=0), tune=(0, 4, 8, 16)),
        ) + prefetch.knobs(self.matrices)

    def with_expr(self, expr: str) -> "Elementwise":
        """The op instance computing `expr` (its inputs, reference and vendor follow the expression)."""
        return Elementwise(expr)

    def for_schedule(self, sched: Schedule) -> "Elementwise":
        """The op instance that computes the expression `sched` names (itself when they agree)."""
        # read from the annotate step alone: the rest of the schedule names this expression's inputs
        given = [s.value for s in sched.steps if s.prim == "annotate" and s.key == "expr"] if sched.op == self.name else []
        expr = canonical(given[0]) if given else self.expr
        return self if expr == self.expr else Elementwise(expr)

    error_measure = "max |out - ref| / (1 + |ref|)"

    def tolerance(self, problem: Problem) -> float:
        """float32: 1e-5. 16-bit out: twice its unit roundoff (the rounding of out, <= u |ref|, is one;
        the fp32 math on exact 16-bit inputs adds ~1e-6)."""
        d = problem.dtype("out")
        return 2 * d.unit_roundoff if d.itemsize == 2 else self.rel_tolerance

    def error(self, name, out, ref, inputs, problem) -> float:
        return pointwise_error(out, ref)

    # -- schedule <-> knobs ------------------------------------------------------------------------
    def build(self, k: dict) -> Schedule:
        s = (schedule(self.name).annotate("expr", k["expr"])
             .split("i", k["items"] * k["threads"] * k["vec"], k["threads"] * k["vec"], k["vec"])
             .bind("i.0", "blockIdx.x").bind("i.2", "threadIdx.x").unroll("i.1"))
        s = self.put(s, k, "vec", "fusion", "grid_stride")
        return self.put(prefetch.build(s, k, self.matrices), k, "prefetch_pad", "prefetch_slots")

    def read_knobs(self, r: ScheduleReader) -> dict:
        expr = canonical(r.read("annotate", "expr", self.expr))
        items, threads, vec = r.vector_split("i", (256, 256, 1))
        r.expect("bind", "i.0", "blockIdx.x")
        r.expect("bind", "i.2", "threadIdx.x")
        r.expect("unroll", "i.1", 0)
        matrices = tuple(b for b in names(parse(expr)) if not is_bias(b))
        return {"expr": expr, "threads": threads, "items": items, "vec": vec, **prefetch.read(r, matrices)}

    def name_knobs(self, k: dict) -> dict:
        return prefetch.name_knobs(self, k)

    def check_knobs(self, k: dict, target: Target) -> None:
        check(k["threads"] <= target.max_threads, "split", "i.2", k["threads"],
              limit=f"{target.max_threads} threads per block on {target.arch}")
        n_in = len(names(parse(k["expr"])))
        check(n_in <= 16, "annotate", "expr", k["expr"], limit=f"{n_in} inputs > 16")

    # -- lowering ----------------------------------------------------------------------------------
    @staticmethod
    def _stages(k: dict, root: Node) -> list[tuple[Node, tuple[str, ...]]]:
        """(node, operand buffers) per kernel: the whole tree, or one operator per kernel."""
        def params(bufs):  # the kernel's parameter order: matrices first, then bias vectors
            return tuple(sorted(dict.fromkeys(bufs), key=is_bias))
        if k["fusion"] == "full" or not ops(root):
            return [(root, params(names(root)))]
        order = ops(root)
        temp = {id(o): f"tmp{j}" for j, o in enumerate(order)}
        out = []
        for o in order:
            bufs = [a.value if a.kind == "in" else temp[id(a)] for a in o.args if a.kind != "const"]
            out.append((o, params(bufs)))
        return out

    def template_params(self, k: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        d = types.input
        check(types.output == d, "cache_write", "out", types.output.name, limit="out is written in the inputs' type",
              allowed=d.name)
        widths = vector_widths(d, (1, 2, 4))
        check(k["vec"] in widths, "vectorize", "i.3", k["vec"], limit=f"16 bytes per access of {d.name}",
              allowed=", ".join(map(str, widths)))
        check(k["fusion"] == "full" or k["vec"] <= 4, "annotate", "fusion", k["fusion"],
              limit=f"the unfused chain keeps float32 intermediates, at most float4 (4 per access), not vec={k['vec']}",
              allowed="full")
        root = parse(k["expr"])
        order = ops(root)
        temp = {id(o): f"tmp{j}" for j, o in enumerate(order)}
        kernels = []
        fused = k["fusion"] == "full"
        stages = self._stages(k, root)
        for j, (node, bufs) in enumerate(stages):
            def var(x, node=node):
                if x.kind == "in":
                    return "v_" + x.value
                if x.kind == "const" or x is node or fused:
                    return None
                return "v_" + temp[id(x)]
            # Inputs in their type; the unfused chain's intermediates (tmpK) in float32, as the fused
            # kernel keeps them in registers, so both round once, at out.
            io = {b: element_io(FLOAT32 if b.startswith("tmp") else d, k["vec"]) for b in bufs}
            out_io = element_io(d if j == len(stages) - 1 else FLOAT32, k["vec"])
            full = [b for b in bufs if not is_bias(b)]
            pf = prefetch.params(k, target, [dict(name=b, vtype=io[b]["vtype"], src=f"reinterpret_cast<const {io[b]['vtype']}*>(p_{b})",
                                                  zero=zero_vector(io[b], k["vec"]), vbytes=self._vbytes(b, d, k)) for b in full])
            kernels.append(dict(suffix="" if k["fusion"] == "full" else f"_k{j}", body=to_c(node, var),
                                io=io, out=out_io, full=full, bias=[b for b in bufs if is_bias(b)],
                                what=k["expr"] if k["fusion"] == "full" else _show(node, temp),
                                pf_bufs=pf.get("prefetch_bufs", ()), pf_async=pf.get("prefetch_async", False)))
        # the kernel of the chain with the most slot bytes sets the limit
        widest = max(([self._vbytes(b, d, k) for b in full] for _, full in self._full_operands(k)),
                     key=lambda v: prefetch.shared_bytes(k, k["threads"], v))
        matrices = [b for b in names(root) if not is_bias(b)]
        prefetch.check_legal(k, target, matrices[0], k["threads"], widest, 0)
        smem = prefetch.shared_bytes(k, k["threads"], widest)
        params = dict(k, kernels=kernels, chunk=k["items"] * k["threads"], helpers=sorted({o.value for o in order if o.kind == "call"}),
                      gelu16=d.itemsize == 2 and k["fusion"] == "full" and gelu_last(root),
                      io=element_io(d, k["vec"]), prefetch_slot=pf.get("prefetch_slot", 0),
                      min_blocks=pf["min_blocks"])      # alike for every kernel of the chain
        widest = max(len(kk["full"]) for kk in kernels)
        regs = 24 + k["items"] * k["vec"] * widest + prefetch.registers(k, widest * max(1, d.itemsize * k["vec"] // 4))
        return params, smem, regs

    def _full_operands(self, k: dict) -> list[tuple[int, list[str]]]:
        """(stage, its matrix operands) per kernel of the chain."""
        return [(j, [b for b in bufs if not is_bias(b)]) for j, (_, bufs) in enumerate(self._stages(k, parse(k["expr"])))]

    @staticmethod
    def _vbytes(b: str, d, k: dict) -> int:
        """Bytes of one vector of operand `b`: the unfused chain's intermediates are float32."""
        return (4 if b.startswith("tmp") else d.itemsize) * k["vec"]

    def prefetch_bytes(self, k: dict, d, full: list[str]) -> int:
        """Dynamic shared memory of one kernel: the prefetch slots of its matrix operands."""
        return prefetch.shared_bytes(k, k["threads"], [self._vbytes(b, d, k) for b in full])

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        target = target or default_target()
        k = dict(kernel.knobs)
        if k["expr"] != self.expr:
            raise UsageError(f"{self.name}: the kernel computes {k['expr']!r} but this op instance computes "
                             f"{self.expr!r}; use get_op('elementwise').with_expr({k['expr']!r})")
        n = problem["M"] * problem["N"]
        chunks = max(1, cdiv(n // k["vec"], k["items"] * k["threads"]))
        blocks = min(chunks, target.sms * k["grid_stride"]) if k["grid_stride"] else chunks
        check(blocks < 2 ** 31, "split", "i", k["threads"], limit=f"{blocks} blocks exceed gridDim.x")
        stages = self._stages(k, parse(k["expr"]))
        launches = []
        for j, (node, bufs) in enumerate(stages):
            dst = "out" if j == len(stages) - 1 else f"tmp{j}"
            args = bufs + (dst, "n") + (("cols",) if any(is_bias(b) for b in bufs) else ())
            sym = kernel.name if k["fusion"] == "full" else f"{kernel.name}_k{j}"
            smem = self.prefetch_bytes(k, problem.dtype("out"), [b for b in bufs if not is_bias(b)])
            launches.append(Launch(sym, (blocks, 1, 1), (k["threads"], 1, 1), args, smem))
        workspaces = tuple(Workspace(f"tmp{j}", "float32", n) for j in range(len(stages) - 1))
        size = problem.dtype("out").itemsize
        align = tuple((b, size * k["vec"]) for b in self.inputs + ("out",) if not is_bias(b))
        return Plan(kernel, problem, tuple(launches), workspaces,
                    (Scalar("n", "long long", n), Scalar("cols", "int", problem["N"])), align)

    def launch_recipe(self, kernel: Kernel):
        from ..recipe import Recipe, Step
        k = dict(kernel.knobs)
        types = kernel.types or self.types()
        blocks = f"kg_min(chunks, sms * {k['grid_stride']})" if k["grid_stride"] else "chunks"
        lets = (("n", "long long", "kg_ll(M) * N"),
                ("chunks", "long long", f"kg_max(1, kg_cdiv(kg_div(n, {k['vec']}), {k['items'] * k['threads']}))"),
                ("blocks", "long long", blocks), ("cols", "int", "N"))
        stages = self._stages(k, parse(k["expr"]))
        steps = []
        for j, (node, bufs) in enumerate(stages):
            dst = "out" if j == len(stages) - 1 else f"tmp{j}"
            args = bufs + (dst, "n") + (("cols",) if any(is_bias(b) for b in bufs) else ())
            sym = kernel.name if k["fusion"] == "full" else f"{kernel.name}_k{j}"
            smem = self.prefetch_bytes(k, types["out"], [b for b in bufs if not is_bias(b)])
            steps.append(Step(sym, ("blocks", "1", "1"), (k["threads"], 1, 1), args, smem))
        workspaces = tuple((f"tmp{j}", types["out"].ctype, "n", None) for j in range(len(stages) - 1))
        size = types["out"].itemsize
        align = tuple((b, size * k["vec"], "") for b in self.inputs + ("out",) if not is_bias(b))
        return Recipe(kernel.arch, ("M", "N"), self.recipe_buffers(kernel), tuple(steps), lets, workspaces, align,
                      requires=((f"blocks < {2 ** 31}", "gridDim.x holds 2^31 - 1 blocks"),))

    # -- numbers -----------------------------------------------------------------------------------
    def test_problems(self) -> tuple[dict, ...]:
        # odd n (a scalar tail); one element; fewer columns than a float4 (bias wraps); whole chunks; a column
        # of one (a vector's bias wraps more than once) of 1023 elements: one float4 short of a whole chunk of
        # the default 256 threads, and a tail of 3. 401x1013: past 3 grid strides of 132 blocks x 256 threads
        # x float4, so a thread of the first block takes a 4th iteration (a prefetch batch's 4th slot, a
        # ring refilled) at the default threads
        return ({"M": 37, "N": 1001}, {"M": 1, "N": 1}, {"M": 9, "N": 2}, {"M": 64, "N": 64}, {"M": 1023, "N": 1},
                {"M": 401, "N": 1013})

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        m, n = problem["M"], problem["N"]
        return {b: (n,) if is_bias(b) else (m, n) for b in self.inputs}

    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {b: problem.dtype(b).encode(rng.standard_normal(s, dtype=np.float32))
                for b, s in self.input_shapes(problem).items()}

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        return {"out": (problem["M"], problem["N"])}

    def reference(self, inputs, problem):
        env = {b: problem.dtype(b).decode(v) for b, v in inputs.items()}
        res = evaluate(self.tree, env)
        return {"out": np.ascontiguousarray(np.broadcast_to(res, (problem["M"], problem["N"])))}

    def bytes_moved(self, problem: Problem) -> int:
        m, n = problem["M"], problem["N"]
        size = problem.dtype("out").itemsize
        return size * (sum(n if is_bias(b) else m * n for b in self.inputs) + m * n)

    def flops(self, problem: Problem) -> int:
        per = sum(FUNCS[o.value][3] if o.kind == "call" else 1 for o in ops(self.tree))
        return per * problem["M"] * problem["N"]

    def vendor(self, dev_inputs, problem):
        shapes = self.input_shapes(problem)
        try:
            import torch
            env = {b: torch_tensor(v, problem.dtype(b)).reshape(shapes[b]) for b, v in dev_inputs.items()}
            return f"torch, unfused: {self.expr}", lambda: evaluate(self.tree, env, "torch")
        except ImportError:
            if problem.dtype("out").name == "bfloat16":
                return None           # cupy has no bfloat16
            env = {b: v.reshape(shapes[b]) for b, v in dev_inputs.items()}
            return f"cupy, unfused: {self.expr}", lambda: evaluate(self.tree, env, "cupy")

    def ladder(self) -> tuple[LadderStep, ...]:
        base = dict(expr=self.expr, threads=256, items=1, vec=1, grid_stride=0)
        steps = [
            ("unfused: one kernel per operator, scalar", dict(base, fusion="none"),
             "intermediates round-trip through memory, as a framework runs the chain"),
            ("unfused, float4", dict(base, fusion="none", vec=4), "each kernel vectorised; still one pass per op"),
            ("fused: one kernel, scalar (loop fusion)", dict(base, fusion="full"), "one pass over the data"),
            ("fused, float4 + scalar tail", dict(base, fusion="full", vec=4), "LDG.E.128 / STG.E.128"),
            ("fused, float4, 2 items per thread, grid-stride", dict(base, fusion="full", vec=4, items=2, grid_stride=8),
             "8 blocks per SM stride over the data"),
        ]
        return tuple(LadderStep(t, self.schedule_from_knobs(**kn), n) for t, kn, n in steps)

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """The default layout, whose accesses are 16 bytes: float4, or 8 elements of a 16-bit type."""
        vec = 16 // problem.dtype("out").itemsize
        return self.default_schedule() if vec == 4 else self.schedule(vec=vec)

    def space(self, problem: Problem, target: Target):
        """The knobs' product, prefetching only where it is legal (items 1, a grid-stride loop)."""
        return prefetch.space(self, super().space(problem, target))

    def space_pins(self, problem: Problem) -> dict[str, tuple]:
        """This instance's expression; 16-byte accesses."""
        return {"expr": (self.expr,), "vec": (16 // problem.dtype("out").itemsize,)}


def _show(node: Node, temp: dict) -> str:
    """The text of one unfused kernel's work, intermediates named tmpK (for the template's comments)."""
    def txt(x, top):
        if x.kind == "in":
            return x.value
        if x.kind == "const":
            return repr(x.value)
        if not top:
            return temp[id(x)]
        a = [txt(y, False) for y in x.args]
        return f"({a[0]} {x.value} {a[1]})" if x.kind == "op" else f"(-{a[0]})" if x.kind == "neg" \
            else f"{x.value}({', '.join(a)})"
    return txt(node, True)
