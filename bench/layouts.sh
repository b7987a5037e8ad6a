#!/usr/bin/env bash
# GEMM operand layouts on a GPU: the gpu tests of tests/test_layouts.py, then sgemm (fp32) and gemm (fp16,
# bf16) in each layout against cuBLAS on the same stored arrays (transposed views), each on its heuristic.
# Results go to $OUT (or ./bench_out).      bench/layouts.sh [tests] [bench] [SIZE]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/bench_out}; mkdir -p "$OUT"
K="python3 -m kernelgen.cli"
SIZE=4096,4096,4096
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/device.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    tests) for k in test_sgemm "test_gemm_layouts or heuristics or vendor" wgmma; do timeout 550 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_layouts.py -k "$k" 2>&1 | tail -20; done |
             tee "$OUT/layout_tests.txt"; shift ;;
    bench)
      for layout in NN NT TN TT; do
        for d in "sgemm" "gemm --dtype float16" "gemm --dtype bfloat16"; do
          echo "## $d --size $SIZE --layout $layout"; $K bench $d --size "$SIZE" --layout "$layout" --markdown --reps 30 2>&1; echo
        done
      done | tee "$OUT/layout_bench.md"; shift ;;
    *) SIZE=$1; shift ;;
  esac
done
