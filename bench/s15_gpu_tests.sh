# Fifteenth session: the GPU tests of the SGEMM dot layout and of every sgemm path it touches (edge sizes of
# every tile and of schedule_for, the four layouts), one call:   bash bench/s15_gpu_tests.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 560 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_sgemm_dot.py tests/test_op_sgemm.py \
  tests/test_layouts.py -k "sgemm or dot or Sgemm" > $OUT/gpu_tests.txt 2>&1
tail -15 $OUT/gpu_tests.txt
