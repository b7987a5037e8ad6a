# Ninth session: the L2 flush's bias under events (bench/flush_probe.py) and the half-precision memory-bound
# ops at their benchmark shapes under the default timing (now graph replays below 8 L2s moved) beside the vendor.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
  timeout 120 python3 bench/flush_probe.py; } > $OUT/flush_probe.md 2>&1
{ date -u
  for op in softmax layernorm elementwise; do for d in float16 bfloat16; do
    echo "## $op $d (default timing)"
    timeout 100 python3 -m kernelgen.cli bench $op --dtype $d --markdown 2>&1 | tail -7; done; done
} > $OUT/half_ops_bench.md 2>&1
ls $OUT
