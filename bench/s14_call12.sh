# Fourteenth session, call 12: the final code's default schedules on the two suites of shapes in no list that
# this session's SGEMM families touch (bench/suites/sgemm_fitted.txt, bench/suites/sgemm_thin_rows.txt).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for s in sgemm_fitted sgemm_thin_rows; do
  timeout 280 python3 -m kernelgen.cli bench --suite bench/suites/$s.txt --reps 20 --markdown \
    --json $OUT/${s}_final.json > $OUT/${s}_final.md 2>&1
done
grep -h "geometric" $OUT/*.md
