# Twentieth session, call 9: the stream-K suite rows again after its slots became the blocks an SM holds, and the
# stream-K GPU tests.   bash bench/s20_call9.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 60 python3 -m pytest -q -x -m gpu tests/test_sgemm_stream_k.py 2>&1 | tail -1 | tee $OUT/gpu_tests_stream_k_slots.txt
timeout 200 python3 -m kernelgen.cli bench --suite bench/suites/sgemm_stream_k_picks.txt --reps 10 --markdown \
  --json $OUT/s20_suite_stream_k_slots.json > $OUT/s20_suite_stream_k_slots.md 2>&1
grep "^|\|geometric" $OUT/s20_suite_stream_k_slots.md | cut -c1-110
