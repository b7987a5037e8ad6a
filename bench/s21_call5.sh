# Twenty-first session, call 5: the GPU tests of attention (every kernel: the template now takes tf32x3 too), the
# tf32x3 GEMM, kernelgen.torch and the blocks; the fp32 blocks with the final picks.   bash bench/s21_call5.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 250 python3 -m pytest -q -m gpu tests/test_op_attention_tf32x3.py tests/test_op_attention_mma.py tests/test_op_attention.py \
  tests/test_attention_layouts.py tests/test_gemm_tf32.py tests/test_torch_ops.py tests/test_transformer.py -n 8 > $OUT/gpu_tests.txt 2>&1
grep -E "^E   |passed|failed" $OUT/gpu_tests.txt | tail -8
for s in 7b gpt2-small; do
  timeout 150 python3 -m kernelgen bench transformer --size $s --dtype float32 --markdown --breakdown > $OUT/transformer_${s}_float32.md 2>&1
  sed -n 3,40p $OUT/transformer_${s}_float32.md
done
