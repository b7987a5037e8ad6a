# Twenty-second session, call 2: the dmma gemm's tiles against cuBLAS SGEMM at the 7B shapes and others.
#   bash bench/s22_call2.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 500 python3 bench/dmma_probe.py --json $OUT/dmma_probe.json > $OUT/dmma_probe.md 2>&1; cat $OUT/dmma_probe.md | cut -c1-200
