# DeepBench's fp32 GEMM training list on the current code (first written for the fourteenth session's fitted tiles and the
# thin-row cp.async families), as the twelfth session's gemm_suite_{1..4}.md:
#   bash bench/s14_suite.sh "1 2"      bash bench/s14_suite.sh "3 4"      (or all four in one call: "1 2 3 4")
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for i in $1; do
  timeout 290 python3 -m kernelgen.cli bench --suite deepbench-gemm-train --shard $i/4 --reps 10 --markdown \
    --json $OUT/gemm_suite_$i.json > $OUT/gemm_suite_$i.md 2>&1
done
grep -h "geometric" $OUT/*.md
