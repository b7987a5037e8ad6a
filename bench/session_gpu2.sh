set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
( cd examples/launcher && make -s PYTHON=python3 ARCH=sm_90 >/dev/null 2>&1; timeout 200 python3 compare_with_bench.py ) 2>&1 | tee $OUT/launcher_compare.txt
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_rows.py -m gpu 2>&1 | tail -3 | tee $OUT/rows_tests.txt
timeout 280 python3 bench/rows_probe.py --budget-s 220 2>&1 | tail -15
