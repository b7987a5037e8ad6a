# Sixteenth session: DeepBench's fp32 GEMM training list with the tile loads pinned to the top of the loop
# (__syncwarp after them: ptxas had sunk them to their stores in split-K NN/TN/TT tiles) and the thin-row cp.async
# families reading A as K vectors.   bash bench/s16_suite.sh "1 2"      bash bench/s16_suite.sh "3 4"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for i in $1; do
  timeout 290 python3 -m kernelgen.cli bench --suite deepbench-gemm-train --shard $i/4 --reps 10 --markdown \
    --json $OUT/gemm_suite_$i.json > $OUT/gemm_suite_$i.md 2>&1
done
grep -h "geometric" $OUT/*.md
