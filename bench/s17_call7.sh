# Seventeenth session, call 7: eager calls without the dispatcher: host time a call, the bf16 blocks eager and in a
# CUDA graph, the fp32 7B block (CUDA cores and tf32x3), the GPU tests of kernelgen.torch and the block.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 100 python3 bench/s17_host_profile.py > $OUT/s17_host_profile_plain.txt 2>&1; head -24 $OUT/s17_host_profile_plain.txt | cut -c1-150
for s in 7b gpt2-small; do
  timeout 120 python3 -m kernelgen bench transformer --size $s --dtype bfloat16 --markdown > $OUT/transformer_${s}_bfloat16.md 2>&1
  sed -n 3,10p $OUT/transformer_${s}_bfloat16.md
done
timeout 120 python3 -m kernelgen bench transformer --size 7b --dtype float32 --markdown > $OUT/transformer_7b_float32.md 2>&1
sed -n 3,10p $OUT/transformer_7b_float32.md
timeout 200 python3 -m pytest -q -m gpu tests/test_torch_ops.py tests/test_transformer.py > $OUT/gpu_tests_torch.txt 2>&1
tail -3 $OUT/gpu_tests_torch.txt
