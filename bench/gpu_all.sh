#!/usr/bin/env bash
# One call on a GPU machine does it all: the gpu test tier, then every benchmark in benchmarks.txt
# (each compared with the vendor library in the same process). Results go to $OUT (or ./bench_out).
#   bench/gpu_all.sh [tests] [attention] [launch] [bench] [changed] [gemm] [half] [suites] [followup] [transformer] [prefetch] [fp16suite SECONDS I/N] [persistent SHAPES] [tune OP SIZE BUDGET]...
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/bench_out}; mkdir -p "$OUT"
K="python3 -m kernelgen.cli"
PT="python3 -m pytest -q -m gpu -p no:cacheprovider"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/device.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    tests) python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_ops_generic.py tests/test_gpu.py tests/test_half_ops.py tests/test_op_gemm.py tests/test_op_sgemm.py tests/test_op_attention.py tests/test_attention_layouts.py 2>&1 | tail -60 | tee "$OUT/gpu_tests.txt"; shift ;;
    bench)
      grep -v '^#' bench/benchmarks.txt | while read -r op size flags _; do
        [ -z "$op" ] && continue
        args=(); [ "$size" != "-" ] && args+=(--size "$size"); [ "$flags" != "-" ] && { IFS=+ read -ra extra <<< "$flags"; args+=("${extra[@]}"); }  # a+b: several flags
        [ -n "${KG_BEST:-}" ] && args+=(--best --db "$KG_BEST")
        echo "## $op $size"; $K bench "$op" "${args[@]}" --markdown --reps 30 2>&1; echo
      done | tee "$OUT/bench.md"; shift ;;
    attention) timeout 500 python3 bench/attention_probe.py 2>&1 | tail -80 | tee "$OUT/attention_probe.txt"; shift ;;
    launch) python3 bench/launch_overhead.py 2>&1 | tee "$OUT/launch.txt"; shift ;;
    tune) $K tune "$2" --size "$3" --strategy random --budget "$4" --db "$OUT/tuning.jsonl" --resume 2>&1 | tail -5 | tee -a "$OUT/tune.txt"; shift 4 ;;
    # Only what changed since the last full run: the sm_90a GEMM steps, half-precision transpose/GEMV,
    # the launch path; each file under its own time limit, so one hung kernel costs one file.
    changed)
      { timeout 150 $PT tests/test_op_gemm.py -k "hopper or wgmma"; timeout 150 $PT tests/test_half_transpose_gemv.py
        timeout 150 $PT tests/test_gpu.py tests/test_launch_args.py; } 2>&1 |
        grep -E "passed|failed|FAILED|Error" | tee "$OUT/gpu_tests_changed.txt"; shift ;;
    gemm)   # the tensor-core ladder at 4096^3 and 8192^3 (fp16) and 4096^3 (bf16), the heuristic at 8192^3 in bf16
      { for s in M=4096,N=4096,K=4096 M=8192,N=8192,K=8192; do timeout 200 $K bench gemm --size $s --dtype float16 --ladder --markdown --reps 20; done
        timeout 150 $K bench gemm --size M=4096,N=4096,K=4096 --dtype bfloat16 --ladder --markdown --reps 20
        timeout 60 $K bench gemm --size M=8192,N=8192,K=8192 --dtype bfloat16 --markdown --reps 20; } 2>&1 | tee "$OUT/gemm.md"; shift ;;
    half)   # the half-precision memory-bound ops at their benchmark sizes
      for o in transpose:M=8192,N=8192 gemv:M=8192,N=8192; do
        for d in float16 bfloat16; do timeout 60 $K bench ${o%%:*} --size ${o#*:} --dtype $d --markdown --reps 30; done
      done 2>&1 | tee "$OUT/half.md"; shift ;;
    suites) # the shape suites, each in parts under its own time limit; --json keeps every shape measured before a limit
      for s in deepbench-conv-train:3 deepbench-gemm-train:4 llm-layers:4; do n=${s#*:}
        for i in $(seq 1 "$n"); do timeout 280 $K bench --suite "${s%%:*}" --shard "$i/$n" --reps 10 --markdown \
          --json "$OUT/${s%%:*}_$i.json" > "$OUT/${s%%:*}_$i.md" 2>/dev/null; tail -3 "$OUT/${s%%:*}_$i.md"; done
      done; shift ;;
    followup) # what the 2026-11-23 third session built after its last device call: the wgmma launchers in the C++
      # client, the device-side float64 reference, the fp16 long-row layer norm, the recalibrated picks
      { ( cd examples/launcher && make -s clean && make -s -j8 ARCH=sm_90a PYTHON=python3 >/dev/null && ./client | tail -4 )
        timeout 200 $PT tests/test_layouts.py tests/test_rows.py tests/test_recipe.py -k "reference or long_rows or wgmma or example"
        for s in M=8457,N=35,K=4096,layout=NT M=700,N=1024,K=512 M=8,N=512,K=500000,layout=NT M=128,N=3072,K=1024,layout=NT; do
          timeout 60 $K bench sgemm --size $s --markdown --reps 10 | grep -E "heuristic|default|vendor:"; done
        for s in rows=4096,cols=128256 rows=1,cols=32000; do timeout 60 $K bench softmax --size $s --markdown | grep -E "heuristic|vendor:"; done
        timeout 60 $K bench transpose --size M=12345,N=6789 --markdown | grep -E "heuristic|vendor:"; } 2>&1 | tee "$OUT/followup.txt"; shift ;;
    transformer) # the GPT-2-style block (issue 15): its gpu tests, then GPT-2 small and the 7B layer against PyTorch eager
      # and torch.compile, fp32 and bf16 (a type kernelgen's attention does not take yet says so in one line)
      { timeout 300 $PT tests/test_transformer.py tests/test_torch_ops.py tests/test_layernorm_residual.py
        for c in gpt2-small 7b; do for d in float32 bfloat16; do echo "## transformer $c $d"
          timeout 280 $K bench transformer --size $c --dtype $d --markdown --breakdown --json "$OUT/transformer_${c}_$d.json"; echo; done; done
      } 2>&1 | tee "$OUT/transformer.md"; shift ;;
    prefetch) # the prefetch ladder and sweep (issue 18) and the GPU tests of prefetch and any-alignment rows
      { timeout 170 python3 bench/prefetch_probe.py --sweep --budget-s 120
        timeout 80 $PT tests/test_prefetch.py; timeout 80 $PT tests/test_rows_anyalign.py; } 2>&1 | tail -60 | tee "$OUT/prefetch.txt"; shift ;;
    fp16suite) # DeepBench's GEMM list in fp16 on the tensor-core gemm, the first of four parts (--json keeps what finished)
      timeout "${2}" $K bench --suite deepbench-gemm-train-fp16 --shard "$3" --reps 10 --markdown \
        --json "$OUT/gemm_fp16_suite_${3%/*}.json" > "$OUT/gemm_fp16_suite_${3%/*}.md" 2>/dev/null; tail -3 "$OUT/gemm_fp16_suite_${3%/*}.md"; shift 3 ;;
    persistent) # persistent wgmma blocks (issues 12, 15): their GPU tests and the Hopper ladder's, then the shapes
      # probe (every tile family, persistent ones included, against cuBLAS) at the shapes given
      { timeout 200 $PT tests/test_gemm_persistent.py tests/test_op_gemm.py -k "persistent or hopper_steps_on_the_gpu"
        timeout 330 python3 bench/gemm_shapes_probe.py --shapes "$2" --deadline 220; } 2>&1 | tee "$OUT/persistent.txt"; shift 2 ;;
    *) echo "unknown step $1"; exit 2 ;;
  esac
done
