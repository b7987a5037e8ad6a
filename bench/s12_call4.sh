# Twelfth session, fourth device call: the GPU tests of the changed ops (call 2's run failed 23 of them; call 3's
# rerun of test_layouts alone passed), then the transformer blocks in fp32 (the SGEMM twins and padding, the fp32
# attention's grid order).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{ date -u; timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_op_sgemm.py tests/test_layouts.py tests/test_op_attention.py --tb=line 2>&1 | grep -v -i "warn" | tail -40; nvidia-smi --query-gpu=memory.used --format=csv; } > $OUT/gpu_tests.txt 2>&1
for s in 7b gpt2-small; do
  timeout 100 python3 -m kernelgen.cli bench transformer --size $s --dtype float32 --markdown --breakdown 2>&1 | grep -vi warn > $OUT/transformer_${s}_float32.md; done
ls $OUT
