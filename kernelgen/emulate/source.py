"""Kernel source -> the C++ the emulator compiles: shared-memory slots, entry points, unsupported constructs.

>>> from kernelgen.emulate.source import prepare
>>> cpp = prepare('extern "C" __global__ void k(float* x) {\\n  __shared__ float s[32];\\n  x[0] = s[0];\\n}\\n', ["k"])
>>> "kg_shared_slot" in cpp and cpp.count("\\n") == 5 and cpp.rstrip().endswith("KG_KERNEL_ENTRY(k)")
True

Every rewrite keeps the line count, so g++'s line numbers are the .cu file's. A `__shared__` array
becomes a reference to a slot of the block's shared memory, one per declaration (and per template
instantiation), that all fibers of a block share; `extern __shared__` becomes a pointer to the
dynamic part. Constructs the emulator cannot run are rejected by name (`unsupported`), never
miscompiled.
"""
from __future__ import annotations

import re

from ..errors import CompileError

# CUDA headers whose content the shim provides, and headers for features the emulator lacks.
HARMLESS_HEADERS = {"cuda_runtime.h", "cuda.h", "cuda_runtime_api.h", "device_launch_parameters.h",
                    "device_functions.h", "cuda_device_runtime_api.h", "vector_types.h", "math_constants.h",
                    "sm_20_intrinsics.h", "sm_30_intrinsics.h", "sm_32_intrinsics.h", "sm_60_atomic_functions.h",
                    "cuda_fp16.h", "cuda_bf16.h", "mma.h"}
UNSUPPORTED_HEADERS = {"cuda_fp8.h": "FP8 types (cuda_fp8.h)",
                       "cooperative_groups.h": "cooperative groups (cooperative_groups.h)",
                       "cuda_pipeline.h": "pipeline primitives (cuda_pipeline.h)",
                       "cuda_awbarrier.h": "arrive-wait barriers (cuda_awbarrier.h)"}

# Instructions the emulator cannot run, named before the generic message when an asm string holds
# them: they need hardware state (warpgroups, the TMA unit, transaction barriers) that no fiber has.
ASM_PROVEN_ON_GPU = "; it is proven on the GPU"
UNSUPPORTED_ASM = [
    (r"\bwgmma\b", "wgmma (sm_90a warpgroup MMA)"),
    (r"\bcp\.async\.bulk\b", "cp.async.bulk (the Tensor Memory Accelerator, TMA)"),
    (r"\bcp\.reduce\.async\.bulk\b", "cp.reduce.async.bulk (the Tensor Memory Accelerator, TMA)"),
    (r"\bmbarrier\b", "mbarrier (transaction barriers)"),
    (r"\bsetmaxnreg\b", "setmaxnreg (warpgroup register reallocation)"),
    (r"\btcgen05\b", "tcgen05 (sm_100 tensor memory)"),
]

# (pattern, what) checked on the preprocessed lines that come from the kernel's own file.
UNSUPPORTED = [
    (r"\b(?:asm|__asm__|__asm)\b", "inline assembly (`asm`); guard it with #ifndef KERNELGEN_EMULATE"),
    (r"\b__nv_fp[864]\w*", "FP8/FP6/FP4 types"),
    (r"\bcooperative_groups\b", "cooperative groups"),
    (r"\bcuda\s*::", "libcu++ (`cuda::`)"),
    (r"\b__pipeline_\w+", "pipeline primitives (`__pipeline_*`)"),
    (r"\b__cvta_generic_to_shared\b", "`__cvta_generic_to_shared`; guard it with #ifndef KERNELGEN_EMULATE"),
    (r"\b(?:tex[123]D\w*|tex1Dfetch|surf[123]D\w*|cudaTextureObject_t)\b", "textures and surfaces"),
    (r"\b__shfl(?:_up|_down|_xor)?\s*\(", "warp shuffles without _sync (removed in CUDA 9)"),
    (r"\b__(?:any|all|ballot)\s*\(", "warp votes without _sync (removed in CUDA 9)"),
    (r"<<<", "device-side kernel launches"),
]

_SHARED = re.compile(r"(?P<pre>(?:\b(?:extern|static|volatile|const)\b\s*|\b(?:alignas|__align__)\s*\([^()]*\)\s*)*)"
                     r"\b__shared__\b(?P<body>[^;{}]*);")
_ALIGN = re.compile(r"\b(?:alignas|__align__)\s*\(([^()]*)\)")
_DECL = re.compile(r"^(?P<type>.*?\S)\s*\b(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\[\]]*\]\s*)*)$", re.S)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](?P<h>[^>"]+)[>"].*$', re.M)


def unsupported_error(symbol: str, source: str, line: int, what: str, snippet: str) -> CompileError:
    log = f"{symbol}.cu({line}): error: the CPU emulator does not support {what}: `{snippet.strip()[:80]}`"
    return CompileError(symbol, log, source)


def blank(src: str, strings: bool) -> str:
    """`src` with comments (and string/char literal contents if `strings`) replaced by spaces, same length."""
    out = list(src)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            if strings:     # keep the quotes, blank what is between them
                for k in range(i + 1, min(j, n)):
                    out[k] = " "
            i = j + 1
            continue
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def rewrite_includes(text: str, symbol: str, source: str) -> str:
    def sub(m: re.Match) -> str:
        h = m.group("h")
        base = h.rsplit("/", 1)[-1]
        if h.startswith("cuda/") or h.startswith("cub/") or h.startswith("thrust/"):
            raise unsupported_error(symbol, source, _line(text, m.start()), f"the CUDA library header <{h}>", m.group(0))
        if base in UNSUPPORTED_HEADERS:
            raise unsupported_error(symbol, source, _line(text, m.start()), UNSUPPORTED_HEADERS[base], m.group(0))
        return "" if base in HARMLESS_HEADERS else m.group(0)
    return _INCLUDE.sub(sub, text)


def rewrite_shared(text: str, symbol: str, source: str) -> str:
    """Every `__shared__` declaration in `text` (comments already blanked) as a slot of the block's shared memory."""
    code = blank(text, strings=True)
    depth = [0] * (len(code) + 1)
    d = 0
    for i, c in enumerate(code):
        depth[i] = d
        d += (c == "{") - (c == "}")
    out, last = [], 0
    for k, m in enumerate(_SHARED.finditer(code)):
        pre, body = m.group("pre"), m.group("body")
        line = _line(code, m.start())
        aligns = _ALIGN.findall(pre) + _ALIGN.findall(body)
        body = _ALIGN.sub(" ", body)
        quals = re.findall(r"\b(volatile|const)\b", pre)
        extern = re.search(r"\bextern\b", pre) is not None
        body = re.sub(r"\bstatic\b", " ", body).strip()
        decl = _DECL.match(body)
        flat = re.sub(r"\[[^\[\]]*\]", "", re.sub(r"<[^<>]*>", "", body))
        if not decl or "," in flat or "=" in flat or "(" in flat:
            raise unsupported_error(symbol, source, line, "this __shared__ declaration (declare one variable per "
                                    "statement, without an initialiser)", m.group(0))
        ctype = " ".join(quals + [decl.group("type")])
        name, dims = decl.group("name"), decl.group("dims").strip()
        file_scope = depth[m.start()] == 0
        t, al = f"kg_t{k}_{name}", f"kg_al{k}_{name}"
        align = "16"
        parts = []
        if aligns:
            parts.append(f"struct alignas({aligns[-1]}) {al} {{}};")
            align = f"alignof({al})"
        if extern:
            rest = dims[dims.index("]") + 1:] if dims.startswith("[") else dims
            parts.append(f"using {t} = {ctype}{rest};")
            parts.append(f"{'static ' if file_scope else ''}{t}* const {name} = static_cast<{t}*>(kg_dynamic_shared());")
        else:
            parts.append(f"using {t} = {ctype}{dims};")
            key = "nullptr" if file_scope else f"&kg_key{k}_{name}"
            if not file_scope:
                parts.insert(0, f"static char kg_key{k}_{name};")
            parts.append(f"{'static ' if file_scope else ''}{t}& {name} = *static_cast<{t}*>(kg_shared_slot({key}, "
                         f"sizeof({t}), alignof({t}) > {align} ? alignof({t}) : {align}, "
                         f"sizeof(std::remove_all_extents_t<{t}>), \"{name}\"));")
        out.append(text[last:m.start()])
        out.append(" ".join(parts) + "\n" * m.group(0).count("\n"))
        last = m.end()
    out.append(text[last:])
    result = "".join(out)
    left = re.search(r"\b__shared__\b", blank(result, strings=True))
    if left:    # e.g. a struct or union defined inside the declaration
        raise unsupported_error(symbol, source, _line(result, left.start()), "this __shared__ declaration "
                                "(declare one variable of a named type per statement)",
                                result[left.start():result.find("\n", left.start())])
    return result


def prepare(source: str, symbols, symbol: str | None = None) -> str:
    """The C++ translation unit for `source`, exporting kg_entry_<sym> for each kernel symbol in `symbols`."""
    symbol = symbol or (list(symbols)[0] if symbols else "kernel")
    text = blank(source, strings=False)
    text = rewrite_includes(text, symbol, source)
    text = rewrite_shared(text, symbol, source)
    return text.rstrip("\n") + "\n" + "".join(f"KG_KERNEL_ENTRY({s})\n" for s in symbols)


def _scan_asm(raw: str, symbol: str, source: str, line: int) -> None:
    """Name a known GPU-only instruction in an asm statement's strings (a line holding asm, or a
    continuation string of one): a clearer message than the generic one about `asm`."""
    strings = re.findall(r'"((?:\\.|[^"\\])*)"', raw)
    if not strings:
        return
    text = " ".join(strings)
    for pat, what in UNSUPPORTED_ASM:
        if re.search(pat, text):
            raise unsupported_error(symbol, source, line, what + ASM_PROVEN_ON_GPU, raw)


def scan_unsupported(preprocessed: str, filename: str, symbol: str, source: str) -> None:
    """Raise CompileError for the first unsupported construct on a line of `filename` in g++ -E output."""
    patterns = [(re.compile(p), what) for p, what in UNSUPPORTED]
    own = list(_own_lines(preprocessed, filename))
    for line, raw in own:   # a GPU-only instruction anywhere is named first: it is the real reason
        _scan_asm(raw, symbol, source, line)
    for line, raw in own:
        code = re.sub(r'"(?:\\.|[^"\\])*"', '""', raw)
        code = re.sub(r"'(?:\\.|[^'\\])*'", "''", code)
        for pat, what in patterns:
            if pat.search(code):
                raise unsupported_error(symbol, source, line, what, raw)


def _own_lines(preprocessed: str, filename: str):
    """(line number, text) of the g++ -E output lines that come from `filename` itself."""
    current, line = None, 0
    for raw in preprocessed.splitlines():
        marker = re.match(r'^#\s*(\d+)\s+"([^"]*)"', raw)
        if marker:
            line, current = int(marker.group(1)), marker.group(2)
            continue
        if current is not None and current.endswith(filename):
            yield line, raw
        line += 1
