"""fp32 attention's error against the float64 reference, each kernel on the same inputs: kernelgen's tf32x3 pick (3xTF32
on tensor cores), kernelgen's float32 pick (CUDA cores), torch SDPA's efficient (CUTLASS, 3xTF32) and math (TF32 off)
backends. Relative L2 error of O (the op's measure), a few seeds each.

    PYTHONPATH=. python3 bench/attention_x3_error.py      # GPU; writes $OUT/attention_x3_error.md
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen import gpu                                  # noqa: E402
from kernelgen.ops import get_op                           # noqa: E402
from kernelgen.prepared import prepare                     # noqa: E402
from kernelgen.validate import execute                     # noqa: E402

SHAPES = ("batch=1,heads=32,seq=2048,head_dim=128,causal=1", "batch=8,heads=12,seq=1024,head_dim=64,causal=1",
          "batch=1,heads=2,seq_q=64,seq_k=8192,head_dim=128", "batch=1,heads=2,seq_q=64,seq_k=512,head_dim=128")
SEEDS = (1, 2, 3)


def torch_error(op, problem, inputs, ref, backend) -> float:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch.backends.cuda.matmul.allow_tf32 = False
    q, k, v = (torch.as_tensor(inputs[n], device="cuda") for n in ("Q", "K", "V"))
    with sdpa_kernel(getattr(SDPBackend, backend)):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(problem["causal"]))
    return op.error("O", o.double().cpu().numpy(), ref, inputs, problem)


def main() -> None:
    import cupy
    from kernelgen.sizes import parse_size
    gpu.require()
    op = get_op("attention")
    out = Path(os.environ.get("OUT", "bench_out"))
    out.mkdir(parents=True, exist_ok=True)
    md = [f"# fp32 attention error against float64 on {gpu.device().gpu} (relative L2 of O; seeds {SEEDS})", "",
          "| problem | kernelgen tf32x3 | kernelgen float32 | torch SDPA efficient fp32 | torch SDPA math fp32 |",
          "|---|---|---|---|---|"]
    for text in SHAPES:
        errs = {n: [] for n in ("tf32x3", "float32", "EFFICIENT_ATTENTION", "MATH")}
        for seed in SEEDS:
            p32 = parse_size(op, text, False, "float32")
            inputs = op.make_inputs(p32, np.random.default_rng(seed))
            ref = cupy.asnumpy(op.reference({n: cupy.asarray(a) for n, a in inputs.items()}, p32, xp=cupy)["O"])
            for dt in ("tf32x3", "float32"):
                p = parse_size(op, text, False, dt)
                o = execute(prepare(op, op.schedule_for(p), p, gpu.device()), inputs, "gpu")["O"]
                errs[dt].append(op.error("O", np.asarray(o, dtype=np.float64), ref, inputs, p))
            for backend in ("EFFICIENT_ATTENTION", "MATH"):
                errs[backend].append(torch_error(op, p32, inputs, ref, backend))
        md.append(f"| {text} | " + " | ".join(f"{min(e):.2e} - {max(e):.2e}" for e in errs.values()) + " |")
        print(md[-1], flush=True)
    (out / "attention_x3_error.md").write_text("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
