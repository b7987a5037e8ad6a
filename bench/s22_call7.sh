# Twenty-second session, call 7 (final code): GPU tests of the files this session touched; the instruction ceilings
# again (m8n8k4 .f64, sm_80's DMMA, included).
#   bash bench/s22_call7.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -q -m gpu tests/test_gemm_dmma.py tests/test_torch_ops.py tests/test_transformer.py tests/test_gemm_tf32.py tests/test_fusion.py -n 4 > $OUT/gpu_tests.txt 2>&1
tail -4 $OUT/gpu_tests.txt
timeout 120 python3 bench/dmma_peak.py > $OUT/dmma_peak.md 2>&1; sed -n 1,40p $OUT/dmma_peak.md
