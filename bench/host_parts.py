"""Host time of the parts of one eager kernelgen.torch call (bf16 linear with a bias at a tiny size, the GPU
idle), each timed alone over many repetitions: where kgt.linear's ~50 us a call go, against torch's F.linear.
    PYTHONPATH=. python3 bench/host_parts.py > $OUT/host_parts.txt"""
import torch

from kernelgen import gpu, torch as kgt
from s17_host_profile import per_call_us     # bench/, beside this file


def main():
    bf = torch.bfloat16
    x, w, b = (torch.randn(*s, device="cuda", dtype=bf) for s in ((64, 128), (256, 128), (256,)))
    kgt.linear(x, w, b)
    torch.cuda.synchronize()
    args = ("gemm", "M=64,N=256,K=128,layout=NT;epilogue=acc + bias", "bfloat16", "")
    prep = kgt._prepared(*args)
    names = kgt._signature(*args)
    outs = kgt._outputs(*args, x.device)
    arrays = dict(zip(names[0], [x, w, b]), **dict(zip(names[2], outs)))
    addresses, _ = prep._arguments.read(arrays)
    stream = torch.cuda.current_stream().cuda_stream
    dev = x.device
    x3, g, be = torch.randn(8, 64, 128, device="cuda", dtype=bf), torch.ones(128, device="cuda", dtype=bf), \
        torch.zeros(128, device="cuda", dtype=bf)
    qkv = torch.randn(1, 64, 3 * 128, device="cuda", dtype=bf)
    q, k, v = (t.view(1, 64, 2, 64).transpose(1, 2) for t in qkv.split(128, dim=-1))    # the packed views
    parts = {
        "kgt.layer_norm (3-D x)": lambda: kgt.layer_norm(x3, g, be),
        "kgt.layer_norm (3-D x, residual, return_sum)": lambda: kgt.layer_norm(x3, g, be, residual=x3, return_sum=True),
        "torch F.layer_norm (3-D x)": lambda: torch.nn.functional.layer_norm(x3, (128,), g, be),
        "kgt.attention (packed views, causal)": lambda: kgt.attention(q, k, v, causal=True),
        "torch SDPA (same views, causal)": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
        "kgt.linear (all)": lambda: kgt.linear(x, w, b),
        "torch F.linear": lambda: torch.nn.functional.linear(x, w, b),
        "kgt.run (from the problem string)": lambda: kgt.run("gemm", args[1], [x, w, b], dtype="bfloat16"),
        "_launch": lambda: kgt._launch(*args, [x, w, b]),
        "_launch_checked (every input checked)": lambda: kgt._launch_checked(*args, [x, w, b]),
        "_current_stream": lambda: kgt._current_stream(dev),
        "_plain": lambda: kgt._plain([x, w, b]),
        "_outputs (torch.empty)": lambda: kgt._outputs(*args, dev),
        "x.device": lambda: x.device,
        "x.get_device()": lambda: x.get_device(),
        "torch.cuda.current_stream(dev).cuda_stream": lambda: torch.cuda.current_stream(dev).cuda_stream,
        "torch._C._cuda_getCurrentRawStream(0)": lambda: torch._C._cuda_getCurrentRawStream(0),
        "Prepared(stream=, **arrays)": lambda: prep(stream=stream, **arrays),
        "Arguments.read": lambda: prep._arguments.read(arrays),
        "Bound.enqueue": lambda: prep.bound.enqueue(addresses, stream),
        "[t.contiguous() for 3]": lambda: [t.contiguous() for t in (x, w, b)],
        "[t.data_ptr() for 3]": lambda: [t.data_ptr() for t in (x, w, b)],
        "x.reshape(64, 128)": lambda: x.reshape(64, 128),
    }
    for name, fn in parts.items():
        print(f"{name:48s} {per_call_us(fn, 3000):7.2f} us")
    # the Hopper attention kernel (b4 h40 s128 d64: 160 blocks) on two QKV buffers in turn, so its TMA descriptors'
    # addresses change every call: each encoded again (KEPT = 1, as before they were kept), or copied back
    for kept, seq in ((1, 128), (gpu._TensorMapSlot.KEPT, 136)):
        gpu._TensorMapSlot.KEPT = kept             # a fresh shape: its slots start empty
        qkvs = [torch.randn(4, seq, 3 * 40 * 64, device="cuda", dtype=bf) for _ in range(2)]
        views = [[t.view(4, seq, 40, 64).transpose(1, 2) for t in qkv.split(40 * 64, dim=-1)] for qkv in qkvs]
        turn = iter(range(10 ** 9))
        call = lambda: kgt.attention(*views[next(turn) & 1], causal=True)
        print(f"{f'kgt.attention, two buffers in turn, kept {kept}':48s} {per_call_us(call, 3000):7.2f} us")


if __name__ == "__main__":
    main()
