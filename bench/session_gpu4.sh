set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 60 python3 bench/ln_diag.py 2>&1 | tail -8 | tee $OUT/ln_diag.txt
( cd examples/launcher && make -s PYTHON=python3 ARCH=sm_90 >/dev/null 2>&1; ./client | tail -3; timeout 150 python3 compare_with_bench.py ) 2>&1 | tee $OUT/launcher_compare.txt
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_op_conv2d.py tests/test_ops_generic.py -k conv2d --tb=line 2>&1 | tail -4 | tee $OUT/conv_tests.txt
timeout 260 python3 bench/conv2d_probe.py --out $OUT --budget-s 200 2>&1 | tail -5
