"""What an operator declares, and the plain values that flow out of it.

An Op says what it computes (dims, loops, buffers, a float64 numpy reference, bytes and flops),
which schedules it accepts (its knobs, read from a Schedule's primitives), and how one schedule
lowers to a template and a list of launches. Everything it returns is a frozen value:

>>> from kernelgen.ops import get_op
>>> op = get_op("reduce_sum")
>>> p = op.problem({"n": 1000003})
>>> kern = op.kernel(op.default_schedule())
>>> kern.name.startswith("reduce_sum_")
True
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from ..dtypes import FLOAT32, Types, dtype
from ..errors import KnobError, ScheduleError, UsageError, check
from ..frozen import hash_once
from ..schedule import Schedule, ScheduleReader
from .knobs import Knob, Prim, Range
from ..target import DEFAULT_ARCH, Target, default_target


# Operand layouts of C[M,N] = op(A) . op(B), every buffer row-major: letter 1 is A, letter 2 is B.
# N: stored as in the product (A M x K, lda = K; B K x N, ldb = N); T: stored transposed (A K x M,
# lda = M; B N x K, ldb = K: torch's nn.Linear weight, so x . W^T is NT).
LAYOUTS = ("NN", "NT", "TN", "TT")
INT_MAX = 2**31 - 1               # the largest size a kernel's `int` arithmetic holds
LLONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class Dim:
    name: str
    default: int          # the benchmark size
    small: int            # an awkward small size for the emulator and quick checks
    minimum: int = 1
    maximum: int = INT_MAX  # the largest size every schedule of the op handles
    why: str = "kernels index with 32-bit int"   # what sets `maximum`


def fast_div(d: int) -> tuple[int, int]:
    """(mul, shift) with x // d == (x * mul) >> shift for every 0 <= x < 2**31 (mul < 2**32)."""
    for shift in range(31, 64):
        mul = -(-(1 << shift) // d)
        if mul < 1 << 32 and (mul * d - (1 << shift)) << 31 <= 1 << shift:
            return mul, shift
    raise AssertionError(d)


@dataclass(frozen=True)
class Shorthand:
    """A size name that sets several dims at once: conv2d's `stride` is stride_h and stride_w. On input
    it may stand beside its dims only where they agree; a printed problem shows it in place of its
    dims where they agree, and leaves it out where its value is `quiet` (a dilation of 1), so the
    problem strings (tuning records' keys) of square problems read as before the dims were split."""

    name: str
    dims: tuple[str, ...]
    quiet: int | None = None


@hash_once
@dataclass(frozen=True)
class Problem:
    """Concrete sizes, element types and (GEMM-like ops) operand layout, e.g.
    Problem((("M", 127), ("N", 1000), ("K", 1))). Printed as M=127,N=1000,K=1, the layout after the
    sizes unless it is NN (M=64,N=32,K=8,layout=NT), the types last unless every buffer is float32
    (M=127,N=1000,K=1:f16); the op's shorthands (`Shorthand`) stand for the dims they agree on."""

    sizes: tuple[tuple[str, int], ...]
    types: Types | None = None     # None: every buffer float32
    layout: str | None = None      # GEMM-like ops: "NN", "NT", "TN" or "TT" (see LAYOUTS); attention: "bshd" or
                                   # "packed" (run-time strides, ops/attention_layout.py; None is bhsd); None for the others
    shorthands: tuple[Shorthand, ...] = field(default=(), compare=False, repr=False)   # how it prints
    epilogue: str | None = None    # sgemm, gemm, conv2d: the fused epilogue's canonical text (ops/fusion.py)
    batch: Any = None              # sgemm, gemm: a fusion.Batch (count and A's and B's strides), None: one product
    residual: str | None = None    # layernorm: "add" (y = LN(x + res)) or "add_store" (h = x + res written too)

    def __getitem__(self, name: str) -> int:
        return dict(self.sizes)[name]

    def as_dict(self) -> dict[str, int]:
        return dict(self.sizes)

    def dtype(self, buffer: str):
        """The element type of `buffer` (float32 where the problem names no types)."""
        return self.types[buffer] if self.types and buffer in dict(self.types.buffers) else FLOAT32

    def printed_sizes(self) -> list[tuple[str, int]]:
        """The sizes as printed: each shorthand in place of its dims where they agree."""
        out = list(self.sizes)
        for sh in self.shorthands:
            values = {v for k, v in out if k in sh.dims}
            if len(values) != 1 or sum(k in sh.dims for k, _ in out) != len(sh.dims):
                continue
            at = next(i for i, (k, _) in enumerate(out) if k in sh.dims)
            out = [kv for kv in out if kv[0] not in sh.dims]
            if values != {sh.quiet}:
                out.insert(at, (sh.name, values.pop()))
        return out

    def __str__(self) -> str:
        sizes = ",".join(f"{k}={v}" for k, v in self.printed_sizes())
        if self.layout not in (None, "NN"):   # NN problems print as before layouts existed
            sizes += f",layout={self.layout}"
        if self.batch is not None:             # strides print only where they broadcast (0)
            b = self.batch
            sizes += f",batch={b.count}" + "".join(f",stride_{x}=0" for x, v in (("a", b.stride_a), ("b", b.stride_b))
                                                     if v == 0)
        text = sizes if self.types is None or self.types.short == "f32" else f"{sizes}:{self.types.short}"
        return text + (f";epilogue={self.epilogue}" if self.epilogue else "") + \
            (f";residual={self.residual}" if self.residual else "")


# What a plan's helper launches do, beside the launches computing the op (kernelgen.features reads the
# op's "main launch" among the latter): "fill" sets an output before the computing launches add into it
# (split-K's atomics), "reduce" sums their partial results (split-K's workspace, a reduction's final
# pass), "copy" rearranges an input for them (conv2d's im2col, a GEMM operand's padded rows).
HELPERS = ("fill", "reduce", "copy")


@dataclass(frozen=True)
class Launch:
    symbol: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[str, ...]          # buffer, workspace or scalar names, in the kernel's parameter order
    shared_bytes: int = 0          # dynamic shared memory
    role: str = ""                 # "" for a launch of the op's computation; a helper of it says which (HELPERS)

    def __post_init__(self):
        if self.role and self.role not in HELPERS:
            raise ValueError(f"launch {self.symbol}: role {self.role!r} is none of {HELPERS}")

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class Workspace:
    name: str
    dtype: str
    count: int
    fill: float | None = None      # value to set before the first launch (atomics need 0)


@dataclass(frozen=True)
class TensorMap:
    """A TMA descriptor argument (CUtensorMap, 128 bytes by value): `buffer` seen as a row-major
    rows x cols tensor of its element type, copied in boxes of box_rows x box_cols, 128-byte swizzled.
    Encoded on the host from the buffer's address at launch, once an address (gpu._TensorMapSlot keeps the
    last addresses' descriptors); a workspace's once. `pitch`: elements from one row to the next where more
    than cols (a padded copy); `dtype`: the elements' type where `buffer` is a workspace (else the problem's
    type of `buffer`);
    `outer`: (size, stride in elements) of each dimension beyond the rows, innermost first, boxes 1 deep
    in each (attention's (heads, batch): a 4-D map reads any (batch, head, seq) strides, and rows past the
    sequence arrive as zeros rather than as the next head's)."""
    name: str
    buffer: str
    rows: int
    cols: int
    box_rows: int
    box_cols: int
    pitch: int = 0
    dtype: str = ""
    outer: tuple[tuple[int, int], ...] = ()


# How every TensorMap is encoded (cuTensorMapEncodeTiled's enums, as cuda.h names them and their
# values): kernelgen/gpu.py passes the values at launch, a file's host launcher (recipe.py) the names,
# and an nvcc test checks that the two agree.
TMA_DATA_TYPES = {"float16": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 6), "bfloat16": ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 9),
                  "float32": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 7)}
TMA_SWIZZLE = ("CU_TENSOR_MAP_SWIZZLE_128B", 3)
TMA_L2_PROMOTION = ("CU_TENSOR_MAP_L2_PROMOTION_L2_256B", 3)


@dataclass(frozen=True)
class Scalar:
    name: str
    ctype: str                     # "int" | "long long" | "float"
    value: int | float

    def __post_init__(self):
        limit = {"int": INT_MAX, "long long": LLONG_MAX}.get(self.ctype)
        if limit is not None and not -limit - 1 <= self.value <= limit:
            raise UsageError(f"kernel argument {self.name}={self.value} does not fit the kernel's {self.ctype} "
                             f"(limit {limit}); use smaller sizes")


@dataclass(frozen=True)
class Kernel:
    """A rendered-to-be kernel: everything that decides the source text, and nothing size-dependent."""

    op: str
    name: str                      # file name stem and symbol prefix: op, types, arch and knobs
    schedule: Schedule
    knobs: tuple[tuple[str, Any], ...]
    template: str
    params: tuple[tuple[str, Any], ...]
    static_smem: int = 0           # bytes of __shared__ arrays the template declares
    registers_estimate: int = 0
    arch: str = DEFAULT_ARCH       # what it is compiled for
    types: Types | None = None     # element types of its buffers (None: float32)
    layout: str | None = None      # operand layout (GEMM-like ops; see LAYOUTS), None for the others
    epilogue: str | None = None    # the fused epilogue (sgemm, gemm, conv2d; ops/fusion.py), None for none
    batched: bool = False          # a batched product over blockIdx.z (sgemm, gemm)
    residual: str | None = None    # layernorm: the residual add it fuses (Problem.residual), None for none

    def knob(self, name: str):
        return dict(self.knobs)[name]


@dataclass(frozen=True)
class Plan:
    """How to run one Kernel on one Problem: launches in order, their workspaces and scalar args."""

    kernel: Kernel
    problem: Problem
    launches: tuple[Launch, ...]
    workspaces: tuple[Workspace, ...] = ()
    scalars: tuple[Scalar, ...] = ()
    alignment: tuple[tuple[str, int], ...] = ()   # buffer -> bytes its pointer must be aligned to
    tensor_maps: tuple[TensorMap, ...] = ()       # TMA descriptors the launches take by name


@dataclass(frozen=True)
class LadderStep:
    title: str
    schedule: Schedule
    note: str = ""                 # the seed notes' figure or remark for this step
    arch: str = ""                 # the arch the step needs ("" = any the op runs on), e.g. sm_90a for wgmma
    dtypes: tuple[str, ...] = ()   # the input types the step runs in (() = all the op's); generated/ holds the first


class Op:
    """Base for operators. Subclasses fill the class attributes and the abstract methods."""

    name: str = ""
    summary: str = ""
    dims: tuple[Dim, ...] = ()
    loops: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ("float32",)   # input element types the op accepts
    layouts: tuple[str, ...] = ()  # operand layouts the op takes (LAYOUTS for GEMM-like ops; the first is the default)
    knobs: tuple[Knob, ...] = ()   # the knob menu, stated once (see ops/knobs.py)
    shorthands: tuple[Shorthand, ...] = ()   # size names that set several dims (conv2d's stride, pad)
    structure_help: str = ""       # how the op's splits, binds and fuses lay out the loops (no knob values)
    rel_tolerance: float = 1e-5    # ||out - ref|| / ||ref|| for float32 arithmetic
    error_measure: str = "relative L2 error"   # what `error()` computes, printed beside the tolerance

    # -- problems --------------------------------------------------------------------------------
    def types(self, dtype_name=None, out=None) -> Types:
        """Per-buffer types: inputs in `dtype_name` (default the op's first type), outputs in `out`
        (default the first the op allows with those inputs: the same type, float32 for tf32 data), fp32
        accumulation."""
        d = dtype(dtype_name or self.dtypes[0])
        if d.name not in self.dtypes:
            raise UsageError(f"{self.name}: dtype {d.name} is not supported; {self.name} takes {', '.join(self.dtypes)}")
        o = dtype(out or self.out_dtypes(d.name)[0])
        if o.name not in self.out_dtypes(d.name):
            raise UsageError(f"{self.name}: output dtype {o.name} with {d.name} inputs is not supported; "
                             f"choose one of {', '.join(self.out_dtypes(d.name))}")
        return Types.of(self.inputs, self.outputs, d.name, o.name)

    def out_dtypes(self, dtype_name: str) -> tuple[str, ...]:
        """Output types allowed with inputs of `dtype_name` (the same type unless the op says more)."""
        return (dtype_name,)

    def check_layout(self, layout: str | None) -> str | None:
        """The operand layout `layout` names (any case), upper-case; the op's default (NN) for None; None
        for an op without layouts. A layout for such an op, or one not of LAYOUTS, is a UsageError."""
        allowed = ", ".join(LAYOUTS)
        if not self.layouts:
            if layout is None:
                return None
            from . import OPS
            takes = ", ".join(n for n, o in OPS.items() if o.layouts)
            raise UsageError(f"{self.name} has no operand layouts (layout {layout!r} given); layouts {allowed} "
                             f"are for {takes}")
        if layout is None:
            return self.layouts[0]
        value = layout.upper() if isinstance(layout, str) else layout
        if value not in self.layouts:
            raise UsageError(f"{self.name}: layout {layout!r} is not one of {', '.join(self.layouts)} (letter 1 is A, "
                             "letter 2 is B; N: stored as in the product, T: stored transposed)")
        return value

    def same_layout(self, kernel: Kernel, problem: Problem) -> None:
        """A plan runs a kernel only on problems of the operand layout it was built for."""
        if kernel.layout != problem.layout:
            raise UsageError(f"{kernel.name} is built for layout {kernel.layout}, the problem {problem} is "
                             f"{problem.layout}: build the kernel with op.kernel(..., layout={problem.layout!r})")

    def problem(self, sizes: dict[str, int] | None = None, *, small: bool = False, dtype: str | None = None,
                out_dtype: str | None = None, layout: str | None = None, epilogue: str | None = None,
                batch: int | None = None, stride_a: int | None = None, stride_b: int | None = None,
                residual: str | None = None) -> Problem:
        """The problem of `sizes` (the op's defaults, or its small sizes, for the rest); sgemm, gemm and
        conv2d also take a fused `epilogue`, sgemm and gemm a `batch` (ops/fusion.py), layernorm a
        `residual` add (ops/layernorm.py)."""
        self.check_fusion(epilogue, batch, stride_a, stride_b, residual)
        ep = None
        if epilogue is not None:
            from .fusion import Epilogue
            ep = Epilogue.parse(epilogue)
        layout = self.check_layout(layout)
        types = (self.with_fusion(ep, batch is not None, residual) if self.fuses else self).types(dtype, out_dtype)
        sizes = self.expand_shorthands(dict(sizes or {}))
        unknown = set(sizes) - {d.name for d in self.dims}
        if unknown:
            raise UsageError(f"{self.name}: unknown size {sorted(unknown)[0]!r}; sizes are {self.size_names()}")
        out = [(d.name, self._size(d, d.name, sizes.get(d.name, d.small if small else d.default))) for d in self.dims]
        problem = Problem(tuple(out), types, layout, shorthands=self.shorthands, epilogue=ep and ep.expr,
                          residual=residual)
        if batch is not None:
            from .fusion import make_batch
            import dataclasses
            stored = self.input_shapes(problem)
            problem = dataclasses.replace(problem, batch=make_batch(self.name, batch, stride_a, stride_b,
                                                                    problem.as_dict(), stored))
        self.check_problem(problem)
        return problem

    fuses: tuple[str, ...] = ()    # what a problem may add: "epilogue" (sgemm, gemm, conv2d), "batch" (sgemm, gemm),
                                   # "residual" (layernorm)

    def check_fusion(self, epilogue, batch, stride_a, stride_b, residual=None) -> None:
        """An epilogue, batch or residual given to an op that does not take it is a UsageError naming those
        that do."""
        from . import OPS
        for what, given in (("epilogue", epilogue is not None), ("batch", batch is not None),
                            ("batch", stride_a is not None or stride_b is not None), ("residual", residual is not None)):
            if given and what not in self.fuses:
                takes = ", ".join(n for n, o in OPS.items() if what in o.fuses)
                raise UsageError(f"{self.name} takes no {what}; {what}es are for {takes}" if what == "batch" else
                                 f"{self.name} takes no {what}; {what}s are for {takes}")
        if batch is None and (stride_a is not None or stride_b is not None):
            raise UsageError(f"{self.name}: stride_a and stride_b need batch=COUNT")

    def with_fusion(self, epilogue=None, batched: bool = False, residual: str | None = None) -> "Op":
        """The op instance computing products with this epilogue (and batch), or layer norm with this
        residual add; self for the others."""
        return self

    def for_problem(self, problem: Problem) -> "Op":
        """The op instance whose inputs and reference match `problem` (its epilogue and batch)."""
        return self

    def instance(self, sched: Schedule, problem: Problem) -> "Op":
        """The op instance that runs `sched` on `problem`: its schedule's expression, the problem's epilogue
        and batch (what `prepare` builds with; inputs, shapes and the reference come from it)."""
        return self.for_schedule(sched).for_problem(problem)

    def for_kernel(self, kernel: Kernel) -> "Op":
        """The op instance that built `kernel` (its schedule's expression, its epilogue and batch)."""
        return self.for_schedule(kernel.schedule)

    def name_tokens(self) -> list[str]:
        """Parts of a kernel's name the op instance adds after the types and layout (epilogue, batch)."""
        return []

    def kernel_fields(self) -> dict:
        """Kernel fields the op instance sets (epilogue, batched)."""
        return {}

    def size_names(self) -> str:
        """The dims, and the shorthands where the op has some, as messages list them."""
        names = ", ".join(d.name for d in self.dims)
        return names + (f" (shorthands: {', '.join(s.name for s in self.shorthands)})" if self.shorthands else "")

    def _size(self, d: Dim, name: str, v) -> int:
        """`v` as dim `d`'s value (given as `name`: the dim or a shorthand for it), or a UsageError."""
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise UsageError(f"{self.name}: size {name}={v!r} is a {type(v).__name__}; sizes are integers "
                             f"{d.minimum}..{d.maximum}")
        if not d.minimum <= v <= d.maximum:
            raise UsageError(f"{self.name}: size {name}={v} is illegal (must be an integer {d.minimum}..{d.maximum}; "
                             f"{d.why})" if v > d.maximum else
                             f"{self.name}: size {name}={v} is illegal (must be an integer >= {d.minimum})")
        return int(v)

    def expand_shorthands(self, sizes: dict) -> dict:
        """`sizes` with each shorthand replaced by its dims; a dim also given must agree with it."""
        dims = {d.name: d for d in self.dims}
        for sh in self.shorthands:
            if sh.name not in sizes:
                continue
            v = self._size(dims[sh.dims[0]], sh.name, sizes.pop(sh.name))
            for name in sh.dims:
                if sizes.setdefault(name, v) != v:
                    raise UsageError(f"{self.name}: {sh.name}={v} sets {' and '.join(sh.dims)}, but {name}={sizes[name]} "
                                     f"disagrees; give {sh.name} alone or each of {', '.join(sh.dims)}")
        return sizes

    def test_problems(self) -> tuple[dict, ...]:
        """Awkward sizes every schedule must get right (not multiples of any tile); the small one by default."""
        return ({d.name: d.small for d in self.dims},)

    def test_problems_for(self, sched: Schedule) -> tuple[dict, ...]:
        """The awkward sizes a schedule is tested on: test_problems(), unless the schedule's variant
        takes only some sizes (TMA's aligned rows) and says so by name for the rest."""
        return self.test_problems()

    def check_problem(self, problem: Problem) -> None:
        """Op-specific checks of sizes (e.g. a convolution with an empty output)."""

    # -- schedules -------------------------------------------------------------------------------
    def default_knobs(self) -> dict:
        return {k.name: k.default for k in self.knobs}

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise UsageError(f"{self.name}: unknown knob {name!r}; knobs are " + ", ".join(k.name for k in self.knobs))

    def parse_knob(self, text: str) -> tuple[str, Any]:
        """`NAME=VALUE` from the command line: the knob's name and its value, checked against its choices."""
        name, eq, value = text.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"{self.name}: knob {text!r} must be NAME=VALUE; knobs are "
                             + ", ".join(k.name for k in self.knobs))
        knob = self.knob(name.strip())
        return knob.name, knob.parse(value, self.name)

    def schedule_from_knobs(self, **knobs) -> Schedule:
        """The canonical chain of primitives for a knob setting (the inverse of knobs_from_schedule);
        knobs left out take their defaults. No values are checked here (`schedule` checks them)."""
        for name in knobs:
            self.knob(name)               # an unknown knob is a UsageError naming the knobs
        return self.build(dict(self.default_knobs(), **knobs))

    def build(self, k: dict) -> Schedule:
        """The op's splits, fuses and binds for knobs `k`, with `put` placing the declared steps."""
        raise NotImplementedError

    def read_knobs(self, r: ScheduleReader) -> dict:
        """The knobs the op reads itself (those carried by splits, fuses and binds, and any that decide
        how to read the rest); every other knob is read from its declared step by knobs_from_schedule."""
        raise NotImplementedError

    def put(self, s: Schedule, k: dict, *names: str) -> Schedule:
        """`s` with the declared steps of knobs `names`, in that order (skipping knobs that do not apply)."""
        for name in names:
            knob = self.knob(name)
            if knob.applies(k):
                s = knob.step.build(s, k[name])
        return s

    def take(self, r: ScheduleReader, name: str):
        """One knob read from its declared step, for an op whose reading depends on it."""
        knob = self.knob(name)
        return knob.step.read(r, knob, self.name)

    @property
    def primitives_help(self) -> str:
        """Every primitive the op reads, from the knob table (with the knobs' values) and from its
        default and ladder schedules (the steps no knob changes), for `kernelgen list OP`."""
        carrier = {(k.step.prim, t): k for k in reversed(self.knobs) if k.step for t in k.step.targets}
        seen: dict[str, None] = {}        # an ordered set
        for sched in (self.default_schedule(), *(s.schedule for s in self.ladder())):
            for step in sched.steps:
                knob = carrier.get((step.prim, step.target))
                seen.setdefault(knob.step.describe(knob) if knob else _plain(step))
        for k in self.knobs:
            if k.step:
                seen.setdefault(k.step.describe(k))
        return "; ".join(seen) + (f". {self.structure_help}" if self.structure_help else "")

    def step_types(self, step: LadderStep, types: Types | None = None) -> Types | None:
        """The types ladder step `step` is built in: `types` (None: the op's first) where the step runs in
        that input type, else the step's own first (attention's tensor-core step is fp16/bf16 only, its
        others fp32 only)."""
        if step.dtypes and (types or self.types()).input.name not in step.dtypes:
            return self.types(step.dtypes[0])
        return types

    def default_schedule(self) -> Schedule:
        return self.schedule_from_knobs(**self.default_knobs())

    def for_schedule(self, sched: Schedule) -> "Op":
        """The op instance that computes what `sched` computes (an elementwise schedule carries its
        expression, which decides the inputs and the reference); `self` for every other op."""
        return self

    def schedule_for(self, problem: Problem, target: Target | None = None) -> Schedule:
        """The op's heuristic choice for one problem on `target` (default: the default target; `run`,
        `bench` and `tune` pass the GPU they run on), like a vendor library's heuristic; the default
        schedule unless the op knows better."""
        return self.default_schedule()

    def knobs_from_schedule(self, sched: Schedule) -> dict:
        """Every knob of `sched`, in the table's order: those the op reads itself (read_knobs), then
        each other knob from its declared step; every value is checked against the knob's choices
        and a step nobody read is refused."""
        if sched.op != self.name:
            raise ScheduleError("schedule", "op", sched.op, allowed=self.name)
        self._refuse_unknown_prims(sched)
        r = ScheduleReader(sched, self.all_loops(), self.inputs + self.outputs)
        k = self.read_knobs(r)
        for knob in self.knobs:
            if knob.name in k:
                continue
            if not knob.applies(k):
                k[knob.name] = knob.off_value()
                self._refuse_inapplicable(sched, knob, k)
            elif knob.step is not None and knob.step.generic:
                k[knob.name] = knob.step.read(r, knob, self.name)
            else:
                raise NotImplementedError(f"{self.name}.read_knobs must read knob {knob.name}")
        r.finish()
        return {knob.name: knob.checked(k[knob.name], self.name) for knob in self.knobs}

    def _refuse_unknown_prims(self, sched: Schedule) -> None:
        """A primitive that only some ops take (prefetch) is refused by name, listing the ops that take it."""
        mine = {k.step.prim for k in self.knobs if k.step}
        for step in sched.steps:
            if step.prim == "prefetch" and step.prim not in mine:
                from . import OPS
                takes = ", ".join(n for n, o in OPS.items() if any(k.step and k.step.prim == step.prim for k in o.knobs))
                raise ScheduleError(step.prim, step.target, step.args()[1:],
                                    limit=f"{self.name} has no grid-stride loop that prefetch serves",
                                    allowed=f"ops {takes}")

    def _refuse_inapplicable(self, sched: Schedule, knob: Knob, k: dict) -> None:
        """A step of a knob that does not apply (`when`) is refused, naming the knob it needs."""
        if knob.step is None or not knob.step.generic:
            return
        for step in sched.steps:
            if step.prim == knob.step.prim and step.target in knob.step.targets:
                raise ScheduleError(step.prim, step.target, step.setting,
                                    limit=f"knob {knob.name} applies only {knob.condition()}, not {knob.state(k, quote=False)}")

    def all_loops(self) -> tuple[str, ...]:
        return self.loops + tuple(f"{l}.{i}" for l in self.loops for i in range(4))

    def schedule(self, **overrides) -> Schedule:
        """The default knobs with `overrides` applied, as a schedule. An unknown knob, a value outside
        the knob's choices, or a knob that does not apply with the others (`when`) is a KnobError."""
        knobs = self.default_knobs()
        for k, v in overrides.items():
            knobs[k] = self.knob(k).check(v, self.name)
        for k in overrides:
            knob = self.knob(k)
            if not knob.applies(knobs) and knobs[k] != knob.off_value():
                raise KnobError(f"{self.name}: knob {k}={knobs[k]!r} has no effect with {knob.state(knobs)} "
                                f"(it applies {knob.condition()})", k, knobs[k])
        return self.schedule_from_knobs(**knobs)

    def check_knobs(self, knobs: dict, target: Target) -> None:
        """Legality beyond what the reader checks: divisibility, threads, shared memory, registers."""

    # -- lowering --------------------------------------------------------------------------------
    def kernel(self, sched: Schedule, target: Target | None = None, types: Types | None = None,
               layout: str | None = None) -> Kernel:
        """Check `sched` against `target` and decide everything that fixes the source text; an op with
        operand layouts builds the kernel of `layout` (default NN), named by it unless it is NN."""
        target = target or default_target()
        types = types or self.types()
        layout = self.check_layout(layout)
        knobs = self.knobs_from_schedule(sched)
        by_layout = {"layout": layout} if self.layouts else {}   # only ops with layouts take the argument
        self.check_knobs(knobs, target, **by_layout)
        name = "_".join([self.name, types.short] + ([layout.lower()] if layout not in (None, "NN") else [])
                        + self.name_tokens() + [target.short] + [self.knob(k).encode(v) for k, v in self.name_knobs(knobs).items()])
        params, static_smem, regs = self.template_params(knobs, types, target, **by_layout)
        check(static_smem <= target.max_smem, "cache_read", "shared", f"{static_smem} bytes",
              limit=f"{target.max_smem} bytes of shared memory per block on {target.arch}")
        check(regs <= target.max_registers, "split", "register tile", f"~{regs} registers per thread",
              limit=f"{target.max_registers} registers per thread")
        return Kernel(self.name, name, sched, tuple(knobs.items()), self.template(knobs),
                      tuple(sorted(params.items())), static_smem, regs, target.arch, types, layout,
                      **self.kernel_fields())

    def name_knobs(self, knobs: dict) -> dict:
        """The knobs that decide the source, which the kernel's name spells out (all of them unless
        some are unused by the variant the knobs pick)."""
        return knobs

    def template(self, knobs: dict) -> str:
        return f"{self.name}.cu.j2"

    def template_params(self, knobs: dict, types: Types, target: Target) -> tuple[dict, int, int]:
        """(params for the template, shared-memory bytes per block, register estimate)."""
        raise NotImplementedError

    def plan(self, kernel: Kernel, problem: Problem, target: Target | None = None) -> Plan:
        raise NotImplementedError

    def launch_recipe(self, kernel: Kernel):
        """`plan` as C expressions of the sizes (a kernelgen.recipe.Recipe), without the sizes' limits
        (`recipe` adds them from `dims`)."""
        raise NotImplementedError

    def recipe(self, kernel: Kernel):
        """The launch recipe of the header and the host launcher: launch_recipe with every size's
        smallest and largest legal value. Tests evaluate it against `plan` at awkward sizes."""
        import dataclasses
        return dataclasses.replace(self.launch_recipe(kernel),
                                   minimum=tuple((d.name, d.minimum) for d in self.dims),
                                   maximum=tuple((d.name, d.maximum) for d in self.dims))

    def recipe_buffers(self, kernel: Kernel):
        """The caller's pointers, inputs (const) then outputs, in the kernel's element types."""
        from ..recipe import Buffer
        types = kernel.types or self.types()
        return tuple(Buffer(b, types[b].ctype, b in self.inputs) for b in self.inputs + self.outputs)

    # -- numbers ---------------------------------------------------------------------------------
    def make_inputs(self, problem: Problem, rng: np.random.Generator) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def output_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        raise NotImplementedError

    def input_shapes(self, problem: Problem) -> dict[str, tuple[int, ...]]:
        """Shapes the caller's input arrays must have (checked by `launch`, without drawing inputs)."""
        raise NotImplementedError

    def reference(self, inputs: dict[str, np.ndarray], problem: Problem) -> dict[str, np.ndarray]:
        """float64 results computed with numpy from the (float32) inputs."""
        raise NotImplementedError

    def bytes_moved(self, problem: Problem) -> int:
        raise NotImplementedError

    def flops(self, problem: Problem) -> int:
        return 0

    def math(self, problem: Problem) -> str:
        """The compute roof's path: "fp32" (CUDA cores) unless the op runs on tensor cores."""
        return "fp32"

    def tolerance(self, problem: Problem) -> float:
        return self.rel_tolerance

    def measure(self, problem: Problem) -> str:
        """What `error()` computes for `problem` (ops whose measure depends on the types override it)."""
        return self.error_measure

    def error(self, name: str, out: np.ndarray, ref: np.ndarray, inputs: dict, problem: Problem) -> float:
        """The error compared with `tolerance()`: ||out - ref|| / ||ref|| unless the op says otherwise."""
        return rel_error(out, ref)

    def vendor(self, xp_inputs: dict, problem: Problem) -> tuple[str, Callable[[], Any]] | None:
        """(library name, a no-argument callable running the vendor library on device inputs) for benchmarks."""
        return None

    # -- ladders and search ----------------------------------------------------------------------
    def ladder(self) -> tuple[LadderStep, ...]:
        return ()

    def space(self, problem: Problem, target: Target) -> Iterator[dict]:
        """Every combination of the knobs' tuning values (`Knob.tune`, else all their choices), the
        values `space_pins(problem)` fixes taken as given; illegal points are pruned by the tuner
        through ScheduleError."""
        pins = self.space_pins(problem)
        names = [k.name for k in self.knobs]
        for combo in itertools.product(*(pins.get(k.name, k.tune_values()) for k in self.knobs)):
            point = dict(zip(names, combo))
            # a knob that does not apply (`when`) takes its off value only: the others are the same schedule
            if all(k.applies(point) or point[k.name] == k.off_value() for k in self.knobs):
                yield point

    def space_pins(self, problem: Problem) -> dict[str, tuple]:
        """Knobs whose tuning values depend on the problem (e.g. 16-byte accesses: vec from the type)."""
        return {}

    def wide_axes(self, problem: Problem, target: Target) -> dict[str, tuple]:
        """The wide space (`kernelgen tune --space wide`): knobs whose values are crossed onto every
        point of `space`, for sweeps that record what the curated space leaves out (a model's training
        data, a check of the heuristics). {}: the op has no wider space than its own."""
        return {}


def _plain(step) -> str:
    """A step as `kernelgen list` shows it: bind(i.0, blockIdx.x), unroll(i.1), fuse(n, p, q)."""
    args = step.args()
    if step.prim == "unroll" and args[-1] == 0:
        args = args[:-1]
    return f"{step.prim}({', '.join(map(str, args))})"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def rel_error(out: np.ndarray, ref: np.ndarray) -> float:
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        return math.inf
    denom = np.linalg.norm(ref.ravel())
    num = np.linalg.norm((out - ref).ravel())
    return float(num / denom) if denom > 0 else float(num)


def pointwise_error(out: np.ndarray, ref: np.ndarray, scale=1.0) -> float:
    """max |out - ref| / (|ref| + scale): relative where |ref| dominates, absolute below `scale` (an array
    or a number), where a relative measure is ill-conditioned (underflow; gelu(x + bias) with x + bias
    close to 0 cancels)."""
    out = np.asarray(out, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        return math.inf
    return float(np.max(np.abs(out - ref) / (np.abs(ref) + scale))) if out.size else 0.0
