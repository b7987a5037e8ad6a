"""Time the five kernels through their C launchers (`./client --time`) and through `kernelgen bench` (same
schedules, same sizes, `--timing events`: one launch between CUDA events, L2 flushed, median of 30) in the
same process tree, and check that the two agree within 3%. Run on a GPU from this folder after `make`:

    python compare_with_bench.py            # exit 1 when a kernel differs by more than 3% or is not the same kernel
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# The schedules the Makefile emits (its `build/.emitted` rule), as `kernelgen bench` options.
# conv2d names its algorithm: with no knob, bench takes schedule_for's tiling, not the default the Makefile emits.
KNOBS = {"sgemm": [], "sgemm_sk": ["-k", "split_k=2"], "reduce_sum": [], "conv2d": ["-k", "algo=implicit"],
         "softmax": ["-k", "threads=128", "-k", "algo=split", "-k", "l2_batch_mb=16"]}
TOLERANCE = 0.03


def which(kernel: str) -> tuple[str, list[str]]:
    op = next(o for o in ("sgemm", "reduce_sum", "softmax", "conv2d") if kernel.startswith(o + "_"))
    return op, KNOBS["sgemm_sk" if op == "sgemm" and "_sk" in kernel else op]


def same_arch_free(name: str) -> str:
    """The name without its arch tag: an H100 is sm_90a to kernelgen, and the Makefile builds for sm_90 by default."""
    return re.sub(r"_sm\d+a?_", "_", name, count=1)


def bench_us(op: str, size: str, knobs: list[str], kernel: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        subprocess.run([sys.executable, "-m", "kernelgen.cli", "bench", op, "--size", size, *knobs, "--timing",
                        "events", "--reps", "30", "--json", str(out)], check=True, stdout=subprocess.DEVNULL)
        (row,) = [r for r in json.loads(out.read_text())["runs"][0]["rows"] if not r["vendor"]]
    if same_arch_free(row["kernel"]) != same_arch_free(kernel):
        sys.exit(f"kernelgen bench timed {row['kernel']}, not the client's {kernel}: the Makefile's knobs drifted")
    return row["time_us"]


def main() -> int:
    lines = subprocess.run(["./client", "--time"], check=True, capture_output=True, text=True).stdout.splitlines()
    worst = 0.0
    for line in (t for t in lines if t.startswith("time ")):
        _, kernel, size, us, _unit = line.split()
        op, knobs = which(kernel)
        ours = bench_us(op, size, knobs, kernel)
        diff = float(us) / ours - 1
        worst = max(worst, abs(diff))
        print(f"{op:10s} {size:52s} launcher {float(us):9.1f} us  kernelgen bench {ours:9.1f} us  {diff:+.1%}")
    print(f"largest difference {worst:.1%} (tolerance {TOLERANCE:.0%})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
