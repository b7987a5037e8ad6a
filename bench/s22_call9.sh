# Twenty-second session, call 9 (final code): the GPU tests of this session's files with 4 workers, then any that
# failed again alone (one process), to tell a flake from a failure.
#   bash bench/s22_call9.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -q -m gpu tests/test_gemm_dmma.py tests/test_torch_ops.py tests/test_transformer.py tests/test_fusion.py tests/test_gemm_tf32.py -n 4 > $OUT/gpu_tests.txt 2>&1
tail -4 $OUT/gpu_tests.txt
if grep -q "^FAILED" $OUT/gpu_tests.txt; then
  timeout 200 python3 -m pytest -q -m gpu --lf tests/test_gemm_dmma.py tests/test_torch_ops.py tests/test_transformer.py tests/test_fusion.py tests/test_gemm_tf32.py > $OUT/gpu_tests_rerun.txt 2>&1
  tail -4 $OUT/gpu_tests_rerun.txt
fi
