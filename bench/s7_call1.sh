# Seventh session's device calls: the transformer blocks, then the gpu tests of the fused epilogues.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
PT="python3 -m pytest -q -m gpu -p no:cacheprovider"
for c in gpt2-small 7b; do for d in float32 bfloat16; do
  timeout 75 python3 -m kernelgen.cli bench transformer --size $c --dtype $d --markdown > $OUT/transformer_${c}_$d.md 2>&1; done; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  for f in tests/test_gemm_persistent.py "tests/test_fusion.py tests/test_op_elementwise.py" tests/test_half_ops.py "tests/test_transformer.py tests/test_torch_ops.py"; do
    echo "## $f"; timeout 150 $PT $f 2>&1 | tail -6; done; } > $OUT/gpu_tests.txt 2>&1
ls $OUT
