# Seventeenth session, call 4: tf32x3 with a stage's products summed apart: the GEMM errors beside sgemm and torch,
# the 7B and GPT-2 small blocks in tf32x3 (PyTorch fp32, TF32 off, in the same run), the GPU tests.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 120 python3 bench/s17_tf32x3_error.py > $OUT/s17_tf32x3_error_summed.md 2>&1; cat $OUT/s17_tf32x3_error_summed.md
timeout 150 python3 -m kernelgen bench transformer --size 7b --dtype tf32x3 --breakdown --markdown \
  > $OUT/transformer_7b_tf32x3.md 2>&1
tail -30 $OUT/transformer_7b_tf32x3.md
timeout 90 python3 -m kernelgen bench transformer --size gpt2-small --dtype tf32x3 --breakdown --markdown \
  > $OUT/transformer_gpt2-small_tf32x3.md 2>&1
head -12 $OUT/transformer_gpt2-small_tf32x3.md
timeout 200 python3 -m pytest -q -m gpu tests/test_gemm_tf32.py tests/test_transformer.py tests/test_torch_ops.py \
  > $OUT/gpu_tests_tf32x3.txt 2>&1
tail -4 $OUT/gpu_tests_tf32x3.txt
