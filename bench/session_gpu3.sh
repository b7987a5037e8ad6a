set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 60 python3 -m pytest -q -x -p no:cacheprovider tests/test_rows.py -m gpu -k "long_rows and float16 and layernorm" --tb=short 2>&1 | grep -E "Error|assert|passed|failed" | head -20 | tee $OUT/rows_fail.txt
for k in test_sgemm "test_gemm_layouts or heuristics or vendor" wgmma; do timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_layouts.py -k "$k" --tb=line 2>&1 | tail -12; done | tee $OUT/layout_tests.txt
timeout 200 bash bench/layouts.sh bench >/dev/null 2>&1
