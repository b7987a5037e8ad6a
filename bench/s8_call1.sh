# Eighth session, call 1: instruction ceilings (mma.sync, FFMA); the half-precision memory-bound ops at
# their benchmark shapes under the default timing (and events) beside the vendor.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
  timeout 120 python3 bench/mma_peak.py; } > $OUT/mma_peak.md 2>&1
{ date -u
  for op in softmax layernorm elementwise; do for d in float16 bfloat16; do
    for t in auto events; do echo "## $op $d timing $t"
      timeout 90 python3 -m kernelgen.cli bench $op --dtype $d --timing $t --markdown 2>&1 | tail -8; done; done; done
} > $OUT/half_ops_bench.md 2>&1
ls $OUT
