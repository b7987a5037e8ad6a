# Seventeenth session, call 9: a call's Prepared and signature cached by its strings: host time a call, the bf16
# blocks (eager and in a CUDA graph), the GPU tests of kernelgen.torch.   bash bench/s17_call9.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 100 python3 bench/s17_host_profile.py > $OUT/s17_host_profile_cached.txt 2>&1; head -22 $OUT/s17_host_profile_cached.txt | cut -c1-150
for s in gpt2-small 7b; do
  timeout 120 python3 -m kernelgen bench transformer --size $s --dtype bfloat16 --markdown > $OUT/transformer_${s}_bfloat16_cached.md 2>&1
  sed -n 5,10p $OUT/transformer_${s}_bfloat16_cached.md
done
timeout 200 python3 -m pytest -q -m gpu tests/test_torch_ops.py > $OUT/gpu_tests_torch_cached.txt 2>&1
tail -2 $OUT/gpu_tests_torch_cached.txt
