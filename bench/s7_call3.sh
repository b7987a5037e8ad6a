# Seventh session, third device call: attention's launch order on the 7B shape, the 16-bit gelu test, the 7B block.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
PT="python3 -m pytest -q -m gpu -p no:cacheprovider"
K="python3 -m kernelgen.cli"
{ date -u; for a in "batch=1,heads=32,seq=2048,head_dim=128,causal=1" "batch=8,heads=16,seq=2048,head_dim=64,causal=1" "batch=8,heads=16,seq=2048,head_dim=64" "batch=8,heads=16,seq=2048,head_dim=128,causal=1"; do
  echo "## attention $a bf16"; timeout 60 $K bench attention --size $a --dtype bfloat16 --markdown --reps 30 2>&1 | grep -v -i warn | tail -6; done; } > $OUT/attention.md 2>&1
{ timeout 120 $PT tests/test_half_ops.py -k "last_step" 2>&1 | tail -4
  timeout 200 $PT tests/test_op_attention_mma.py tests/test_attention_layouts.py 2>&1 | tail -4; } > $OUT/gpu_tests.txt 2>&1
timeout 80 python3 bench/epilogue_probe.py 2048,16384,4096:NT 20 gemm > $OUT/epp.log 2>&1
timeout 80 $K bench transformer --size 7b --dtype bfloat16 --markdown 2>&1 | grep -v -i warn > $OUT/transformer_7b_bfloat16.md
ls $OUT
