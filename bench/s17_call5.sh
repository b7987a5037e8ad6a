# Seventeenth session, call 5: the bf16 blocks (issue 15's bf16 targets) and the fp32 7B block on CUDA cores on the
# final code, and the tf32x3 probe (4096^3 against cuBLAS fp32, accuracy at 2048^3) with a stage's sums apart.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for s in 7b gpt2-small; do
  timeout 120 python3 -m kernelgen bench transformer --size $s --dtype bfloat16 --markdown > $OUT/transformer_${s}_bfloat16.md 2>&1
  sed -n 3,10p $OUT/transformer_${s}_bfloat16.md
done
timeout 150 python3 bench/tf32_probe.py --dtypes tf32x3 --best 1 --reps 10 2>&1 | tail -3
cat $OUT/tf32_probe.md | head -30
