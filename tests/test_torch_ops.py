"""kernelgen.torch: the custom op's fake implementation (shapes and types without a GPU: FakeTensorMode,
meta tensors, make_fx and torch.compile graph capture on CPU), bad inputs, and on a GPU real launches
against torch, inside a CUDA graph and under torch.compile."""
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
def test_torch_compile_runs_the_op_on_the_gpu():
    def block(x, w, b):
        return kgt.linear(x, w, b, epilogue="relu(acc + bias)") + 1

    x, w, b = _cuda((64, 128), (256, 128), (256,), dtype=torch.bfloat16)
    out = torch.compile(block, fullgraph=True)(x, w, b)
    ref = torch.relu(torch.nn.functional.linear(x.float(), w.float(), b.float())) + 1
    torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)
