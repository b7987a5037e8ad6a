"""Host time of one kernelgen.torch call (eager): the wall time a call of linear / layer_norm / attention at a tiny
size (the GPU idle), and cProfile's top entries over 300 calls of linear. One GPU call:
    PYTHONPATH=. python3 bench/s17_host_profile.py > $OUT/s17_host_profile.txt"""
import cProfile
import pstats
import time

import torch

from kernelgen import torch as kgt


def per_call_us(fn, n=300):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def main():
    bf = torch.bfloat16
    x, w, b = (torch.randn(*s, device="cuda", dtype=bf) for s in ((64, 128), (256, 128), (256,)))
    g, be = torch.ones(128, device="cuda", dtype=bf), torch.zeros(128, device="cuda", dtype=bf)
    q = torch.randn(1, 2, 64, 64, device="cuda", dtype=bf)
    calls = {"linear bias": lambda: kgt.linear(x, w, b), "linear gelu": lambda: kgt.linear(x, w, b, epilogue="gelu(acc + bias)"),
             "layer_norm": lambda: kgt.layer_norm(x, g, be), "attention": lambda: kgt.attention(q, q, q, causal=True),
             "torch linear": lambda: torch.nn.functional.linear(x, w, b)}
    for name, fn in calls.items():
        print(f"{name}: {per_call_us(fn):.1f} us a call")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(300):
        kgt.linear(x, w, b)
    torch.cuda.synchronize()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
