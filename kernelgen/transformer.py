"""A GPT-2-style decoder block (pre-LN, causal multi-head attention, an MLP with GELU, residuals) built
from kernelgen ops through kernelgen.torch, beside the same block written with PyTorch's own ops, a check
of one against the other, and the timing `kernelgen bench transformer` prints. Forward only.

    import torch
    from kernelgen import transformer as tf
    cfg = tf.config("gpt2-small")                       # d 768, 12 heads, seq 1024, batch 8
    p = tf.init_params(cfg, torch.float32, "cuda")
    x = torch.randn(cfg.batch, cfg.seq, cfg.d_model, device="cuda")
    y = tf.kernelgen_block(x, p, cfg.heads)              # 7 kernelgen launches
    ref = tf.torch_block(x, p, cfg.heads)                # the same block in torch ops

The kernelgen block is LN1 -> QKV linear (one GEMM, bias fused) -> causal attention -> output projection
with the residual fused (epilogue `acc + bias + res`) -> LN2 -> MLP up with `gelu(acc + bias)` fused ->
MLP down with the residual fused. Splitting QKV into heads and merging the heads back are views, no
copies: attention reads q, k and v where the QKV projection wrote them (its `packed` layout, through
strides) and writes O as (batch, seq, heads, head_dim), which the output projection reads as (batch *
seq, d_model). The torch block splits alike and copies on the merge. GELU is the tanh form (GPT-2's) in both.

`bench(..., breakdown=True)` (`kernelgen bench transformer --breakdown`) also times each stage of both
blocks (CUDA events between the stages, eager): where the time goes. `--dtype float32` takes kernelgen.torch.linear's
float32 default for each GEMM: the fp64 tensor cores (dmma: each value widened to fp64, exact products summed in fp64,
at least FFMA's accuracy) where the cost models find them faster on this GPU, else the CUDA cores (sgemm); the note
under the table says which. `--dtype dmma` puts all four there. dtype tf32x3 (`--dtype tf32x3`) is the float32 block
with its four GEMMs on the TF32 tensor cores (each value split into a high and a low TF32 part, about fp32's
accuracy): what CUTLASS calls 3xTF32, opt-in. Each is checked and timed against the same float32 torch block (TF32
off). In all, attention
multiplies as torch's own SDPA does in float32 (kernelgen.torch.attention's default): 3xTF32 on GPUs with TF32 tensor
cores (torch's fp32 kernel there is CUTLASS's memory-efficient attention, 3xTF32), CUDA cores elsewhere.
"""
from __future__ import annotations

import functools
import math
import statistics
from dataclasses import asdict, dataclass

from .errors import UsageError


@dataclass(frozen=True)
class Config:
    name: str
    d_model: int
    heads: int
    seq: int
    batch: int

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    def flops(self) -> int:
        """Multiply-adds x 2 of the block's GEMMs (12 d^2 per token) and attention (causal: about half of 4 s^2 d)."""
        tokens = self.batch * self.seq
        return 2 * tokens * 12 * self.d_model ** 2 + 2 * self.batch * self.seq * (self.seq + 1) * self.d_model


CONFIGS = {c.name: c for c in (
    Config("gpt2-small", 768, 12, 1024, 8),
    Config("7b", 4096, 32, 2048, 1),            # a 7B-class layer (LLaMA-7B's width and heads), GELU MLP 4d
    Config("tiny", 64, 2, 37, 2),               # the tests' size: nothing a multiple of a tile
)}
KEYS = ("d_model", "heads", "seq", "batch")
# Relative error of the block's contribution (||y - ref|| / ||ref - x||, ref in float64) a dtype may have: the
# 16-bit types round every intermediate (on the emulator the bf16 block, d_model 64 and 128, was off by 4.9e-3 and
# 5.0e-3, torch's own bf16 block on the CPU by 5.5e-3 and 5.7e-3: 6x margin); fp32 sums up to 4d products a GEMM.
# tf32x3: the float32 block with its GEMMs on tensor cores, each value split into TF32 parts and a K stage's products
# summed apart (gemm's tf32x3: below sgemm's error at the 7B layer's GEMMs); the other ops in float32.
# dmma: the float32 block with its GEMMs on the fp64 tensor cores (exact products, fp64 sums), as the float32 block's
# default takes them where they pay.
TOLERANCE = {"float32": 1e-4, "tf32x3": 1e-4, "dmma": 1e-4, "float16": 6e-3, "bfloat16": 3e-2}


def data_type(dtype: str) -> str:
    """The torch type of the block's tensors: float32 for tf32x3 and dmma (only its GEMMs multiply otherwise)."""
    from .dtypes import dtype as kg_dtype
    return kg_dtype(dtype).data


def gemm_type(dtype: str) -> str | None:
    """kernelgen.torch.linear's dtype in a block of `dtype`: tf32x3 or dmma, or None (linear's default for the
    tensors' type: for float32, dmma or sgemm by the cost models, fp32_gemms)."""
    return dtype if dtype in ("tf32x3", "dmma") else None


def gemm_shapes(cfg: Config) -> dict:
    """The block's four products (M, N, K), x . W^T each."""
    t, d = cfg.batch * cfg.seq, cfg.d_model
    return {"QKV": (t, 3 * d, d), "out-proj": (t, d, d), "MLP up": (t, 4 * d, d), "MLP down": (t, d, 4 * d)}


def fp32_gemms(cfg: Config) -> dict:
    """The kernel kernelgen.torch.linear's float32 default takes for each of the block's GEMMs on this GPU: dmma (the
    fp64 tensor cores) or float32 (sgemm, CUDA cores)."""
    from . import torch as kgt
    return {name: kgt.fp32_gemm_dtype(*mnk) for name, mnk in gemm_shapes(cfg).items()}


def config(text: str) -> Config:
    """A named config (CONFIGS) or `d_model=768,heads=12,seq=1024,batch=8` (every key, d_model % heads == 0)."""
    if text in CONFIGS:
        return CONFIGS[text]
    if "=" not in text:
        raise UsageError(f"transformer config {text!r} is unknown; choose one of {', '.join(CONFIGS)} or give "
                         "d_model=D,heads=H,seq=S,batch=B")
    values = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        k = k.strip()
        if k not in KEYS or k in values or not v.strip().isdigit() or int(v) < 1:
            raise UsageError(f"transformer config {text!r}: {part.strip()!r} must be one of {', '.join(KEYS)}=N "
                             "(a positive whole number), each once")
        values[k] = int(v)
    missing = [k for k in KEYS if k not in values]
    if missing:
        raise UsageError(f"transformer config {text!r} leaves out {', '.join(missing)}; give all of {', '.join(KEYS)}")
    if values["d_model"] % values["heads"]:
        raise UsageError(f"transformer config {text!r}: d_model={values['d_model']} is not a multiple of "
                         f"heads={values['heads']}")
    return Config(text, **values)


def _torch():
    try:
        import torch
        return torch
    except ImportError:
        raise UsageError("the transformer block needs PyTorch: pip install 'kernelgen[torch]'") from None


def require_cuda():
    """torch, and a CUDA GPU through it: a one-line UsageError otherwise."""
    torch = _torch()
    from . import gpu
    if not torch.cuda.is_available() or not gpu.available():
        raise UsageError("no CUDA GPU is available here (torch.cuda.is_available() is False): the transformer "
                         "block runs on one")
    return torch


def attention_dtypes() -> tuple[str, ...]:
    """The types kernelgen's attention op takes now (the block's other ops take float32, float16, bfloat16)."""
    from .ops import get_op
    return tuple(get_op("attention").dtypes)


def check_dtype(dtype: str) -> None:
    """A UsageError unless every op of the block takes `dtype`."""
    if dtype not in TOLERANCE:
        raise UsageError(f"transformer: dtype {dtype!r} is not one of {', '.join(TOLERANCE)} (tf32x3 and dmma: the "
                         "float32 block with its GEMMs on tensor cores, in 3xTF32 or on the fp64 ones)")
    if data_type(dtype) not in attention_dtypes():
        raise UsageError(f"transformer: kernelgen's attention op takes {', '.join(attention_dtypes())} only, not "
                         f"{dtype}; the {dtype} block runs once attention has a {dtype} kernel")


# -- the block ---------------------------------------------------------------------------------------
def init_params(cfg: Config, dtype, device, seed: int = 0) -> dict:
    """Weights in nn.Linear's layout (out, in), std 1/sqrt(in) so every activation is O(1) and each part
    of the block moves the output; biases, gains and shifts random too, so none hides an error."""
    torch = _torch()
    g = torch.Generator(device="cpu").manual_seed(seed)
    p = {}
    for name, shape in param_shapes(cfg).items():
        scale, offset = (0.1, 1.0) if name.endswith("_g") else (0.1, 0.0) if name.startswith(("b_", "ln")) else \
            (1 / math.sqrt(shape[-1]), 0.0)
        p[name] = (torch.randn(*shape, generator=g) * scale + offset).to(device=device, dtype=dtype)
    return p


def param_shapes(cfg: Config) -> dict:
    """The block's weights (nn.Linear's (out, in)), biases, and the layer norms' gains (_g) and shifts (_b)."""
    d = cfg.d_model
    shapes = {}
    for name, (n_out, n_in) in (("qkv", (3 * d, d)), ("o", (d, d)), ("up", (4 * d, d)), ("down", (d, 4 * d))):
        shapes[f"w_{name}"], shapes[f"b_{name}"] = (n_out, n_in), (n_out,)
    for ln in ("ln1", "ln2"):
        shapes[f"{ln}_g"], shapes[f"{ln}_b"] = (d,), (d,)
    return shapes


def split_heads(qkv, heads: int):
    """(B, S, 3D) -> q, k, v, each (B, H, S, D/H): views of the projection (kernelgen's attention reads them
    in place, its packed layout)."""
    b, s, three_d = qkv.shape
    return qkv.view(b, s, 3, heads, three_d // (3 * heads)).permute(2, 0, 3, 1, 4).unbind(0)


# The stages `breakdown` times, in order; each block marks those it has (the kernelgen block fuses GELU and
# the residual adds into its GEMMs and merges the heads by a view).
STAGES = ("layer norm 1", "QKV GEMM", "attention", "merge heads", "out-proj", "residual add 1", "layer norm 2",
          "MLP up", "GELU", "MLP down", "residual add 2")
FUSED = {"merge heads": "a view", "residual add 1": "in out-proj", "GELU": "in MLP up", "residual add 2": "in MLP down"}


def _no_mark(stage: str) -> None:
    """The blocks' default `mark`: nothing (breakdown passes one recording a CUDA event)."""


def kernelgen_block(x, p: dict, heads: int, mark=_no_mark, gemm: str | None = None):
    """The block on kernelgen ops: 2 layer norms, 4 GEMMs with fused epilogues, 1 attention. `mark(stage)`
    is called after each stage (STAGES); `gemm` is the GEMMs' dtype (kernelgen.torch.linear's)."""
    from . import torch as kgt
    b, s, d = x.shape
    a = kgt.layer_norm(x, p["ln1_g"], p["ln1_b"])
    mark("layer norm 1")
    qkv = kgt.linear(a, p["w_qkv"], p["b_qkv"], dtype=gemm)
    mark("QKV GEMM")
    q, k, v = split_heads(qkv, heads)                                         # views of qkv
    o = kgt.attention(q, k, v, causal=True).transpose(1, 2).reshape(b, s, d)  # O stored (b, s, h, hd): a view
    mark("attention")
    h = kgt.linear(o, p["w_o"], p["b_o"], residual=x, dtype=gemm)             # x + o W_o^T + b_o
    mark("out-proj")
    a = kgt.layer_norm(h, p["ln2_g"], p["ln2_b"])
    mark("layer norm 2")
    u = kgt.linear(a, p["w_up"], p["b_up"], epilogue="gelu(acc + bias)", dtype=gemm)
    mark("MLP up")
    y = kgt.linear(u, p["w_down"], p["b_down"], residual=h, dtype=gemm)       # h + u W_down^T + b_down
    mark("MLP down")
    return y


def ours(dtype: str):
    """kernelgen_block as a block of `dtype` runs it (tf32x3, dmma: its GEMMs so)."""
    gemm = gemm_type(dtype)
    return functools.partial(kernelgen_block, gemm=gemm) if gemm else kernelgen_block


def torch_block(x, p: dict, heads: int, mark=_no_mark):
    """The same block in PyTorch's ops (SDPA for attention, the tanh GELU); `mark` as kernelgen_block's."""
    F = _torch().nn.functional
    b, s, d = x.shape
    a = F.layer_norm(x, (d,), p["ln1_g"], p["ln1_b"], 1e-5)
    mark("layer norm 1")
    qkv = F.linear(a, p["w_qkv"], p["b_qkv"])
    mark("QKV GEMM")
    q, k, v = split_heads(qkv, heads)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    mark("attention")
    o = o.transpose(1, 2).reshape(b, s, d)
    mark("merge heads")
    t = F.linear(o, p["w_o"], p["b_o"])
    mark("out-proj")
    h = x + t
    mark("residual add 1")
    a = F.layer_norm(h, (d,), p["ln2_g"], p["ln2_b"], 1e-5)
    mark("layer norm 2")
    u = F.linear(a, p["w_up"], p["b_up"])
    mark("MLP up")
    u = F.gelu(u, approximate="tanh")
    mark("GELU")
    t = F.linear(u, p["w_down"], p["b_down"])
    mark("MLP down")
    y = h + t
    mark("residual add 2")
    return y


def block_error(y, ref, x) -> float:
    """||y - ref|| / ||ref - x|| in float64: relative to what the block adds to its input (the residual
    stream alone would hide a wrong attention or MLP)."""
    y, ref, x = (t.double() for t in (y, ref, x))
    return float((y - ref).norm() / (ref - x).norm())


def inputs(cfg: Config, dtype: str, device="cuda", seed: int = 0) -> tuple:
    """(x, params) of the block in `dtype`, drawn on the CPU from `seed` (the same on every device)."""
    torch = _torch()
    t = getattr(torch, data_type(dtype))
    x = torch.randn(cfg.batch, cfg.seq, cfg.d_model, generator=torch.Generator().manual_seed(seed + 1)).to(device, t)
    return x, init_params(cfg, t, device, seed)


def check(cfg: Config, dtype: str, device="cuda", seed: int = 0, given: tuple | None = None) -> dict:
    """Both blocks in `dtype` (on `given` (x, params), else inputs(...)) against the torch block in float64:
    {"kernelgen": err, "torch": err, "tolerance": tol, "ok": kernelgen err <= tol}."""
    torch = _torch()
    check_dtype(dtype)
    x, p = given or inputs(cfg, dtype, device, seed)
    with torch.no_grad():
        ref = torch_block(x.double(), {k: v.double() for k, v in p.items()}, cfg.heads)
        errs = {name: block_error(f(x, p, cfg.heads), ref, x) for name, f in
                (("kernelgen", ours(dtype)), ("torch", torch_block))}
    return dict(errs, tolerance=TOLERANCE[dtype], ok=errs["kernelgen"] <= TOLERANCE[dtype])


def trace(cfg: Config, dtype: str = "float32"):
    """The kernelgen block traced with fake tensors (no GPU, no memory): (its FX graph, the output's shape,
    the kernelgen ops it launches in order). torch.compile sees the same graph."""
    torch = _torch()
    from torch.fx.experimental.proxy_tensor import make_fx
    check_dtype(dtype)
    t = getattr(torch, data_type(dtype))
    p = {name: torch.empty(shape, dtype=t, device="meta") for name, shape in param_shapes(cfg).items()}
    x = torch.empty(cfg.batch, cfg.seq, cfg.d_model, dtype=t, device="meta")
    gm = make_fx(lambda x, p: ours(dtype)(x, p, cfg.heads), tracing_mode="fake")(x, p)
    calls = [n for n in gm.graph.nodes if n.op == "call_function" and "kernelgen.run" in str(n.target)]
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    shape = tuple((out[0] if isinstance(out, (list, tuple)) else out).meta["val"].shape)
    return gm, shape, [c.args[0] for c in calls]


# -- timing --------------------------------------------------------------------------------------------
def _time(torch, fn, reps: int, warmup: int) -> list[float]:
    """Milliseconds of each of `reps` calls (CUDA events around each), after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def _graphed(torch, fn):
    """`fn` captured in a CUDA graph (after two calls on a side stream): a replaying callable."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def bench(cfg: Config, dtype: str, reps: int = 100, warmup: int = 10, breakdown: bool = False) -> dict:
    """The kernelgen block (eager, and replayed from a CUDA graph), PyTorch eager and torch.compile of the
    torch block, each timed over `reps` forward passes in this run; the check first. A results dict; with
    `breakdown`, its "breakdown" holds each stage's time in both blocks (stage_times)."""
    torch = require_cuda()
    check_dtype(dtype)
    torch.backends.cuda.matmul.allow_tf32 = False          # fp32 is fp32 on both sides (sgemm has no TF32)
    torch.backends.cudnn.allow_tf32 = False
    x, p = inputs(cfg, dtype)
    result = check(cfg, dtype, given=(x, p))
    compiled = torch.compile(torch_block)
    block = ours(dtype)
    runs = [("kernelgen", lambda: block(x, p, cfg.heads)), ("PyTorch eager", lambda: torch_block(x, p, cfg.heads)),
            ("torch.compile", lambda: compiled(x, p, cfg.heads))]
    rows, notes = [], []
    if gemm_type(dtype):
        notes.append(f"{dtype}: the float32 block with kernelgen's four GEMMs on tensor cores ({dtype}); every other "
                     "op, and PyTorch's blocks, in float32 (TF32 off)")
    elif dtype == "float32":
        took = fp32_gemms(cfg)
        notes.append("float32 GEMMs by kernelgen.torch.linear's default: " + ", ".join(f"{n} {d}" for n, d in took.items())
                     + " (dmma: the fp64 tensor cores, exact products summed in fp64; float32: sgemm, FFMA)")
    with torch.no_grad():
        for name, fn in runs:
            rows.append(_row(name, _time(torch, fn, reps, warmup), cfg))
        try:
            rows.insert(1, _row("kernelgen (CUDA graph)", _time(torch, _graphed(torch, runs[0][1]), reps, warmup), cfg))
        except Exception as e:          # capture is an extra row: its failure is reported, not fatal
            notes.append(f"kernelgen (CUDA graph): not captured: {' '.join(str(e).split())[:200]}")
    by = {r["block"]: r["median_ms"] for r in rows}
    for r in rows:
        r["vs_eager"] = by["PyTorch eager"] / r["median_ms"]
        r["vs_compile"] = by["torch.compile"] / r["median_ms"]
    doc = {"schema": "kernelgen-transformer/1", "config": asdict(cfg), "dtype": dtype, "reps": reps,
           "warmup": warmup, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "check": result, "rows": rows, "notes": notes}
    if breakdown:
        doc["breakdown"] = stage_times(cfg, (x, p), reps, warmup, dtype)
    return doc


def stage_times(cfg: Config, given: tuple, reps: int = 100, warmup: int = 10, dtype: str = "float32") -> list[dict]:
    """Each stage's median milliseconds in both blocks, eager: a CUDA event recorded after every stage (and
    one before the first), `reps` passes after `warmup`. A stage's time is from the event before it to its
    own, so it includes any wait for the host to launch it (small beside these kernels). One row per stage
    of STAGES: {"stage", "kernelgen_ms" (None where fused: "kernelgen" says where), "torch_ms"}."""
    torch = _torch()
    x, p = given
    medians = {}
    with torch.no_grad():
        for name, block in (("kernelgen", ours(dtype)), ("torch", torch_block)):
            passes = []
            for i in range(warmup + reps):
                marks = [("start", torch.cuda.Event(enable_timing=True))]
                marks[0][1].record()

                def mark(stage, marks=marks):
                    marks.append((stage, torch.cuda.Event(enable_timing=True)))
                    marks[-1][1].record()
                block(x, p, cfg.heads, mark)
                if i >= warmup:
                    passes.append(marks)
            torch.cuda.synchronize()
            times: dict[str, list[float]] = {}
            for marks in passes:
                for (_, before), (stage, after) in zip(marks, marks[1:]):
                    times.setdefault(stage, []).append(before.elapsed_time(after))
            medians[name] = {stage: statistics.median(t) for stage, t in times.items()}
    return [{"stage": st, "kernelgen_ms": medians["kernelgen"].get(st), "torch_ms": medians["torch"].get(st),
             "kernelgen": FUSED.get(st, "")} for st in STAGES]


def _row(name: str, times: list[float], cfg: Config) -> dict:
    med = statistics.median(times)
    return {"block": name, "median_ms": med, "min_ms": min(times), "TFLOP/s": cfg.flops() / med / 1e9}


COLUMNS = ("block", "median_ms", "min_ms", "TFLOP/s", "vs_eager", "vs_compile")


def format_bench(doc: dict, markdown: bool = False) -> str:
    """The table `kernelgen bench transformer` prints: a head line, the check, then one row per block."""
    from .bench import table
    c, chk = doc["config"], doc["check"]
    head = (f"transformer block {c['name']} (d_model {c['d_model']}, {c['heads']} heads, seq {c['seq']}, batch "
            f"{c['batch']}) {doc['dtype']} on {doc['device']}, torch {doc['torch']}; median of {doc['reps']} forward "
            f"passes after {doc['warmup']} (CUDA events); vs_eager / vs_compile = their time / this time")
    verdict = "ok" if chk["ok"] else "WRONG"
    check_line = (f"check against the float64 torch block, ||y - ref|| / ||ref - x||: kernelgen {chk['kernelgen']:.2e}, "
                  f"torch {chk['torch']:.2e}, tolerance {chk['tolerance']:.0e}: {verdict}")
    rows = [{"block": r["block"], "median_ms": f"{r['median_ms']:.3f}", "min_ms": f"{r['min_ms']:.3f}",
             "TFLOP/s": f"{r['TFLOP/s']:.1f}", "vs_eager": f"{r['vs_eager']:.2f}x",
             "vs_compile": f"{r['vs_compile']:.2f}x"} for r in doc["rows"]]
    if markdown:
        lines = [head, "", check_line, "", *_markdown(rows, COLUMNS)]
    else:
        lines = [head, check_line, table(rows, list(COLUMNS))]
    if doc.get("breakdown"):
        parts = _breakdown_rows(doc["breakdown"])
        title = ("per stage, eager (median ms of CUDA events between stages; the sum of a column is about its "
                 "eager time):")
        lines += ["", title, "", *_markdown(parts, STAGE_COLUMNS)] if markdown else ["", title,
                                                                                    table(parts, list(STAGE_COLUMNS))]
    return "\n".join(lines + [f"note: {n}" for n in doc["notes"]])


STAGE_COLUMNS = ("stage", "kernelgen_ms", "torch_ms", "kernelgen/torch")


def _markdown(rows: list[dict], columns) -> list[str]:
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + \
        ["| " + " | ".join(r[k] for k in columns) + " |" for r in rows]


def _breakdown_rows(stages: list[dict]) -> list[dict]:
    """The breakdown as table rows, with a total row: a fused stage shows where it went."""
    out = []
    for r in stages:
        kg, th = r["kernelgen_ms"], r["torch_ms"]
        out.append({"stage": r["stage"], "kernelgen_ms": f"{kg:.3f}" if kg is not None else f"- ({r['kernelgen']})",
                    "torch_ms": f"{th:.3f}" if th is not None else "-",
                    "kernelgen/torch": f"{kg / th:.2f}x" if kg is not None and th else ""})
    kg = sum(r["kernelgen_ms"] or 0.0 for r in stages)
    th = sum(r["torch_ms"] or 0.0 for r in stages)
    out.append({"stage": "total", "kernelgen_ms": f"{kg:.3f}", "torch_ms": f"{th:.3f}",
                "kernelgen/torch": f"{kg / th:.2f}x" if th else ""})
    return out
