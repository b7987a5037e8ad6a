"""Per-kernel GPU time of the 7B bf16 block, eager against replayed from a CUDA graph (torch.profiler, 20 passes
each): where a graph replay is slower than eager launches.
    PYTHONPATH=. python3 bench/s17_graph_kernels.py > $OUT/s17_graph_kernels.txt"""
import sys
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

from kernelgen import transformer as tf

dtype = sys.argv[1] if len(sys.argv) > 1 else "bfloat16"
cfg = tf.config("7b")
x, p = tf.inputs(cfg, dtype)
block = tf.ours(dtype)
with torch.no_grad():
    run = lambda: block(x, p, cfg.heads)
    replay = tf._graphed(torch, run)
    for name, fn in (("eager", run), ("graph", replay)):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
        times = defaultdict(list)
        for e in prof.events():
            if e.device_type.name == "CUDA":
                times[e.name].append(e.device_time)
        total = sum(sum(v) for v in times.values()) / 20
        print(f"{name}: {total:.1f} us of kernels a pass")
        for k, v in sorted(times.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {sum(v) / len(v):9.1f} us x{len(v):3d}  {k[:110]}")
