"""Draw bench/fp32_choice_probe.py's table: each DeepBench fp32 GEMM's speed against cuBLAS SGEMM on sgemm (CUDA
cores), on dmma (fp64 tensor cores) and as kernelgen.torch.linear's decision takes it, shapes ordered by their flops.

    python3 bench/fp32_choice_chart.py bench_results/2026-11-29-s22/call6_fp32_choice_deepbench.md docs/charts/fp32_choice_deepbench.png

Needs matplotlib (kernelgen[plot]).
"""
import re
import sys


def rows(path):
    """(flops, sgemm/cuBLAS, dmma/cuBLAS, decision) per table row of the probe's Markdown."""
    out = []
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 8 or not cells[0].startswith("M="):
            continue
        size = dict(re.findall(r"([MNK])=(\d+)", cells[0]))
        flops = 2.0 * int(size["M"]) * int(size["N"]) * int(size["K"])
        out.append((flops, float(cells[4]), float(cells[5]), cells[6]))
    return sorted(out)


def main(src, dst):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    data = rows(src)
    x = list(range(len(data)))
    fig, ax = plt.subplots(figsize=(11, 4.2), dpi=120)
    ax.scatter(x, [r[1] for r in data], s=10, label="sgemm (CUDA cores, FFMA)", color="tab:blue", alpha=0.7)
    ax.scatter(x, [r[2] for r in data], s=10, label="gemm dmma (fp64 tensor cores)", color="tab:orange", alpha=0.7)
    ax.plot(x, [r[2] if r[3] == "dmma" else r[1] for r in data], color="black", lw=0.8,
            label="kgt.linear's float32 default (the cost models' pick)")
    ax.axhline(1.0, color="gray", ls="--", lw=0.8)
    ax.set_xlabel(f"DeepBench's {len(data)} fp32 training GEMMs, by flops (small to large)")
    ax.set_ylabel("speed / cuBLAS SGEMM (TF32 off)")
    ax.set_title("fp32 GEMMs on an H200: CUDA cores or fp64 tensor cores (2026-11-29)")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst)
    print(dst)


if __name__ == "__main__":
    main(*sys.argv[1:3])
