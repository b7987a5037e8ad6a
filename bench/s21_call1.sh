# Twenty-first session, call 1: attention on fp32 data in 3xTF32 (tf32x3) against torch's fp32 SDPA kernels at the
# blocks' shapes, its GPU tests, and the fp32 blocks whose attention now multiplies as torch's does.
#   bash bench/s21_call1.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
timeout 300 python3 bench/attention_probe.py --tf32x3 > $OUT/attention_probe_x3.log 2>&1; tail -3 $OUT/attention_probe_x3.log
cut -d'|' -f2-5,7 $OUT/attention_probe_x3.md
timeout 120 python3 -m pytest -q -x -m gpu tests/test_op_attention_tf32x3.py tests/test_torch_ops.py tests/test_transformer.py -n 4 > $OUT/gpu_tests.txt 2>&1
tail -3 $OUT/gpu_tests.txt
for s in 7b gpt2-small; do
  timeout 150 python3 -m kernelgen bench transformer --size $s --dtype float32 --markdown --breakdown > $OUT/transformer_${s}_float32.md 2>&1
  sed -n 3,40p $OUT/transformer_${s}_float32.md
done
