#!/usr/bin/env bash
# One call on a GPU machine does it all: the gpu test tier, then every benchmark in benchmarks.txt
# (each compared with the vendor library in the same process). Results go to $OUT (or ./bench_out).
#   bench/gpu_all.sh [tests] [launch] [bench] [tune OP SIZE BUDGET]...
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/bench_out}; mkdir -p "$OUT"
K="python3 -m kernelgen.cli"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/device.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    tests) python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ops_generic.py tests/test_gpu.py tests/test_half_ops.py tests/test_op_gemm.py tests/test_op_sgemm.py 2>&1 | tail -60 | tee "$OUT/gpu_tests.txt"; shift ;;
    bench)
      grep -v '^#' bench/benchmarks.txt | while read -r op size flags _; do
        [ -z "$op" ] && continue
        args=(); [ "$size" != "-" ] && args+=(--size "$size"); [ "$flags" != "-" ] && { IFS=+ read -ra extra <<< "$flags"; args+=("${extra[@]}"); }  # a+b: several flags
        [ -n "${KG_BEST:-}" ] && args+=(--best --db "$KG_BEST")
        echo "## $op $size"; $K bench "$op" "${args[@]}" --markdown --reps 30 2>&1; echo
      done | tee "$OUT/bench.md"; shift ;;
    launch) python3 bench/launch_overhead.py 2>&1 | tee "$OUT/launch.txt"; shift ;;
    tune) $K tune "$2" --size "$3" --strategy random --budget "$4" --db "$OUT/tuning.jsonl" --resume 2>&1 | tail -5 | tee -a "$OUT/tune.txt"; shift 4 ;;
    *) echo "unknown step $1"; exit 2 ;;
  esac
done
