# Twelfth session, calls 5 and 6: DeepBench's fp32 GEMM training list on the session's code (as the eleventh
# session's gemm_suite_{1..4}.md): bash bench/s12_call5.sh "1 2" and bash bench/s12_call5.sh "3 4".
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for i in $1; do
  timeout 290 python3 -m kernelgen.cli bench --suite deepbench-gemm-train --shard $i/4 --reps 10 --markdown --json $OUT/gemm_suite_$i.json 2>&1 | grep -v -i "warn\|^suite deepbench-gemm-train \[" > $OUT/gemm_suite_$i.md
done
ls $OUT
