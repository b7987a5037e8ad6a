"""kernelgen ops as PyTorch custom ops (`torch.library.custom_op`), forward only: eager mode,
`torch.compile` (a fake implementation gives the output shapes and types) and CUDA graphs (each launch
goes on torch's current stream, allocates nothing but its outputs, and never synchronises).

    import torch, kernelgen.torch as kgt
    x, w, b = (torch.randn(s, device="cuda") for s in ((512, 768), (768, 3072), (3072,)))
    y = kgt.run("sgemm", "M=512,N=3072,K=768;epilogue=gelu(acc + bias)", [x, w, b])[0]   # gelu(x @ w + b)
    y = kgt.linear(x16, w16_t, b16, epilogue="gelu(acc + bias)")   # x @ w_t.T + b, gemm layout NT
    y = kgt.linear(x, w_t, b)                # fp32: on the fp64 tensor cores (dmma) where faster, else CUDA cores
    y = kgt.linear(x, w_t, b, dtype="tf32x3")                # fp32 tensors on tensor cores, 3xTF32 (opt-in)
    y, h = kgt.layer_norm(x, gamma, beta, residual=r, return_sum=True)   # LN(x + r), and x + r
    o = kgt.attention(q, k, v, causal=True)                  # (batch, heads, seq, head_dim), views read in place

The model-level wrappers (`linear`, `layer_norm`, `softmax`, `attention`) take torch's layouts and
build the problem string from the shapes; examples/transformer.py builds a GPT-2 block from them.

Every op is one custom op, `kernelgen::run(op, problem, dtype, out_dtype, inputs) -> outputs`: the
problem is the problem string the CLI takes (`kernelgen run OP --size ...`), the inputs are the op's
inputs in order (op.inputs of the problem's instance: A, B, then bias and res for an epilogue) and the
outputs come back in op.outputs' order. An eager call on plain CUDA tensors runs the op's body directly (the
dispatcher's way cost more host time than the launch); traced, compiled or autograd calls go through the op. The
schedule is the one `kernelgen run` would take
(tune.defaults.choose_default: the tuning database's best record for that problem on this GPU, else the
nearest entry of the GPU's shipped tuned table, else the op's `schedule_for` heuristic); where it came from
is logged once per problem (logger "kernelgen", level INFO) and returned by `schedule_source`. No backward: these ops
are for inference (autograd raises). torch is an optional dependency: `pip install 'kernelgen[torch]'`.
"""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

try:
    import torch
except ImportError as e:             # torch stays optional
    raise ImportError("kernelgen.torch needs PyTorch: pip install 'kernelgen[torch]' (or torch itself)") from e

from .dtypes import dtype as kg_dtype
from .errors import KernelgenError
from .gpu import torch_stream_of
from .ops import get_op
from .sizes import parse_size

_log = logging.getLogger("kernelgen")
TORCH_TYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
KG_TYPES = {v: k for k, v in TORCH_TYPES.items()}


# linear's float32 default (an sgemm problem): sgemm or the gemm in dmma, decided by fp32_gemm_dtype for the call's
# sizes when it first runs (so also for sizes that were symbols while traced)
AUTO = "auto"


@functools.lru_cache(maxsize=4096)
def _problem(op_name: str, problem: str, dtype: str, out_dtype: str):
    if dtype == AUTO:
        op_name, dtype = _fp32_route(problem)
    op = get_op(op_name)
    p = parse_size(op, problem, False, dtype or None, out_dtype or None)
    return op.for_problem(p), p


@functools.lru_cache(maxsize=4096)
def _schedule(op_name: str, problem: str, dtype: str, out_dtype: str):
    """(schedule, source) for this problem on this GPU: tune.defaults.choose_default's, logged once."""
    from . import gpu
    from .tune.defaults import choose_default
    op, p = _problem(op_name, problem, dtype, out_dtype)
    sched, source = choose_default(op, p, gpu.device())
    _log.info("kernelgen %s %s: schedule from %s", op.name, p, source)
    return sched, source


def schedule_source(op_name: str, problem: str, dtype: str = "float32", out_dtype: str | None = None) -> str:
    """Where the schedule of `op_name` on `problem` comes from: "your tuning database (PATH)", "tuned table
    KEY (nearest: PROBLEM)" or "heuristic"."""
    return _schedule(op_name, problem, dtype, out_dtype or "")[1]


@functools.lru_cache(maxsize=4096)
def _signature(op_name: str, problem: str, dtype: str, out_dtype: str) -> tuple:
    """(input names, (shape, torch type) of each input, output names, (shape, torch type) of each output)."""
    op, p = _problem(op_name, problem, dtype, out_dtype)
    ins, outs = op.input_shapes(p), op.output_shapes(p)
    typed = lambda shapes, names: tuple((tuple(shapes[b]), TORCH_TYPES[p.dtype(b).data]) for b in names)
    return tuple(op.inputs), typed(ins, op.inputs), tuple(op.outputs), typed(outs, op.outputs)


def _outputs(op_name: str, problem: str, dtype: str, out_dtype: str, device) -> list:
    return [torch.empty(s, dtype=t, device=device) for s, t in _signature(op_name, problem, dtype, out_dtype)[3]]


def _check(op, p, inputs) -> None:
    shapes = op.input_shapes(p)
    if len(inputs) != len(op.inputs):
        raise ValueError(f"kernelgen {op.name} {p}: {len(inputs)} inputs given, it takes {len(op.inputs)}: "
                         f"{', '.join(op.inputs)}")
    for name, t in zip(op.inputs, inputs):
        want = TORCH_TYPES[p.dtype(name).data]
        if tuple(t.shape) != tuple(shapes[name]) or t.dtype != want:
            raise ValueError(f"kernelgen {op.name} {p}: input {name} is {tuple(t.shape)} {t.dtype}, it must be "
                             f"{tuple(shapes[name])} {want}")


@functools.lru_cache(maxsize=4096)
def _prepared(op_name: str, problem: str, dtype: str, out_dtype: str):
    """The call's Prepared on this GPU, found by its strings (hashing the schedule, problem and target again cost
    host time every call)."""
    from .prepared import prepare
    from . import gpu
    op, p = _problem(op_name, problem, dtype, out_dtype)
    return prepare(op, _schedule(op_name, problem, dtype, out_dtype)[0], p, gpu.device())


@dataclass(frozen=True)
class _Call:
    """What a call of (op, problem, types) needs on this GPU, found once: each input's and output's (shape, torch
    type), the kernels bound to the GPU, and for each array of the bound launch its place among inputs + outputs."""
    inputs: tuple
    outputs: tuple
    bound: object
    order: tuple

    def accepts(self, tensors: list) -> bool:
        """Whether `tensors` are exactly the inputs the launch reads: shapes, types, contiguous CUDA tensors."""
        return len(tensors) == len(self.inputs) and all(t.shape == s and t.dtype is d and t.is_cuda and t.is_contiguous()
                                                        for t, (s, d) in zip(tensors, self.inputs))


@functools.lru_cache(maxsize=4096)
def _call(op_name: str, problem: str, dtype: str, out_dtype: str) -> _Call:
    in_names, ins, out_names, outs = _signature(op_name, problem, dtype, out_dtype)
    prep = _prepared(op_name, problem, dtype, out_dtype)
    names = in_names + out_names
    return _Call(ins, outs, prep.bound, tuple(names.index(n) for n in prep.bound.arrays))


def _current_stream(device) -> int:
    """torch's current stream on `device`, as a raw handle (gpu.torch_stream_of)."""
    return torch_stream_of()(device.index)


@torch.library.custom_op("kernelgen::run", mutates_args=())
def _run(op_name: str, problem: str, dtype: str, out_dtype: str, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    return _launch(op_name, problem, dtype, out_dtype, inputs)


def _launch(op_name: str, problem: str, dtype: str, out_dtype: str, inputs: list) -> list:
    """The op's body: outputs allocated, the prepared kernel launched on torch's current stream. Inputs that are
    exactly what the kernels read go straight to the launch; any others take _launch_checked's way, which copies
    strided ones and names what is wrong with the rest."""
    call = _call(op_name, problem, dtype, out_dtype)
    if not call.accepts(inputs):
        return _launch_checked(op_name, problem, dtype, out_dtype, inputs)
    device = inputs[0].device
    arrays = list(inputs) + [torch.empty(s, dtype=d, device=device) for s, d in call.outputs]
    call.bound.enqueue([arrays[i].data_ptr() for i in call.order], _current_stream(device))
    return arrays[len(inputs):]


def _launch_checked(op_name: str, problem: str, dtype: str, out_dtype: str, inputs: list) -> list:
    """_launch with every input checked (its message where anything differs) and made contiguous: the way of the
    tensors _Call.accepts refused, so the cheap comparison is not made again."""
    _check(*_problem(op_name, problem, dtype, out_dtype), inputs)
    in_names, _, out_names, _ = _signature(op_name, problem, dtype, out_dtype)
    inputs = [t.contiguous() for t in inputs]
    outs = _outputs(op_name, problem, dtype, out_dtype, inputs[0].device)
    _prepared(op_name, problem, dtype, out_dtype)(stream=_current_stream(inputs[0].device),
                                                  **dict(zip(in_names, inputs)), **dict(zip(out_names, outs)))
    return outs


@_run.register_fake
def _run_fake(op_name, problem, dtype, out_dtype, inputs):
    op, p = _problem(op_name, problem, dtype, out_dtype)
    _check(op, p, inputs)
    return _outputs(op_name, problem, dtype, out_dtype, inputs[0].device)


def run(op_name: str, problem: str, inputs, dtype: str | None = None, out_dtype: str | None = None) -> list:
    """Op `op_name` on `problem` (a --size string) over torch tensors: its outputs, a list. `dtype`
    defaults to the first input's type ("auto" with sgemm: linear's float32 default, _fp32_route)."""
    if dtype is None:
        dtype = KG_TYPES.get(inputs[0].dtype, "float32")
    if dtype != AUTO or op_name != "sgemm":
        kg_dtype(dtype)
    if _plain(inputs):
        return _launch(op_name, problem, dtype, out_dtype or "", list(inputs))
    return torch.ops.kernelgen.run(op_name, problem, dtype, out_dtype or "", list(inputs))


def _plain(inputs) -> bool:
    """Whether a call may skip the dispatcher: plain CUDA tensors, eager (not under torch.compile, a functorch
    transform or fake tensors), none needing a gradient. The custom op's way to its body cost ~60-100 us of host time
    a call on the H100's host (its aliasing check included), where torch's own linear takes ~24 us in all
    (bench_results/2026-11-25-s17/s17_host_profile.txt); traced, compiled or with autograd it is the op's way."""
    return (not torch.compiler.is_compiling() and not torch._C._are_functorch_transforms_active()
            and all(type(t) is torch.Tensor and t.is_cuda for t in inputs)
            and not (torch.is_grad_enabled() and any(t.requires_grad for t in inputs)))


def linear(x, weight, bias=None, epilogue: str | None = None, out_dtype: str | None = None, residual=None,
           dtype: str | None = None):
    """x @ weight.T (+ bias), torch.nn.functional.linear's layout (NT), 16-bit on the tensor-core gemm, with an
    optional fused epilogue (default `acc + bias` where a bias is given, `acc + bias + res` where a residual is
    given too); `residual` is the epilogue's res, shaped like the output.

    float32 tensors, by `dtype`: "float32", FFMA on the CUDA cores (sgemm); "dmma", the fp64 tensor cores (gemm:
    each value widened to fp64, exact products summed in fp64, rounded once: at least as accurate as FFMA);
    "tf32x3" (or "tf32"), the TF32 tensor cores, each value split into TF32 parts (fp32's accuracy; tf32 alone: 10
    fraction bits). Default: where torch.set_float32_matmul_precision says "highest" (torch's default), dmma where
    the two ops' cost models find it faster on this GPU (kernelgen.ops.gemm_cost.fp32_on_dmma: H100, H200 and A100
    class GPUs, products with the tiles to fill them), else float32, decided when a size first runs (a traced graph
    holds the op as sgemm with dtype "auto": its sizes may be symbols there); where it
    says "high" or "medium" (torch's own F.linear may then round to TF32), tf32x3, the more accurate of what that
    allows."""
    if dtype is None and x.dtype == torch.float32:
        dtype = AUTO if _matmul_precision() == "highest" else "tf32x3"
    # eager calls find the call's problem by its shapes and options (building it took ~8 us a call); traced ones,
    # whose shapes may be symbols, build it
    plan = _linear_plan.__wrapped__ if torch.compiler.is_compiling() else _linear_plan
    name, problem, used = plan(tuple(x.shape), weight.shape[0], x.dtype, epilogue, bias is not None,
                               residual is not None, dtype)
    N, flat = weight.shape[0], x.dim() == 2
    rows = x if flat else x.reshape(-1, x.shape[-1])
    inputs = [rows, weight] + ([bias] if "bias" in used else []) + \
        ([residual if residual.dim() == 2 else residual.reshape(-1, N)] if "res" in used else [])
    out = run(name, problem, inputs, dtype=dtype, out_dtype=out_dtype)[0]
    return out if flat else out.reshape(*x.shape[:-1], N)


FP32_GEMM_TYPES = ("float32", "dmma", "tf32", "tf32x3")   # linear's dtype for float32 tensors


def fp32_gemm_dtype(M: int, N: int, K: int) -> str:
    """linear's dtype for an M x N x K product of float32 tensors at torch's "highest" matmul precision: dmma where the
    cost models find the fp64 tensor cores faster on the current GPU, else float32 (so also where no GPU is present)."""
    from . import gpu
    from .ops.gemm_cost import fp32_on_dmma
    try:
        target = gpu.device()
    except KernelgenError:
        return "float32"
    return "dmma" if fp32_on_dmma(M, N, K, "NT", target) else "float32"


def _fp32_route(problem: str) -> tuple[str, str]:
    """(op, dtype) of an sgemm problem string under AUTO: ("gemm", "dmma") or ("sgemm", "float32")."""
    p = parse_size(get_op("sgemm"), problem, False)
    dtype = fp32_gemm_dtype(p["M"], p["N"], p["K"])
    return ("gemm" if dtype == "dmma" else "sgemm"), dtype


@functools.lru_cache(maxsize=4096)
def _linear_plan(x_shape: tuple, N: int, x_dtype, epilogue: str | None, bias: bool, residual: bool,
                 dtype: str | None) -> tuple[str, str, tuple]:
    """(op name, problem string, the epilogue's inputs) of a linear call, its options checked; AUTO (linear's float32
    default) runs sgemm's problem, routed to sgemm or dmma at launch."""
    *lead, K = x_shape
    M = 1
    for v in lead:
        M *= v
    epilogue = epilogue or ("acc" + (" + bias" if bias else "") + (" + res" if residual else "")
                            if bias or residual else None)
    if dtype is not None and (x_dtype != torch.float32 or dtype not in FP32_GEMM_TYPES + (AUTO,)):
        raise ValueError(f"linear: dtype {dtype!r} for {x_dtype} tensors: a dtype is given for float32 ones only, "
                         f"{', '.join(FP32_GEMM_TYPES)}")
    name = "sgemm" if dtype in ("float32", AUTO) else "gemm"       # float32 tensors always carry a dtype here
    problem = f"M={M},N={N},K={K},layout=NT" + (f";epilogue={epilogue}" if epilogue else "")
    used = _epilogue_inputs(epilogue) if epilogue else ()
    for buf, given in (("res", residual), ("bias", bias)):
        if (buf in used) != given:
            arg = "residual" if buf == "res" else buf
            raise ValueError(f"linear: epilogue {epilogue!r} " + (f"reads {buf} but no {arg}= was given" if not given
                             else f"does not read {buf}, yet {arg}= was given"))
    return name, problem, used


@torch.compiler.assume_constant_result
def _matmul_precision() -> str:
    """torch.get_float32_matmul_precision(), a constant of a compiled graph (as torch's own matmuls take it)."""
    return torch.get_float32_matmul_precision()


@torch.compiler.assume_constant_result
def _epilogue_inputs(epilogue: str) -> tuple:
    """The tensors an epilogue reads ("bias", "res"). torch.compile takes the answer as a constant of the
    graph: dynamo cannot trace the expression parser (it calls Python's `compile`)."""
    return _parsed_inputs(epilogue)


@functools.lru_cache(maxsize=256)
def _parsed_inputs(epilogue: str) -> tuple:
    """_epilogue_inputs' answer, parsed once an epilogue (parsing took ~90 us of every eager call)."""
    from .ops.fusion import Epilogue
    return tuple(Epilogue.parse(epilogue).inputs)


def _rows(x) -> tuple[int, int]:
    """(rows, cols) of x seen as rows of its last dimension."""
    *lead, cols = x.shape
    rows = 1
    for v in lead:
        rows *= v
    return rows, cols


def layer_norm(x, gamma, beta, residual=None, return_sum: bool = False):
    """torch.nn.functional.layer_norm(x (+ residual), x.shape[-1:], gamma, beta, eps=1e-5) over x's last
    dimension, one kernel (the layernorm op, its residual add fused). With `return_sum`, (y, x + residual):
    the residual stream of a pre-LN block, written by the same kernel."""
    rows, cols = _rows(x)
    if return_sum and residual is None:
        raise ValueError("layer_norm: return_sum=True returns x + residual; give residual=")
    mode = None if residual is None else "add_store" if return_sum else "add"
    problem = f"rows={rows},cols={cols}" + (f";residual={mode}" if mode else "")
    flat = x.reshape(rows, cols)
    inputs = [flat] + ([residual.reshape(rows, cols)] if residual is not None else []) + [gamma, beta]
    outs = run("layernorm", problem, inputs)
    return (outs[0].reshape(x.shape), outs[1].reshape(x.shape)) if return_sum else outs[0].reshape(x.shape)


def softmax(x):
    """torch.softmax(x, dim=-1): the softmax op over x's last dimension."""
    rows, cols = _rows(x)
    return run("softmax", f"rows={rows},cols={cols}", [x.reshape(rows, cols)])[0].reshape(x.shape)


def attention(q, k, v, causal: bool = False, dtype: str | None = None):
    """torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal) for (batch, heads, seq,
    head_dim) tensors (seq_k may differ from seq_q), scale 1/sqrt(head_dim): the attention op, in the
    types it takes (kernelgen's attention op's `dtypes`; another type is a UsageError naming them).
    float32 tensors are multiplied as torch's SDPA multiplies them: on GPUs with TF32 tensor cores (sm_80+)
    in 3xTF32 (dtype "tf32x3": each value split into TF32 parts, about fp32's accuracy; torch's fp32 kernel
    there is CUTLASS's memory-efficient attention, whose products are 3xTF32), else on CUDA cores (also where the
    tensor-core kernel does not take the problem: more than 65535 (batch, head) pairs); `dtype="float32"` keeps
    them on CUDA cores, `dtype="tf32x3"` asks for the tensor cores.

    q, k and v are read where they lie when their strides are one of the op's layouts (all three alike):
    contiguous (bhsd), transposed views of (batch, seq, heads, head_dim) tensors (bshd), or the views
    `split_heads` makes of a packed (batch, seq, 3 * d_model) QKV projection (packed); other strides are
    copied to contiguous first. In the bshd and packed layouts O is written as (batch, seq, heads,
    head_dim) and returned as its (batch, heads, seq, head_dim) view, so `o.transpose(1, 2).reshape(b, s,
    h * head_dim)`, the merge of the heads, is a view too."""
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"attention takes (batch, heads, seq, head_dim) tensors, not {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    b, h, sq, d = q.shape
    layout = _attention_layout(q, k, v)
    if layout is None:                   # strides of no layout: copies, as before strides were arguments
        q, k, v, layout = q.contiguous(), k.contiguous(), v.contiguous(), "bhsd"
    problem = f"batch={b},heads={h},seq_q={sq},seq_k={k.shape[2]},head_dim={d},causal={int(bool(causal))}" + \
        ("" if layout == "bhsd" else f",layout={layout}")
    if q.dtype == torch.float32 and dtype is None:
        dtype = _sdpa_fp32(q.device.type == "cuda", problem)
    elif dtype is not None and (q.dtype != torch.float32 or dtype not in ("float32", "tf32x3")):
        raise ValueError(f"attention: dtype {dtype!r} for {q.dtype} tensors: a dtype is given for float32 ones only, "
                         "float32 or tf32x3")
    o = run("attention", problem, [_buffer(t, layout) for t in (q, k, v)], dtype=dtype)[0]
    return o if layout == "bhsd" else o.transpose(1, 2)


@functools.lru_cache(maxsize=4096)
def _sdpa_fp32(on_gpu: bool, problem: str) -> str:
    """How torch's SDPA multiplies float32 on this GPU (off a GPU, as on the default target: a meta trace's types
    are the same either way): tf32x3 where it has TF32 tensor cores and the tensor-core kernel takes the problem
    (at most 65535 (batch, head) pairs, row strides below 2^30), else float32 (the CUDA-core kernel)."""
    from . import gpu
    from .errors import UsageError
    from .target import default_target
    if not (gpu.device() if on_gpu else default_target()).has("mma_m16n8k8_tf32"):
        return "float32"
    try:
        _problem("attention", problem, "tf32x3", "")
        return "tf32x3"
    except UsageError:
        return "float32"


def _attention_layout(q, k, v) -> str | None:
    """The layout word all of q, k, v have (ops/attention_layout.py), or None."""
    from .ops.attention_layout import layout_of
    sq = q.shape[2]
    found = {layout_of(tuple(t.shape), tuple(t.stride()), sq) for t in (q, k, v)}
    return found.pop() if len(found) == 1 else None


def _buffer(t, layout: str):
    """The buffer the op takes for a (batch, heads, seq, head_dim) view in `layout`: the tensor (bhsd), its
    (batch, seq, heads, head_dim) transpose (bshd), or its span, a flat view from its first element to its
    last (packed). Views all: nothing is copied."""
    if layout == "bhsd":
        return t
    if layout == "bshd":
        return t.transpose(1, 2)
    b, h, s, d = t.shape
    sb, sh, ss, _ = t.stride()
    return t.as_strided(((b - 1) * sb + (h - 1) * sh + (s - 1) * ss + d,), (1,))
