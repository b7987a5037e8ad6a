# Twentieth session, call 8: every third DeepBench fp32 GEMM row on which schedule_for takes stream-K, validated and
# timed against cuBLAS in the same run (compare: bench_results/2026-11-25-s16/suite_final/, the picks before it).
#   bash bench/s20_call8.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 330 python3 -m kernelgen.cli bench --suite bench/suites/sgemm_stream_k_picks.txt --reps 10 --markdown \
  --json $OUT/s20_suite_stream_k.json > $OUT/s20_suite_stream_k.md 2>&1
grep "^|\|geometric" $OUT/s20_suite_stream_k.md | cut -c1-110
