# Fourteenth session, call 4: the fitted SGEMM tiles on their suite (bench/suites/sgemm_fitted.txt, default
# schedules against cuBLAS, run twice) and the GPU tests of the files they touch.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for i in 1 2; do
  timeout 200 python3 -m kernelgen.cli bench --suite bench/suites/sgemm_fitted.txt --reps 20 --markdown \
    --json $OUT/sgemm_fitted_suite_$i.json > $OUT/sgemm_fitted_suite_$i.md 2>&1
done
timeout 300 python3 -m pytest -q -m gpu tests/test_op_sgemm.py tests/test_layouts.py -p no:cacheprovider \
  > $OUT/gpu_tests.txt 2>&1
tail -3 $OUT/gpu_tests.txt; grep -h "geometric" $OUT/*.md
