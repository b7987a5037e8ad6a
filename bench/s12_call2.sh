# Twelfth session, second device call: kernel twins that keep each operand's vectors where its own rows allow
# (sgemm), and the fp32 attention grid in the order that balances a causal grid; each against the session's
# starting tree (feef9dd, files in ab_old/) in the same call. Then the GPU tests of both.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
rm -rf /tmp/old && cp -r . /tmp/old && cp -r ab_old/. /tmp/old/
S="--suite bench/suites/sgemm_unaligned_rows.txt --reps 20 --markdown"
{ date -u
  for t in old new old new; do
    d=$([ $t = old ] && echo /tmp/old || echo $PWD)
    echo "## sgemm $t"; (cd $d && PYTHONPATH=$d KERNELGEN_CACHE_DIR=/tmp/kc_$t timeout 200 python3 -m kernelgen.cli bench --suite $PWD/bench/suites/sgemm_unaligned_rows.txt --reps 20 --markdown 2>&1 | grep -v -i warn)
  done; } > $OUT/sgemm_unaligned_rows.md 2>&1
{ date -u
  for t in old new old new; do
    d=$([ $t = old ] && echo /tmp/old || echo $PWD)
    for size in batch=1,heads=32,seq=2048,head_dim=128,causal=1 batch=8,heads=16,seq=2048,head_dim=64,causal=1 batch=8,heads=16,seq=2048,head_dim=64; do
      echo "## attention fp32 $t $size"; (cd $d && PYTHONPATH=$d KERNELGEN_CACHE_DIR=/tmp/kc_$t timeout 120 python3 -m kernelgen.cli bench attention --size $size --reps 20 --markdown 2>&1 | grep -v -i warn | tail -3)
    done
  done; } > $OUT/attention_fp32_order.md 2>&1
{ date -u; timeout 280 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_op_sgemm.py tests/test_layouts.py tests/test_op_attention.py 2>&1 | tail -8; } > $OUT/gpu_tests.txt 2>&1
ls $OUT
