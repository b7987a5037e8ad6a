"""kernelgen.torch: the custom op's fake implementation (shapes and types without a GPU: FakeTensorMode,
meta tensors, make_fx and torch.compile graph capture on CPU), bad inputs, and on a GPU real launches
against torch, inside a CUDA graph and under torch.compile."""
import types

import pytest

torch = pytest.importorskip("torch")
kgt = pytest.importorskip("kernelgen.torch")

SGEMM = "M=33,N=17,K=5;epilogue=gelu(acc + bias)"


def _meta(*shapes, dtype=torch.float32):
    return [torch.empty(s, dtype=dtype, device="meta") for s in shapes]


def test_fake_implementation_gives_shapes_and_types():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a, b, bias = torch.empty(33, 5), torch.empty(5, 17), torch.empty(17)
        (c,) = kgt.run("sgemm", SGEMM, [a, b, bias])
        assert c.shape == (33, 17) and c.dtype == torch.float32
        x, w, bb = torch.empty(4, 8, 64, dtype=torch.bfloat16), torch.empty(96, 64, dtype=torch.bfloat16), \
            torch.empty(96, dtype=torch.bfloat16)
        y = kgt.linear(x, w, bb, epilogue="gelu(acc + bias)", out_dtype="float32")
        assert y.shape == (4, 8, 96) and y.dtype == torch.float32
        (s,) = kgt.run("softmax", "rows=3,cols=10", [torch.empty(3, 10)])
        assert s.shape == (3, 10)
        (bc,) = kgt.run("gemm", "M=8,N=16,K=32,batch=3,stride_b=0", [torch.empty(3, 8, 32, dtype=torch.float16),
                                                                   torch.empty(1, 32, 16, dtype=torch.float16)])
        assert bc.shape == (3, 8, 16)


def test_bad_inputs_say_what_the_op_takes():
    with pytest.raises(ValueError, match="input bias is .16,. torch.float32, it must be .17,. torch.float32"):
        kgt.run("sgemm", SGEMM, _meta((33, 5), (5, 17), (16,)))
    with pytest.raises(ValueError, match="2 inputs given, it takes 3: A, B, bias"):
        kgt.run("sgemm", SGEMM, _meta((33, 5), (5, 17)))
    with pytest.raises(ValueError, match="reads res but no residual= was given"):
        kgt.linear(*_meta((4, 8), (6, 8), (6,)), epilogue="acc + res")


def test_make_fx_and_torch_compile_capture_the_op_on_cpu():
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(a, b, bias):
        return kgt.run("sgemm", SGEMM, [a, b, bias])[0] * 2

    gm = make_fx(f, tracing_mode="fake")(torch.empty(33, 5), torch.empty(5, 17), torch.empty(17))
    assert "kernelgen.run" in gm.code
    graphs = []

    def capture(g, example_inputs):
        graphs.append(g)
        return g.forward

    out = torch.compile(f, backend=capture, fullgraph=True)(*_meta((33, 5), (5, 17), (17,)))
    assert out.shape == (33, 17) and any("kernelgen.run" in g.code for g in graphs)


def test_linear_with_an_epilogue_compiles_as_one_graph_on_cpu():
    # The epilogue's parser calls Python's `compile`, which dynamo cannot trace: linear must not make
    # fullgraph=True fail (it did on the H100 before the parse became a constant of the graph).
    def block(x, w, b):
        return kgt.linear(x, w, b, epilogue="relu(acc + bias)") + 1

    graphs = []
    out = torch.compile(block, backend=lambda g, _: graphs.append(g) or g.forward, fullgraph=True)(
        *_meta((4, 2, 8), (6, 8), (6,)))
    assert out.shape == (4, 2, 6) and any("kernelgen.run" in g.code for g in graphs)


# -- GPU ------------------------------------------------------------------------------------------
def _cuda(*shapes, dtype=torch.float32):
    return [torch.randn(s, dtype=dtype, device="cuda") for s in shapes]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_linear_matches_torch_on_the_gpu(dtype):
    x, w, b = _cuda((3, 37, 96), (130, 96), (130,), dtype=dtype)
    y = kgt.linear(x, w, b, epilogue="gelu(acc + bias)")
    ref = torch.nn.functional.gelu(torch.nn.functional.linear(x.double(), w.double(), b.double()), approximate="tanh")
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(y.double(), ref, rtol=tol, atol=tol)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(4096, 1536, 384), (2048, 1024, 512), (1024, 1024, 256)])
def test_linear_with_misaligned_bias_and_residual_views_on_the_gpu(M, N, K):
    """The staged epilogue reads bias and residual runs as aligned vectors where their pointers allow it
    (here 2 bytes past: element by element instead), at sizes whose picks are the persistent cooperative,
    ping-pong and one-tile kernels on the H100."""
    x, w = _cuda((M, K), (N, K), dtype=torch.float16)
    bias_store, res_store = _cuda((N + 1,), (M * N + 1,), dtype=torch.float16)
    for shift in (0, 1):
        bias, res = bias_store[shift:shift + N], res_store[shift:shift + M * N].view(M, N)
        y = kgt.linear(x, w, bias, epilogue="gelu(acc + bias) + res", residual=res)
        ref = torch.nn.functional.gelu(torch.nn.functional.linear(x.double(), w.double(), bias.double()),
                                       approximate="tanh") + res.double()
        torch.testing.assert_close(y.double(), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
def test_cuda_graph_capture_replays_on_torchs_stream():
    a, b, bias = _cuda((33, 5), (5, 17), (17,))
    kgt.run("sgemm", SGEMM, [a, b, bias])            # build, compile and load outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
        (c,) = kgt.run("sgemm", SGEMM, [a, b, bias])
    a.copy_(torch.randn_like(a))
    g.replay()
    torch.cuda.synchronize()
    ref = torch.nn.functional.gelu(a.double() @ b.double() + bias.double(), approximate="tanh")
    torch.testing.assert_close(c.double(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_eager_calls_skip_the_dispatcher_and_give_the_ops_answer():
    a, b, bias = _cuda((33, 5), (5, 17), (17,))
    assert kgt._plain([a, b, bias])
    (c,) = kgt.run("sgemm", SGEMM, [a, b, bias])
    (d,) = torch.ops.kernelgen.run("sgemm", SGEMM, "float32", "", [a, b, bias])
    assert torch.equal(c, d)
    w = b.clone().requires_grad_()
    assert not kgt._plain([a, w, bias])            # autograd: the op's way, which refuses a backward
    with torch.no_grad():
        assert kgt._plain([a, w, bias])


def test_a_call_takes_the_unchecked_launch_only_for_exactly_its_tensors():
    """_Call.accepts lets a call go straight to the launch; any difference takes the checked way."""
    call = kgt._Call(inputs=(((4, 3), torch.float32), ((3,), torch.float32)), outputs=(), bound=None, order=())
    like = lambda shape, dtype=torch.float32, cuda=True, contiguous=True: types.SimpleNamespace(
        shape=torch.Size(shape), dtype=dtype, is_cuda=cuda, is_contiguous=lambda: contiguous)
    assert call.accepts([like((4, 3)), like((3,))])
    for wrong in ([like((4, 3))], [like((3, 4)), like((3,))], [like((4, 3), torch.float16), like((3,))],
                  [like((4, 3), cuda=False), like((3,))], [like((4, 3), contiguous=False), like((3,))]):
        assert not call.accepts(wrong)


@pytest.mark.gpu
def test_strided_and_wrong_inputs_take_the_checked_launch_on_the_gpu():
    a, b, bias = _cuda((33, 5), (5, 17), (17,))
    (c,) = kgt.run("sgemm", SGEMM, [a, b, bias])
    wide = torch.randn(33, 10, device="cuda")
    wide[:, ::2] = a                                   # a as a strided view: copied, same answer
    (d,) = kgt.run("sgemm", SGEMM, [wide[:, ::2], b, bias])
    assert torch.equal(c, d)
    with pytest.raises(ValueError, match="input A is"):
        kgt.run("sgemm", SGEMM, [a[:, :4], b, bias], dtype="float32")


@pytest.mark.gpu
def test_linear_at_high_float32_precision_keeps_fp32_accuracy_on_the_gpu():
    """torch's "high" lets its own matmuls round to TF32 (~1e-3 relative here); kgt.linear takes tf32x3 there."""
    x, w, b = _cuda((256, 1024), (384, 1024), (384,))
    ref = torch.nn.functional.linear(x.double(), w.double(), b.double())
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        y = kgt.linear(x, w, b)
    finally:
        torch.set_float32_matmul_precision(before)
    assert float((y.double() - ref).norm() / ref.norm()) < 2e-6


def test_float32_linear_takes_the_fp64_tensor_cores_where_the_cost_models_say_so(monkeypatch):
    """A float32 linear is sgemm's problem with dtype "auto" in a graph, routed when it first runs: on an H100-class
    GPU (faked: the decision reads only the target) big products to dmma, a thin one to the CUDA-core sgemm;
    dtype="float32" keeps FFMA; without a GPU the route is sgemm."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from kernelgen import gpu
    from kernelgen.target import target

    def calls(M, dtype=None):
        x, w = torch.empty(M, 1024), torch.empty(3072, 1024)
        g = make_fx(lambda x, w: kgt.linear(x, w, dtype=dtype), tracing_mode="fake")(x, w)
        return [tuple(n.args[:3]) for n in g.graph.nodes if "kernelgen.run" in str(n.target)]

    def routed(M):
        ((op, problem, dtype),) = calls(M)
        kgt._problem.cache_clear()
        o, p = kgt._problem(op, problem, dtype, "")
        return o.name, p.dtype("A").name

    assert calls(2048) == [("sgemm", "M=2048,N=3072,K=1024,layout=NT", "auto")] and routed(2048) == ("sgemm", "float32")
    monkeypatch.setattr(gpu, "device", lambda *a: target("sm_90a"))
    try:
        assert routed(2048) == ("gemm", "dmma") and routed(1) == ("sgemm", "float32")
        assert calls(2048, "float32")[0][::2] == ("sgemm", "float32") and calls(2048, "dmma")[0][::2] == ("gemm", "dmma")
    finally:
        kgt._problem.cache_clear()


@pytest.mark.gpu
def test_float32_linear_by_default_is_as_accurate_as_fp32_or_better_on_the_gpu():
    """Whichever kernel the default takes (dmma where the GPU's fp64 tensor cores pay), its error is no more than
    the CUDA-core SGEMM's, with a GELU epilogue; explicitly on dmma, it is within ~half an ulp of float64's."""
    x, w, b = _cuda((2048, 1024), (1536, 1024), (1536,))
    ref = torch.nn.functional.linear(x.double(), w.double(), b.double())
    err = {d: float((kgt.linear(x, w, b, dtype=d).double() - ref).norm() / ref.norm()) for d in (None, "float32", "dmma")}
    assert err[None] <= err["float32"] * 1.01 and err["dmma"] < 1e-7 < err["float32"], err


def test_float32_linear_compiles_with_dynamic_shapes_on_cpu():
    """Sizes that are symbols while traced (dynamic=True, or a recompile after a shape changed): the graph holds the
    float32 linear as sgemm's problem in dtype "auto", its route decided when it runs."""
    def block(x, w, b):
        return kgt.linear(x, w, b, epilogue="relu(acc + bias)") + 1

    for dynamic in (True, False):
        graphs = []
        out = torch.compile(block, backend=lambda g, _: graphs.append(g) or g.forward, fullgraph=True,
                            dynamic=dynamic)(*_meta((2048, 512), (1024, 512), (1024,)))
        calls = [(n.args[0], n.args[2]) for g in graphs for n in g.graph.nodes if "kernelgen.run" in str(n.target)]
        assert out.shape == (2048, 1024) and calls == [("sgemm", "auto")], (dynamic, calls)


def test_fake_meta_and_cpu_tensors_take_the_ops_way():
    from torch._subclasses.fake_tensor import FakeTensorMode
    assert not kgt._plain([torch.empty(3, device="meta")]) and not kgt._plain([torch.empty(3)])
    with FakeTensorMode():
        assert not kgt._plain([torch.empty(3)])


@pytest.mark.gpu
def test_torch_compile_runs_the_op_on_the_gpu():
    def block(x, w, b):
        return kgt.linear(x, w, b, epilogue="relu(acc + bias)") + 1

    x, w, b = _cuda((64, 128), (256, 128), (256,), dtype=torch.bfloat16)
    out = torch.compile(block, fullgraph=True)(x, w, b)
    ref = torch.relu(torch.nn.functional.linear(x.float(), w.float(), b.float())) + 1
    torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)
    # float32 at a size the default puts on dmma where the GPU pays for it: the decision is a constant of the graph
    x, w, b = _cuda((1024, 512), (768, 512), (768,))
    out = torch.compile(block, fullgraph=True)(x, w, b)
    ref = torch.relu(torch.nn.functional.linear(x.double(), w.double(), b.double())) + 1
    assert float((out.double() - ref).norm() / ref.norm()) < 1e-6


# -- attention through strides (CPU: fake tensors and graph capture) -------------------------------------
def _qkv_views(b=2, s=37, h=3, d=16, layout="packed", device="meta", dtype=torch.float32):
    """q, k, v (b, h, s, d) as the transformer makes them: views of a packed (b, s, 3*h*d) projection, or
    transposes of (b, s, h, d) tensors."""
    if layout == "packed":
        qkv = torch.empty(b, s, 3 * h * d, device=device, dtype=dtype)
        return qkv.view(b, s, 3, h, d).permute(2, 0, 3, 1, 4).unbind(0)
    return [torch.empty(b, s, h, d, device=device, dtype=dtype).transpose(1, 2) for _ in range(3)]


def test_float32_attention_takes_tf32x3_as_torchs_sdpa_does_unless_told():
    from torch.fx.experimental.proxy_tensor import make_fx
    q, k, v = _qkv_views(layout="bhsd")
    for given, used in ((None, "tf32x3"), ("float32", "float32"), ("tf32x3", "tf32x3")):
        g = make_fx(lambda q, k, v: kgt.attention(q, k, v, causal=True, dtype=given), tracing_mode="fake")(q, k, v)
        assert [n.args[2] for n in g.graph.nodes if "kernelgen.run" in str(n.target)] == [used]
    with pytest.raises(ValueError, match="dtype 'tf32x3' for torch.float16 tensors: a dtype is given for float32"):
        kgt.attention(q.half(), k.half(), v.half(), dtype="tf32x3")
    with pytest.raises(ValueError, match="dtype 'tf32' for torch.float32 tensors: .* float32 or tf32x3"):
        kgt.attention(q, k, v, dtype="tf32")
    # more (batch, head) pairs than the tensor-core kernel's gridDim.y holds: the default falls back to CUDA cores
    many = [torch.empty(1, 70000, 5, 16, device="meta") for _ in range(3)]
    g = make_fx(lambda q, k, v: kgt.attention(q, k, v), tracing_mode="fake")(*many)
    assert [n.args[2] for n in g.graph.nodes if "kernelgen.run" in str(n.target)] == ["float32"]


def _attention_graph(q, k, v):
    from torch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(lambda q, k, v: kgt.attention(q, k, v, causal=True), tracing_mode="fake")(q, k, v)
    runs = [n for n in gm.graph.nodes if "kernelgen.run" in str(n.target)]
    copies = [str(n.target) for n in gm.graph.nodes if n.op == "call_function" and "clone" in str(n.target)]
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    return runs[0].args[1], copies, (out[0] if isinstance(out, (list, tuple)) else out).meta["val"]


@pytest.mark.parametrize("layout", ["packed", "bshd"])
def test_attention_takes_strided_views_without_a_copy_and_writes_o_as_bshd(layout):
    problem, copies, o = _attention_graph(*_qkv_views(layout=layout))
    assert problem == f"batch=2,heads=3,seq_q=37,seq_k=37,head_dim=16,causal=1,layout={layout}" and copies == []
    assert o.shape == (2, 3, 37, 16) and o.transpose(1, 2).is_contiguous()     # the heads merge by a view


def test_attention_copies_strides_of_no_layout_and_keeps_contiguous_ones():
    cache = torch.empty(2, 3, 50, 16, device="meta")
    q = torch.empty(2, 3, 37, 16, device="meta")
    problem, copies, o = _attention_graph(q, cache[:, :, :40], cache[:, :, :40])     # a slice of a longer KV cache
    assert problem.endswith("head_dim=16,causal=1") and len(copies) == 2 and o.is_contiguous()
    problem, copies, o = _attention_graph(q, q, q)
    assert problem.endswith("causal=1") and copies == [] and o.is_contiguous()


def test_the_packed_spans_overlap_in_the_projection():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        q, k, v = _qkv_views(b=2, s=5, h=3, d=8)
        spans = [kgt._buffer(t, "packed") for t in (q, k, v)]
        assert [t.shape for t in spans] == [(2 * 5 * 72 - 48,)] * 3 and all(t.is_contiguous() for t in spans)
        assert [t.storage_offset() for t in spans] == [0, 24, 48]


def test_strided_attention_compiles_as_one_graph_on_cpu():
    def block(qkv):
        b, s, _ = qkv.shape
        q, k, v = qkv.view(b, s, 3, 2, 8).permute(2, 0, 3, 1, 4).unbind(0)
        return kgt.attention(q, k, v, causal=True).transpose(1, 2).reshape(b, s, 16) + 1

    graphs = []
    out = torch.compile(block, backend=lambda g, _: graphs.append(g) or g.forward, fullgraph=True)(
        torch.empty(2, 5, 48, device="meta"))
    assert out.shape == (2, 5, 16) and any("kernelgen.run" in g.code for g in graphs)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", ["packed", "bshd"])
def test_strided_attention_matches_sdpa_on_the_gpu(layout, dtype):
    b, s, h, d = 2, 333, 4, 64
    if layout == "packed":
        qkv = torch.randn(b, s, 3 * h * d, device="cuda", dtype=dtype)
        q, k, v = qkv.view(b, s, 3, h, d).permute(2, 0, 3, 1, 4).unbind(0)
    else:
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=dtype).transpose(1, 2) for _ in range(3))
    o = kgt.attention(q, k, v, causal=True)
    assert o.transpose(1, 2).is_contiguous()
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(o.double(), ref, rtol=tol, atol=tol)
