# Ninth session, last call: the GPU test tier of what changed (the tensor-core gemm's unrolled pipeline, attention's
# shared copies, the timing rule) on the final code.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  timeout 540 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests/test_op_gemm.py tests/test_gemm_shapes.py \
    tests/test_op_attention_mma.py tests/test_gpu.py tests/test_half_ops.py 2>&1 | tail -15; date -u; } > $OUT/gpu_tests_s9.txt
cat $OUT/gpu_tests_s9.txt
