import cProfile, pstats, time, torch
from kernelgen import torch as kgt
bf = torch.bfloat16
x, w, b = (torch.randn(*s, device="cuda", dtype=bf) for s in ((64, 128), (256, 128), (256,)))
f = lambda: kgt.linear(x, w, b, epilogue="gelu(acc + bias)")
for _ in range(20): f()
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(100): f()
t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
print("host us", (t1 - t) / 100 * 1e6, "with sync", (t2 - t) / 100 * 1e6)
print(kgt.schedule_source("gemm", "M=64,N=256,K=128,layout=NT;epilogue=gelu(acc + bias)", "bfloat16"))
p = cProfile.Profile(); p.enable()
for _ in range(100): f()
torch.cuda.synchronize(); p.disable()
pstats.Stats(p).sort_stats("tottime").print_stats(12)
