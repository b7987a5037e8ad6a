# Fifteenth session: the fp32 attention with O's float4s interleaved: its GPU tests, then the fp32 transformer
# blocks (7B-class layer and GPT-2 small) with the per-stage breakdown.   bash bench/s15_attention_call.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{ date -u; timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_op_attention.py \
    tests/test_attention_layouts.py --tb=line 2>&1 | grep -v -i "warn" | tail -30; } > $OUT/gpu_tests_attention.txt 2>&1
for s in 7b gpt2-small; do
  timeout 110 python3 -m kernelgen.cli bench transformer --size $s --dtype float32 --markdown --breakdown 2>&1 \
    | grep -vi warn > $OUT/transformer_${s}_float32.md; done
tail -3 $OUT/gpu_tests_attention.txt; grep -h "^| kernelgen\|^| PyTorch\|^| torch.compile\|attention\|^| total" $OUT/transformer_*.md
