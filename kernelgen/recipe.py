"""A kernel's launch recipe: its launches as C expressions of the runtime sizes, stated once and
used three ways: evaluated in Python (tests compare it with `op.plan` so the two cannot drift),
written in words into the emitted file's header, and written as a host launcher behind
`KERNELGEN_HOST_LAUNCHER`.

>>> from kernelgen.ops import get_op
>>> from kernelgen.recipe import evaluate
>>> op = get_op("reduce_sum")
>>> kern = op.kernel(op.default_schedule())
>>> run = evaluate(op.recipe(kern), {"n": 1000003}, sms=132)
>>> [l.symbol.rsplit("_", 1)[1] for l in run.launches]
['partial', 'final']

Expressions use a small language that C and Python both read the same way: integer names (the
op's sizes, earlier `lets`, `sms` = the device's multiprocessor count), + - * %, comparisons,
&&, || and !, and the functions kg_cdiv, kg_div, kg_min, kg_max, kg_ll (widen to 64 bits before a
product), sqrt (of a double: attention's scale, a float let), kg_fast_mul and kg_fast_shr (conv2d's division by multiply and shift). Sizes are
positive, so C's truncating division equals Python's floor division.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .errors import UsageError
from .ops.base import TMA_DATA_TYPES, TMA_L2_PROMOTION, TMA_SWIZZLE, fast_div

SMEM_OPT_IN = 48 * 1024          # static + dynamic shared memory above this needs cudaFuncSetAttribute
WORKSPACE_ALIGN = 256            # each workspace starts at a multiple of this many bytes


@dataclass(frozen=True)
class Step:
    """One kernel launch. `grid` holds C expressions; `when` (a C condition, "" = always) picks
    between a kernel and its twin; `loop` = (var, stop, step) repeats the consecutive steps that
    share it for var = 0, step, 2*step, ... < stop."""
    symbol: str
    grid: tuple[str, str, str]
    block: tuple[int, int, int]
    args: tuple[str, ...]
    shared_bytes: int = 0
    when: str = ""
    loop: tuple[str, str, str] | None = None


@dataclass(frozen=True)
class Map:
    """A TMA descriptor argument (a CUtensorMap passed by value) that the launcher encodes from a
    buffer's address, as ops/base.py's TensorMap: `buffer` seen as a row-major rows x cols tensor of
    `dtype` (rows and cols C expressions of the sizes), copied in boxes of box_rows x box_cols; `pitch`
    (a C expression, "" = cols): elements from one row to the next; `when` (a C condition, "" = always):
    where the map is encoded (two maps of one name stand for one argument, buffer or padded copy);
    `outer`: (size, stride in elements) C expressions of the dimensions beyond the rows, innermost first
    (at most two), boxes 1 deep in each."""
    name: str
    buffer: str
    dtype: str
    rows: str
    cols: str
    box_rows: int
    box_cols: int
    pitch: str = ""
    when: str = ""
    outer: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Buffer:
    name: str
    ctype: str
    const: bool


@dataclass(frozen=True)
class Recipe:
    arch: str
    sizes: tuple[str, ...]                           # the op's sizes, `int` arguments
    buffers: tuple[Buffer, ...]                      # caller's pointers, inputs then outputs
    steps: tuple[Step, ...]
    lets: tuple[tuple[str, str, str], ...] = ()      # (name, C type, expression), in order
    workspaces: tuple[tuple[str, str, str, float | None], ...] = ()   # (name, C type, count expr, fill)
    alignment: tuple[tuple[str, int, str], ...] = ()  # (buffer, bytes, when)
    requires: tuple[tuple[str, str], ...] = ()       # (condition, what it means) checked before launching
    minimum: tuple[tuple[str, int], ...] = ()        # each size's smallest legal value (1 where not named)
    maximum: tuple[tuple[str, int], ...] = ()        # each size's largest (2^31 - 1 where not named)
    tensor_maps: tuple[Map, ...] = ()                # TMA descriptor arguments the launcher encodes
    note: str = ""                                   # what the recipe leaves to the caller
    layout: str | None = None                        # GEMM-like ops: the operand layout (ops/operands.py), which
                                                     # decides the buffers' shapes and leading dimensions

    def __post_init__(self):
        for _, _, _, fill in self.workspaces:
            if fill not in (None, 0, 0.0):
                raise UsageError(f"a workspace fill of {fill} cannot be done with cudaMemsetAsync")

    def expressions(self) -> list[str]:
        out = [e for _, _, e in self.lets] + [c for c, _ in self.requires]
        out += [w[2] for w in self.workspaces] + [a[2] for a in self.alignment]
        out += [e for m in self.tensor_maps for e in (m.rows, m.cols, m.pitch, m.when, *(x for o in m.outer for x in o))]
        for s in self.steps:
            out += list(s.grid) + [s.when] + (list(s.loop[1:]) if s.loop else [])
        return [e for e in out if e]

    def order(self) -> list[tuple[str, tuple]]:
        """Lets and requirements in evaluation order: each requirement as soon as the lets it names
        are known, so a later let never sees sizes a requirement refuses."""
        names = {n for n, _, _ in self.lets}
        pending, out, known = list(self.requires), [], set()
        for item in (None,) + self.lets:
            if item is not None:
                out.append(("let", item))
                known.add(item[0])
            for req in [r for r in pending if set(re.findall(r"[A-Za-z_]\w*", r[0])) & names <= known]:
                out.append(("require", req))
                pending.remove(req)
        return out + [("require", r) for r in pending]

    def limits(self) -> list[tuple[str, int, int]]:
        lo, hi = dict(self.minimum), dict(self.maximum)
        return [(s, lo.get(s, 1), hi.get(s, 2**31 - 1)) for s in self.sizes]

    @property
    def uses_sms(self) -> bool:
        return _names_sms(self.expressions())

    @property
    def checks_use_sms(self) -> bool:
        """Whether a let, a requirement or a workspace needs the multiprocessor count (else only grids do,
        and the launcher asks the device for it after every check of the input)."""
        return _names_sms([e for _, _, e in self.lets] + [c for c, _ in self.requires] + [w[2] for w in self.workspaces])


def _names_sms(exprs) -> bool:
    return any(re.search(r"\bsms\b", e) for e in exprs)


# -- Python evaluation ---------------------------------------------------------------------------


FUNCS = {"kg_cdiv": lambda a, b: -(-a // b), "kg_div": lambda a, b: a // b, "kg_min": min, "kg_max": max,
         "kg_ll": int, "sqrt": math.sqrt, "kg_fast_mul": lambda d: fast_div(d)[0], "kg_fast_shr": lambda d: fast_div(d)[1]}


def py(expr: str, env: dict) -> int | float:
    """Evaluate one recipe expression in Python (a condition gives 0 or 1)."""
    text = re.sub(r"!(?!=)", " not ", expr.replace("&&", " and ").replace("||", " or "))
    value = eval(text, {"__builtins__": {}}, {**FUNCS, **env})   # noqa: S307 (our own expressions)
    return int(value) if isinstance(value, bool) else value


@dataclass(frozen=True)
class Launched:
    symbol: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[tuple[str, int | None], ...]    # (name, value) - value None for a pointer
    shared_bytes: int


@dataclass(frozen=True)
class Evaluated:
    ok: bool                                     # every requirement holds
    failed: tuple[str, ...]                      # the requirements that do not
    launches: tuple[Launched, ...] = ()
    workspaces: tuple[tuple[str, str, int, float | None], ...] = ()
    alignment: tuple[tuple[str, int], ...] = ()
    env: dict = field(default_factory=dict)
    tensor_maps: tuple[tuple, ...] = ()   # (name, buffer, rows, cols, box rows, box cols, pitch, ((size, stride), ...))


def evaluate(recipe: Recipe, sizes: dict[str, int], sms: int) -> Evaluated:
    """The launches the recipe makes for `sizes` on a GPU with `sms` multiprocessors."""
    env = dict(sizes, sms=sms)
    bad = tuple(f"{s} in {lo}..{hi}" for s, lo, hi in recipe.limits() if not lo <= sizes[s] <= hi)
    if bad:
        return Evaluated(False, bad, env=env)
    for kind, item in recipe.order():
        if kind == "let":
            env[item[0]] = py(item[2], env)
        elif not py(item[0], env):
            return Evaluated(False, (item[1],), env=env)
    pointers = {b.name for b in recipe.buffers} | {w[0] for w in recipe.workspaces} | {m.name for m in recipe.tensor_maps}
    launches = []
    for group in _groups(recipe.steps):
        loop = group[0].loop
        values = [None] if loop is None else range(0, py(loop[1], env), py(loop[2], env))
        for v in values:
            local = env if loop is None else dict(env, **{loop[0]: v})
            for s in group:
                if s.when and not py(s.when, local):
                    continue
                args = tuple((a, None if a in pointers else local[a]) for a in s.args)
                launches.append(Launched(s.symbol, tuple(py(g, local) for g in s.grid), s.block, args,
                                         s.shared_bytes))
    workspaces = tuple((n, t, py(c, env), f) for n, t, c, f in recipe.workspaces)
    alignment = tuple((b, n) for b, n, when in recipe.alignment if not when or py(when, env))
    maps = tuple((m.name, m.buffer, py(m.rows, env), py(m.cols, env), m.box_rows, m.box_cols, py(m.pitch or m.cols, env),
                  tuple((py(n, env), py(st, env)) for n, st in m.outer))
                 for m in recipe.tensor_maps if not m.when or py(m.when, env))
    return Evaluated(True, (), tuple(launches), workspaces, alignment, env, maps)


def _groups(steps):
    out: list[list[Step]] = []
    for s in steps:
        if out and s.loop is not None and out[-1][0].loop == s.loop:
            out[-1].append(s)
        else:
            out.append([s])
    return out


# -- the header, in words ------------------------------------------------------------------------
def describe(recipe: Recipe, name: str) -> list[str]:
    """The recipe as comment lines (without the leading //)."""
    sizes = ", ".join(f"{s} in {lo}..{hi}" for s, lo, hi in recipe.limits())
    lines = ["launch recipe (sizes are runtime ints; expressions are C, kg_cdiv(a, b) = (a + b - 1) / b):",
             f"  target: {recipe.arch}; compile with nvcc {_nvcc_arch(recipe.arch)}",
             f"  buffers: " + ", ".join(f"{'const ' if b.const else ''}{b.ctype}* {b.name}" for b in recipe.buffers),
             f"  sizes: {sizes}"]
    if recipe.layout not in (None, "NN"):    # NN files read as before layouts existed
        from .ops.operands import Operands
        lines.append(f"  {Operands(recipe.layout).describe()}")
    if recipe.uses_sms:
        lines.append("  sms = the device's multiprocessor count (cudaDevAttrMultiProcessorCount)")
    for kind, item in recipe.order():
        lines.append(f"  {item[1]} {item[0]} = {item[2]}" if kind == "let" else f"  requires {item[0]}  ({item[1]})")
    for b, n, when in recipe.alignment:
        lines.append(f"  {b} must be {n}-byte aligned" + (f" when {when}" if when else ""))
    if recipe.workspaces:
        lines.append(f"  workspace: one buffer of kg_workspace_bytes_{name}(sizes) bytes holding, "
                     f"each at a {WORKSPACE_ALIGN}-byte boundary:")
        for n, t, c, fill in recipe.workspaces:
            lines.append(f"    {n}: {c} x {t}" + (f", cleared to {fill:g} before the first kernel" if fill is not None else ""))
    else:
        lines.append("  workspace: none")
    for m in recipe.tensor_maps:
        lines.append(f"  {m.name}: " + (f"where {m.when}, " if m.when else "") + "a CUtensorMap (128 bytes, by value) the "
                     f"launcher encodes with cuTensorMapEncodeTiled: {m.buffer} as a row-major {m.rows} x {m.cols} "
                     f"{m.dtype} tensor" + (f" with rows {m.pitch} elements apart" if m.pitch else "") +
                     "".join(f", times {n} (each {st} elements on)" for n, st in m.outer) +
                     f", boxes of {m.box_rows} x {m.box_cols}, {TMA_SWIZZLE[0]}, {TMA_L2_PROMOTION[0]}")
    lines.append("  kernels, in order on one stream:")
    for i, group in enumerate(_groups(recipe.steps)):
        loop = group[0].loop
        indent = "    "
        if loop is not None:
            lines.append(f"    for ({loop[0]} = 0; {loop[0]} < {loop[1]}; {loop[0]} += {loop[2]}):")
            indent = "      "
        for s in group:
            smem = f"{s.shared_bytes} bytes dynamic shared" + (" (needs cudaFuncSetAttribute "
                   "MaxDynamicSharedMemorySize)" if s.shared_bytes > SMEM_OPT_IN else "")
            lines.append(f"{indent}{'if ' + s.when + ': ' if s.when else ''}{s.symbol}")
            lines.append(f"{indent}  grid ({', '.join(s.grid)}), block ({', '.join(map(str, s.block))}), {smem}")
            lines.append(f"{indent}  args ({', '.join(s.args)})")
    if recipe.note:
        lines.append(f"  note: {recipe.note}")
    lines.append("host launcher (build with -DKERNELGEN_HOST_LAUNCHER; returns cudaErrorInvalidValue for a null "
                 "pointer, a size outside its range, a broken requirement, a misaligned pointer or a workspace "
                 "too small" + (", and where a tensor map cannot be encoded" if recipe.tensor_maps else "") + "):")
    sizes = ", ".join(f"int {s}" for s in recipe.sizes)
    bufs = ", ".join(f"{'const ' if b.const else ''}{b.ctype}* {b.name}" for b in recipe.buffers)
    lines.append(f'  extern "C" size_t kg_workspace_bytes_{name}({sizes});')
    lines.append(f'  extern "C" cudaError_t kg_launch_{name}({bufs}, {sizes}, void* workspace, '
                 'size_t workspace_bytes, cudaStream_t stream);')
    return lines


def _nvcc_arch(arch: str) -> str:
    """nvcc's flag for the arch: an arch-specific target (sm_90a) in the -gencode form, which reaches its
    own instructions with every nvcc (CUDA 13's -arch=sm_90a also assembles compute_90 PTX, which has no wgmma)."""
    if arch.endswith("a"):
        return f"-gencode=arch=compute_{arch[3:]},code={arch}"
    return f"-arch={arch}"


# -- the host launcher ---------------------------------------------------------------------------
HELPERS = """\
#ifndef KERNELGEN_HOST_HELPERS
#define KERNELGEN_HOST_HELPERS
#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>
inline long long kg_cdiv(long long a, long long b) { return (a + b - 1) / b; }
inline long long kg_div(long long a, long long b) { return a / b; }
inline long long kg_min(long long a, long long b) { return a < b ? a : b; }
inline long long kg_max(long long a, long long b) { return a > b ? a : b; }
inline long long kg_ll(long long a) { return a; }
// x / d == (x * mul) >> shr for 0 <= x < 2^31 (the same search as kernelgen's fast_div)
inline void kg_fast_div(long long d, long long* mul, long long* shr) {
  for (int s = 31; s < 64; ++s) {
    unsigned long long p = 1ull << s, m = (p + (unsigned long long)d - 1) / (unsigned long long)d;
    if (m < (1ull << 32) && ((m * (unsigned long long)d - p) << 31) <= p) { *mul = (long long)m; *shr = s; return; }
  }
  *mul = 0; *shr = 0;
}
inline long long kg_fast_mul(long long d) { long long m, s; kg_fast_div(d, &m, &s); return m; }
inline long long kg_fast_shr(long long d) { long long m, s; kg_fast_div(d, &m, &s); return s; }
inline bool kg_misaligned(const void* p, size_t bytes) { return ((uintptr_t)p) % bytes != 0; }
#endif
"""


TMA_HELPERS = """\
#ifndef KERNELGEN_TMA_HELPERS
#define KERNELGEN_TMA_HELPERS
#include <cstring>
#include <cuda.h>
#include <cudaTypedefs.h>
static_assert(sizeof(CUtensorMap) == sizeof(kg_tensor_map), "kg_tensor_map holds a CUtensorMap");
// A 2-D TMA descriptor: `base` seen as a row-major rows x cols tensor of `bytes`-byte elements, rows
// `pitch` elements apart, copied in boxes of box_rows x box_cols, encoded as kernelgen/gpu.py encodes it (%(swizzle)s,
// %(l2)s); with `outer` further dimensions (sizes d2, d3 and strides s2, s3 in elements, boxes 1 deep in
// them) a 3-D or 4-D one. The driver's cuTensorMapEncodeTiled is reached through the runtime,
// so nothing links -lcuda. Returns
// cudaErrorInvalidValue for a tensor TMA cannot take (base not 16-byte aligned, a row's bytes not a
// multiple of 16) before touching the driver, and where the encoding fails.
inline cudaError_t kg_encode_tensor_map(kg_tensor_map* map, CUtensorMapDataType type, const void* base,
                                        unsigned long long rows, unsigned long long cols, unsigned long long pitch,
                                        unsigned long long bytes, unsigned box_rows, unsigned box_cols,
                                        unsigned outer = 0, unsigned long long d2 = 1, unsigned long long s2 = 0,
                                        unsigned long long d3 = 1, unsigned long long s3 = 0) {
  // innermost first; bytes from one row (one index of an outer dimension) to the next
  const cuuint64_t dims[4] = {cols, rows, d2, d3}, strides[3] = {pitch * bytes, s2 * bytes, s3 * bytes};
  const cuuint32_t box[4] = {box_cols, box_rows, 1, 1}, ones[4] = {1, 1, 1, 1};
  if (base == nullptr || kg_misaligned(base, 16) || outer > 2) return cudaErrorInvalidValue;
  for (unsigned i = 0; i < 1 + outer; ++i)
    if (strides[i] %% 16 != 0 || strides[i] >= (1ull << 40)) return cudaErrorInvalidValue;
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
#else
  cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found);
#endif
  if (e != cudaSuccess) return e;
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) return cudaErrorInsufficientDriver;
  CUtensorMap m;
  CUresult r = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn)(
      &m, type, 2 + outer, const_cast<void*>(base), dims, strides, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
      %(swizzle)s, %(l2)s, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return cudaErrorInvalidValue;
  std::memcpy(map, &m, sizeof m);
  return cudaSuccess;
}
#endif
""" % dict(swizzle=TMA_SWIZZLE[0], l2=TMA_L2_PROMOTION[0])


def _encode(recipe: Recipe) -> list[str]:
    """The launcher's lines declaring and encoding its tensor maps (after every check of the input)."""
    ctype = {b.name: b.ctype for b in recipe.buffers} | {w[0]: w[1] for w in recipe.workspaces}
    names = ", ".join(dict.fromkeys(m.name for m in recipe.tensor_maps))
    out = [f"  kg_tensor_map {names};"] if recipe.tensor_maps else []
    for m in recipe.tensor_maps:
        out.append(f"  {'if (' + m.when + ') ' if m.when else ''}{{ cudaError_t e = kg_encode_tensor_map(&{m.name}, "
                   f"{TMA_DATA_TYPES[m.dtype][0]}, {m.buffer}, (unsigned long long)({m.rows}), (unsigned long long)({m.cols}), "
                   f"(unsigned long long)({m.pitch or m.cols}), sizeof({ctype[m.buffer]}), {m.box_rows}, {m.box_cols}"
                   + "".join([f", {len(m.outer)}"] + [f", (unsigned long long)({x})" for o in m.outer for x in o]
                             if m.outer else []) + "); "
                   "if (e != cudaSuccess) return e; }")
    return out


def launcher_source(recipe: Recipe, name: str) -> str:
    """The host code: kg_workspace_bytes_<name> and kg_launch_<name>, behind KERNELGEN_HOST_LAUNCHER."""
    sizes = ", ".join(f"int {s}" for s in recipe.sizes)
    bufs = ", ".join(f"{'const ' if b.const else ''}{b.ctype}* {b.name}" for b in recipe.buffers)
    out = ["", "// ---- host launcher: the launch recipe above, as C (define KERNELGEN_HOST_LAUNCHER to build it) ----",
           "#ifdef KERNELGEN_HOST_LAUNCHER", HELPERS.rstrip()]
    if recipe.tensor_maps:
        out.append(TMA_HELPERS.rstrip())

    def ask_sms(no_device: str) -> list[str]:
        return ["  int sms = 0, device = 0;",
                "  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&sms, "
                f"cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) return {no_device};"]

    def prologue(fail: str, no_device: str) -> list[str]:
        body = [f"  if ({s} < {lo}{f' || {s} > {hi}' if hi < 2**31 - 1 else ''}) return {fail};"
                for s, lo, hi in recipe.limits()]
        if recipe.checks_use_sms:
            body += ask_sms(no_device)
        for kind, item in recipe.order():
            if kind == "let":
                n, t, e = item
                body.append(f"  const {t} {n} = ({t})({e}); (void){n};")
            else:
                body.append(f"  if (!({item[0]})) return {fail};  // {item[1]}")
        return body

    # -- workspace bytes (0 for sizes the launcher refuses)
    out.append(f'extern "C" size_t kg_workspace_bytes_{name}({sizes}) {{')
    if recipe.workspaces:
        out += prologue("0", "0")
        out += _workspace_layout(recipe)
        out.append("  return kg_ws_end;")
    else:
        out += [f"  (void){s};" for s in recipe.sizes] + ["  return 0;"]
    out.append("}")
    # -- the launcher
    out.append(f'extern "C" cudaError_t kg_launch_{name}({bufs}, {sizes}, void* workspace, size_t workspace_bytes, '
               'cudaStream_t stream) {')
    for b in recipe.buffers:
        out.append(f"  if ({b.name} == nullptr) return cudaErrorInvalidValue;")
    out += prologue("cudaErrorInvalidValue", "cudaErrorInvalidDevice")
    for b, n, when in recipe.alignment:
        cond = f"kg_misaligned({b}, {n})"
        out.append(f"  if ({'(' + when + ') && ' if when else ''}{cond}) return cudaErrorInvalidValue;")
    if recipe.workspaces:
        out += _workspace_layout(recipe)
        out.append("  if (kg_ws_end > 0 && (workspace == nullptr || workspace_bytes < kg_ws_end || "
                   f"kg_misaligned(workspace, {WORKSPACE_ALIGN}))) return cudaErrorInvalidValue;")
        for n, t, c, fill in recipe.workspaces:
            out.append(f"  {t}* {n} = reinterpret_cast<{t}*>(static_cast<char*>(workspace) + kg_ws_{n});")
            if fill is not None:
                out.append(f"  {{ cudaError_t e = cudaMemsetAsync({n}, 0, (size_t)({c}) * sizeof({t}), stream); "
                           "if (e != cudaSuccess) return e; }")
    else:
        out.append("  (void)workspace; (void)workspace_bytes;")
    if recipe.uses_sms and not recipe.checks_use_sms:   # only grids need it: asked once the input passed
        out += ask_sms("cudaErrorInvalidDevice")
    out += _encode(recipe)
    seen = set()
    for s in recipe.steps:
        # Every launch with dynamic shared memory opts in, as kernelgen.gpu does: the 48 KB default bounds
        # static plus dynamic bytes, and a kernel's static words are not known here.
        if s.shared_bytes > 0 and s.symbol not in seen:
            seen.add(s.symbol)
            out.append(f"  {{ cudaError_t e = cudaFuncSetAttribute({s.symbol}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                       f"{s.shared_bytes}); if (e != cudaSuccess) return e; }}")
    for group in _groups(recipe.steps):
        loop = group[0].loop
        ind = "  "
        if loop is not None:
            out.append(f"  for (long long {loop[0]} = 0; {loop[0]} < ({loop[1]}); {loop[0]} += ({loop[2]})) {{")
            ind = "    "
        for s in group:
            grid = ", ".join(f"(unsigned)({g})" for g in s.grid)
            call = (f"{s.symbol}<<<dim3({grid}), dim3({', '.join(map(str, s.block))}), {s.shared_bytes}, stream>>>"
                    f"({', '.join(s.args)});")
            check = "cudaError_t e = cudaGetLastError(); if (e != cudaSuccess) return e;"
            out.append(f"{ind}{'if (' + s.when + ') ' if s.when else ''}{{")
            out += [f"{ind}  {call}", f"{ind}  {{ {check} }}", f"{ind}}}"]
        if loop is not None:
            out.append("  }")
    out += ["  return cudaSuccess;", "}", "#endif  // KERNELGEN_HOST_LAUNCHER"]
    return "\n".join(out) + "\n"


def _workspace_layout(recipe: Recipe) -> list[str]:
    lines, prev = [], "0"
    for n, t, c, _ in recipe.workspaces:
        lines.append(f"  const size_t kg_ws_{n} = ({prev} + {WORKSPACE_ALIGN - 1}) / {WORKSPACE_ALIGN} * {WORKSPACE_ALIGN};")
        prev = f"kg_ws_{n} + (size_t)({c}) * sizeof({t})"
    lines.append(f"  const size_t kg_ws_end = {prev};")
    return lines


def declarations(recipe: Recipe, name: str, version: str, includes: tuple[str, ...] = ()) -> str:
    """The `.h` beside `<name>.cu`: the launcher's declarations."""
    sizes = ", ".join(f"int {s}" for s in recipe.sizes)
    bufs = ", ".join(f"{'const ' if b.const else ''}{b.ctype}* {b.name}" for b in recipe.buffers)
    lines = [f"// Generated by kernelgen {version}: the host launcher of {name}.cu; build that file with",
             "// nvcc -DKERNELGEN_HOST_LAUNCHER. Its header comment states the launch recipe.",
             "#pragma once", "#include <cstddef>", "#include <cuda_runtime.h>"]
    lines += [f"#include <{h}>" for h in includes]
    lines += ['extern "C" {', f"size_t kg_workspace_bytes_{name}({sizes});",
              f"cudaError_t kg_launch_{name}({bufs}, {sizes}, void* workspace, size_t workspace_bytes, "
              "cudaStream_t stream);", "}"]
    return "\n".join(lines) + "\n"


def header_and_launcher(recipe: Recipe, name: str) -> tuple[str, str]:
    head = "".join(f"// {ln}\n" if ln else "//\n" for ln in describe(recipe, name))
    return head, launcher_source(recipe, name)
