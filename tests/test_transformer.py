"""The GPT-2-style block of kernelgen ops (kernelgen/transformer.py) and kernelgen.torch's model wrappers:
configs, the block's graph traced with fake tensors (GPT-2 small and the 7B layer, no memory), torch.compile
capturing it whole, the block run end to end on the CPU emulator against torch's in float64, the CLI's error
paths, and on a GPU the block against PyTorch, in a CUDA graph, and the bench."""
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from kernelgen import transformer as tf
from kernelgen.cli import main
from kernelgen.errors import UsageError

OPS = ["layernorm", "sgemm", "attention", "sgemm", "layernorm", "sgemm", "sgemm"]


# -- plain Python -----------------------------------------------------------------------------------
def test_configs_name_the_issue_shapes_and_parse_custom_ones():
    assert (tf.config("gpt2-small").d_model, tf.config("gpt2-small").heads, tf.config("gpt2-small").seq,
            tf.config("gpt2-small").batch) == (768, 12, 1024, 8)
    assert (tf.config("7b").d_model, tf.config("7b").heads, tf.config("7b").seq, tf.config("7b").batch) == \
        (4096, 32, 2048, 1)
    c = tf.config("d_model=96,heads=3,seq=5,batch=2")
    assert (c.head_dim, c.seq, c.batch) == (32, 5, 2)


@pytest.mark.parametrize("text,message", [
    ("gpt3", "config 'gpt3' is unknown; choose one of gpt2-small, 7b, tiny"),
    ("d_model=96,heads=3,seq=5", "leaves out batch"),
    ("d_model=96,heads=5,seq=5,batch=1", "d_model=96 is not a multiple of heads=5"),
    ("d_model=96,heads=3,seq=0,batch=1", "'seq=0' must be one of d_model, heads, seq, batch=N"),
    ("d_model=96,heads=3,seq=5,batch=1,layers=2", "'layers=2' must be one of"),
])
def test_bad_configs_say_what_is_allowed(text, message):
    with pytest.raises(UsageError, match=message):
        tf.config(text)


def test_dtypes_follow_what_attention_takes():
    tf.check_dtype("float32")
    tf.check_dtype("tf32x3")
    tf.check_dtype("dmma")
    with pytest.raises(UsageError, match="dtype 'float64' is not one of float32, tf32x3, dmma, float16, bfloat16 .tf32x3 and dmma: "):
        tf.check_dtype("float64")
    if "bfloat16" not in tf.attention_dtypes():
        with pytest.raises(UsageError, match="attention op takes float32 only, not bfloat16"):
            tf.check_dtype("bfloat16")


@pytest.mark.parametrize("args,message", [
    (["bench", "transformer", "--size", "gpt3"], "config 'gpt3' is unknown"),
    (["bench", "transformer", "--ladder"], "takes no --ladder"),
    (["bench", "transformer", "--layout", "NT"], "takes no --layout"),
    (["bench", "transformer", "--dtype", "float64"], "dtype 'float64' is not one of"),
    (["bench", "softmax", "--breakdown"], "--breakdown times the stages of `bench transformer`"),
])
def test_cli_refuses_bad_transformer_benches_in_one_line(args, message):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    assert message in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_cli_without_a_gpu_or_torch_says_so_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELGEN_NO_GPU", "1")
    r = CliRunner().invoke(main, ["bench", "transformer", "--size", "tiny", "--json", str(tmp_path / "t.json")])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert "no CUDA GPU" in r.output or "needs PyTorch" in r.output, r.output
    monkeypatch.setitem(sys.modules, "torch", None)        # `import torch` fails as where it is not installed
    r = CliRunner().invoke(main, ["bench", "transformer"])
    assert r.exit_code == 2 and "needs PyTorch: pip install 'kernelgen[torch]'" in r.output, r.output
    assert not (tmp_path / "t.json").exists()


# -- torch on the CPU: fake tensors, graph capture ------------------------------------------------------
try:
    import torch
    import kernelgen.torch as kgt
except ImportError:           # the tests above need no torch; those below skip
    torch = kgt = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


@needs_torch
@pytest.mark.parametrize("name", ["gpt2-small", "7b"])
def test_the_block_traces_to_seven_kernelgen_ops(name):
    cfg = tf.config(name)
    gm, shape, ops = tf.trace(cfg)
    assert shape == (cfg.batch, cfg.seq, cfg.d_model) and ops == OPS
    problems = [n.args[1] for n in gm.graph.nodes if "kernelgen.run" in str(n.target)]
    assert problems[1] == f"M={cfg.batch * cfg.seq},N={3 * cfg.d_model},K={cfg.d_model},layout=NT;epilogue=acc + bias"
    assert problems[2] == (f"batch={cfg.batch},heads={cfg.heads},seq_q={cfg.seq},seq_k={cfg.seq},"
                           f"head_dim={cfg.head_dim},causal=1,layout=packed")     # q, k, v read where the GEMM wrote them
    # no copies: between the QKV GEMM and the output projection only views (the attention reads the
    # projection in place through its strides and writes O as (b, s, h, hd))
    copies = [n.target for n in gm.graph.nodes if n.op == "call_function" and
              any(c in str(n.target) for c in ("clone", "contiguous", "copy", "_to_copy"))]
    assert copies == [], copies
    assert problems[3].endswith(";epilogue=acc + bias + res") and problems[5].endswith(";epilogue=gelu(acc + bias)")


@needs_torch
def test_the_tf32x3_block_runs_its_four_gemms_on_the_tensor_core_gemm():
    gm, shape, ops = tf.trace(tf.config("7b"), "tf32x3")
    assert ops == [o.replace("sgemm", "gemm") for o in OPS]
    types = [n.args[2] for n in gm.graph.nodes if "kernelgen.run" in str(n.target)]
    assert types == ["float32", "tf32x3", "tf32x3", "tf32x3", "float32", "tf32x3", "tf32x3"]
    meta = lambda *s, t=torch.float32: torch.empty(*s, device="meta", dtype=t)
    assert kgt.linear(meta(4, 8), meta(6, 8), meta(6), dtype="tf32x3").dtype == torch.float32
    with pytest.raises(ValueError, match="dtype 'tf32x3' for torch.bfloat16 tensors: a dtype is given for float32"):
        kgt.linear(meta(4, 8, t=torch.bfloat16), meta(6, 8, t=torch.bfloat16), dtype="tf32x3")


@needs_torch
def test_the_float32_blocks_attention_multiplies_as_torchs_sdpa():
    """torch's SDPA runs float32 in 3xTF32 on sm_80+ (CUTLASS's memory-efficient kernel), and so does kgt.attention
    by default on the default target (sm_90): the float32 block's attention is tf32x3 beside GEMMs whose kernel
    (sgemm or dmma) is routed when they run ("auto")."""
    gm, _, _ = tf.trace(tf.config("gpt2-small"), "float32")
    assert [n.args[2] for n in gm.graph.nodes if "kernelgen.run" in str(n.target)] == \
        ["float32", "auto", "tf32x3", "auto", "float32", "auto", "auto"]


@needs_torch
@pytest.mark.parametrize("precision,op", [("highest", "sgemm"), ("high", "gemm"), ("medium", "gemm")])
def test_linear_follows_torchs_float32_matmul_precision(precision, op):
    from torch.fx.experimental.proxy_tensor import make_fx
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        meta = lambda *s: torch.empty(*s, device="meta")
        gm = make_fx(lambda x, w: kgt.linear(x, w), tracing_mode="fake")(meta(4, 8), meta(6, 8))
        calls = [n.args[:3] for n in gm.graph.nodes if "kernelgen.run" in str(n.target)]
        assert [(c[0], c[2]) for c in calls] == [(op, "tf32x3" if op == "gemm" else "auto")]
        half = make_fx(lambda x, w: kgt.linear(x, w), tracing_mode="fake")(meta(4, 8).half(), meta(6, 8).half())
        assert [n.args[2] for n in half.graph.nodes if "kernelgen.run" in str(n.target)] == ["float16"]
    finally:
        torch.set_float32_matmul_precision(before)


@needs_torch
def test_torch_compile_captures_the_block_as_one_graph():
    cfg = tf.config("tiny")
    p = {n: torch.empty(s, device="meta") for n, s in tf.param_shapes(cfg).items()}
    graphs = []
    out = torch.compile(lambda x, p: tf.kernelgen_block(x, p, cfg.heads), fullgraph=True,
                        backend=lambda g, _: graphs.append(g) or g.forward)(
        torch.empty(cfg.batch, cfg.seq, cfg.d_model, device="meta"), p)
    assert out.shape == (cfg.batch, cfg.seq, cfg.d_model)
    assert sum(str(g.code).count("kernelgen.run") for g in graphs) == len(OPS)


@needs_torch
def test_wrappers_give_torch_shapes_under_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        x, r, g, b = torch.empty(2, 5, 37), torch.empty(2, 5, 37), torch.empty(37), torch.empty(37)
        assert kgt.layer_norm(x, g, b).shape == (2, 5, 37)
        y, h = kgt.layer_norm(x, g, b, residual=r, return_sum=True)
        assert y.shape == h.shape == (2, 5, 37)
        assert kgt.layer_norm(x, g, b, residual=r).shape == (2, 5, 37)
        assert kgt.softmax(torch.empty(3, 4, 10)).shape == (3, 4, 10)
        q, k = torch.empty(2, 3, 19, 24), torch.empty(2, 3, 83, 24)
        assert kgt.attention(q, k, k, causal=True).shape == (2, 3, 19, 24)
        w, bias = torch.empty(6, 37), torch.empty(6)
        assert kgt.linear(x, w, bias, residual=torch.empty(2, 5, 6)).shape == (2, 5, 6)


@needs_torch
def test_wrappers_refuse_bad_inputs():
    meta = lambda *s: torch.empty(*s, device="meta")
    with pytest.raises(ValueError, match="return_sum=True returns x \\+ residual; give residual="):
        kgt.layer_norm(meta(2, 8), meta(8), meta(8), return_sum=True)
    with pytest.raises(ValueError, match="input res is .2, 7. torch.float32, it must be .2, 8. torch.float32"):
        kgt.run("layernorm", "rows=2,cols=8;residual=add", [meta(2, 8), meta(2, 7), meta(8), meta(8)])
    with pytest.raises(ValueError, match="attention takes .batch, heads, seq, head_dim. tensors"):
        kgt.attention(meta(3, 19, 24), meta(3, 19, 24), meta(3, 19, 24))
    with pytest.raises(ValueError, match="does not read res, yet residual= was given"):
        kgt.linear(meta(4, 8), meta(6, 8), meta(6), epilogue="relu(acc + bias)", residual=meta(4, 6))


# -- the block on the CPU emulator ---------------------------------------------------------------------
def _to_numpy(t):
    return t.contiguous().view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.contiguous().numpy()


def _from_numpy(a, dtype):
    return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if dtype == torch.bfloat16 else torch.from_numpy(a)


def emulated_run(op_name, problem, inputs, dtype=None, out_dtype=None):
    """kernelgen.torch.run on the emulator: each op's heuristic schedule for an sm_80 GPU, checker on."""
    from kernelgen.prepared import prepare
    from kernelgen.target import target
    from kernelgen.validate import execute
    op, p = kgt._problem(op_name, problem, dtype or kgt.KG_TYPES[inputs[0].dtype], out_dtype or "")
    kgt._check(op, p, inputs)
    tgt = target("sm_80")
    prep = prepare(op, op.schedule_for(p, tgt), p, tgt)
    outs = execute(prep, {b: _to_numpy(t) for b, t in zip(op.inputs, inputs)}, "emulate", check=True)
    return [_from_numpy(outs[b], inputs[0].dtype) for b in op.outputs]


@needs_torch
@pytest.mark.emulate
@pytest.mark.parametrize("dtype", ["float32", "tf32x3", "bfloat16"])
def test_the_block_matches_torch_on_the_emulator(dtype, monkeypatch):
    if tf.data_type(dtype) not in tf.attention_dtypes():
        pytest.skip(f"kernelgen's attention takes {', '.join(tf.attention_dtypes())} only")
    monkeypatch.setattr(kgt, "run", emulated_run)
    cfg, t = tf.config("tiny"), getattr(torch, tf.data_type(dtype))
    p = tf.init_params(cfg, t, "cpu")
    x = torch.randn(cfg.batch, cfg.seq, cfg.d_model).to(t)
    ref = tf.torch_block(x.double(), {k: v.double() for k, v in p.items()}, cfg.heads)
    assert tf.block_error(tf.ours(dtype)(x, p, cfg.heads), ref, x) < tf.TOLERANCE[dtype]


@needs_torch
@pytest.mark.emulate
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("layout", ["packed", "bshd", "sliced"])
def test_attention_reads_strided_views_on_the_emulator(layout, dtype, monkeypatch):
    """q, k, v as the block makes them (views of a packed projection), as transposes of (b, s, h, d) tensors,
    and as slices of a longer cache (copied): each against float64 SDPA, seq 37 causal, 3 heads of 24."""
    monkeypatch.setattr(kgt, "run", emulated_run)
    b, s, h, d, t = 2, 37, 3, 24, getattr(torch, dtype)
    if layout == "packed":
        q, k, v = tf.split_heads(torch.randn(b, s, 3 * h * d).to(t), h)
    elif layout == "bshd":
        q, k, v = (torch.randn(b, s, h, d).to(t).transpose(1, 2) for _ in range(3))
    else:
        q, k, v = (torch.randn(b, h, s + 9, d).to(t)[:, :, :s] for _ in range(3))
    o = kgt.attention(q, k, v, causal=True)
    assert o.transpose(1, 2).is_contiguous() == (layout != "sliced")
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    tol = 1e-5 if dtype == "float32" else 3e-3
    assert float((o.double() - ref).norm() / ref.norm()) < tol


@needs_torch
@pytest.mark.emulate
def test_layer_norm_with_a_residual_matches_torch_on_the_emulator(monkeypatch):
    monkeypatch.setattr(kgt, "run", emulated_run)
    x, r = torch.randn(3, 37) * 3 + 5, torch.randn(3, 37)
    g, b = torch.rand(37) + 0.5, torch.randn(37)
    y, h = kgt.layer_norm(x, g, b, residual=r, return_sum=True)
    ref = torch.nn.functional.layer_norm((x + r).double(), (37,), g.double(), b.double(), 1e-5)
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(h, x + r)


# -- GPU -------------------------------------------------------------------------------------------
SMALL = "d_model=256,heads=4,seq=200,batch=2"      # head_dim 64, seq no tile multiple


@needs_torch
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "tf32x3", "dmma", "bfloat16"])
@pytest.mark.parametrize("name", ["tiny", SMALL])
def test_the_block_matches_pytorch_on_the_gpu(name, dtype):
    if tf.data_type(dtype) not in tf.attention_dtypes():
        pytest.skip(f"kernelgen's attention takes {', '.join(tf.attention_dtypes())} only")
    torch.backends.cuda.matmul.allow_tf32 = False
    result = tf.check(tf.config(name), dtype)
    assert result["ok"], result


@needs_torch
@pytest.mark.gpu
def test_wrappers_match_torch_on_the_gpu():
    x, r = torch.randn(3, 7, 37, device="cuda"), torch.randn(3, 7, 37, device="cuda")
    g, b = torch.rand(37, device="cuda") + 0.5, torch.randn(37, device="cuda")
    y, h = kgt.layer_norm(x, g, b, residual=r, return_sum=True)
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x + r, (37,), g, b, 1e-5), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(h, x + r)
    torch.testing.assert_close(kgt.softmax(x), torch.softmax(x, -1), rtol=1e-5, atol=1e-5)
    q, k, v = (torch.randn(2, 3, n, 64, device="cuda") for n in (37, 45, 45))
    torch.testing.assert_close(kgt.attention(q, k, v, causal=True),
                               torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                               rtol=1e-4, atol=1e-4)


@needs_torch
@pytest.mark.gpu
def test_the_block_replays_from_a_cuda_graph_and_the_bench_reports_four_rows(tmp_path):
    doc = tf.bench(tf.config("tiny"), "float32", reps=5, warmup=2)
    assert doc["check"]["ok"] and len(doc["notes"]) == 1, doc
    assert doc["notes"][0].startswith("float32 GEMMs by kernelgen.torch.linear's default: QKV "), doc["notes"]
    assert [r["block"] for r in doc["rows"]] == ["kernelgen", "kernelgen (CUDA graph)", "PyTorch eager", "torch.compile"]
    assert all(r["median_ms"] > 0 for r in doc["rows"])
    r = CliRunner().invoke(main, ["bench", "transformer", "--size", "tiny", "--reps", "5", "--json",
                                  str(tmp_path / "t.json")])
    assert r.exit_code == 0, r.output
    assert "vs_eager" in r.output and (tmp_path / "t.json").exists()


@needs_torch
@pytest.mark.gpu
def test_the_breakdown_times_every_stage_of_both_blocks(tmp_path):
    doc = tf.bench(tf.config("tiny"), "float32", reps=5, warmup=2, breakdown=True)
    stages = {r["stage"]: r for r in doc["breakdown"]}
    assert list(stages) == list(tf.STAGES) and all(r["torch_ms"] > 0 for r in stages.values())
    assert all((r["kernelgen_ms"] is None) == (name in tf.FUSED) for name, r in stages.items())
    r = CliRunner().invoke(main, ["bench", "transformer", "--size", "tiny", "--reps", "5", "--breakdown"])
    assert r.exit_code == 0 and "per stage" in r.output and "- (in out-proj)" in r.output, r.output


def test_the_float32_blocks_gemms_go_where_the_cost_models_say(monkeypatch):
    """On an H100-class GPU (faked: the decision reads only the target) the 7B layer's and GPT-2 small's four
    products all take the fp64 tensor cores."""
    from kernelgen import gpu
    from kernelgen.target import target
    monkeypatch.setattr(gpu, "device", lambda *a: target("sm_90a"))
    for name in ("7b", "gpt2-small"):
        assert set(tf.fp32_gemms(tf.config(name)).values()) == {"dmma"}, name
    assert tf.gemm_shapes(tf.config("7b"))["MLP down"] == (2048, 4096, 16384)
