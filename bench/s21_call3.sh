# Twenty-first session, call 3: tf32x3 attention with S's products summed apart: errors against torch's fp32 kernels,
# the picks' times, one launch under ncu (issue slots, stalls), the GPU tests, the fp32 blocks.   bash bench/s21_call3.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 100 python3 bench/attention_x3_error.py 2>&1 | tail -4
for s in "batch=1,heads=32,seq=2048,head_dim=128,causal=1,layout=packed" "batch=8,heads=12,seq=1024,head_dim=64,causal=1,layout=packed"; do
  timeout 100 python3 -m kernelgen bench attention --dtype tf32x3 --size "$s" --reps 20 2>&1 | grep -v -i warn | tail -3 | cut -c1-150
done
timeout 120 python3 -m kernelgen profile attention --dtype tf32x3 --size "batch=1,heads=32,seq=2048,head_dim=128,causal=1,layout=packed" \
  -k algo=flash_mma -k bq=128 -k wq=16 -k bk=32 -k dmax=128 -k qreg=False -k epilogue=direct -k min_blocks=1 > $OUT/profile_x3_7b.txt 2>&1
tail -40 $OUT/profile_x3_7b.txt
timeout 120 python3 -m pytest -q -m gpu tests/test_op_attention_tf32x3.py tests/test_gemm_tf32.py tests/test_torch_ops.py tests/test_transformer.py -n 4 > $OUT/gpu_tests.txt 2>&1
grep -E "^E   |passed|failed" $OUT/gpu_tests.txt | tail -8
for s in 7b gpt2-small; do
  timeout 150 python3 -m kernelgen bench transformer --size $s --dtype float32 --markdown --breakdown > $OUT/transformer_${s}_float32.md 2>&1
  sed -n 3,40p $OUT/transformer_${s}_float32.md
done
