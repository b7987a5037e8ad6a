"""The 7B and GPT-2 blocks' four GEMMs (x . W^T with their epilogues) in tf32x3 and in sgemm against float64, beside
torch's fp32 (TF32 off): norm-relative and largest element errors, to place the tf32x3 block's error.
    PYTHONPATH=. python3 bench/s17_tf32x3_error.py > $OUT/s17_tf32x3_error.md"""
import torch

from kernelgen import torch as kgt

torch.backends.cuda.matmul.allow_tf32 = False
SHAPES = {"7b": (2048, 4096), "gpt2-small": (8192, 768)}


def main():
    g = torch.Generator(device="cpu").manual_seed(0)
    print("| block | GEMM | M x N x K | path | rel. error (norm) | max abs error / max abs ref |")
    print("|---|---|---|---|---|---|")
    for name, (m, d) in SHAPES.items():
        for gemm, n, k, ep in (("QKV", 3 * d, d, None), ("out-proj", d, d, "res"), ("MLP up", 4 * d, d, "gelu"),
                               ("MLP down", d, 4 * d, "res")):
            x = torch.randn(m, k, generator=g).cuda()
            w = (torch.randn(n, k, generator=g) / k ** 0.5).cuda()
            b = (torch.randn(n, generator=g) * 0.1).cuda()
            r = torch.randn(m, n, generator=g).cuda() if ep == "res" else None
            ref = torch.nn.functional.linear(x.double(), w.double(), b.double())
            ref = torch.nn.functional.gelu(ref, approximate="tanh") if ep == "gelu" else ref
            ref = ref + r.double() if ep == "res" else ref
            kw = dict(epilogue="gelu(acc + bias)") if ep == "gelu" else dict(residual=r) if ep == "res" else {}
            runs = {"kernelgen tf32x3": kgt.linear(x, w, b, dtype="tf32x3", **kw), "kernelgen sgemm": kgt.linear(x, w, b, **kw)}
            t = torch.nn.functional.linear(x, w, b)
            t = torch.nn.functional.gelu(t, approximate="tanh") if ep == "gelu" else t
            runs["torch fp32"] = t + r if ep == "res" else t
            for path, y in runs.items():
                e = (y.double() - ref)
                print(f"| {name} | {gemm} | {m} x {n} x {k} | {path} | {float(e.norm() / ref.norm()):.2e} | "
                      f"{float(e.abs().max() / ref.abs().max()):.2e} |", flush=True)


if __name__ == "__main__":
    main()
