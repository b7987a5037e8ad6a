# Twenty-second session, call 1: DMMA's ceiling against FFMA's, cuBLAS DGEMM against SGEMM at the 7B shapes.
#   bash bench/s22_call1.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
(nvidia-smi dmon -s pc -d 1 > $OUT/dmon.txt 2>&1 &)
timeout 240 python3 bench/dmma_peak.py > $OUT/dmma_peak.md 2>&1; cat $OUT/dmma_peak.md
pkill -f "nvidia-smi dmon"; tail -60 $OUT/dmon.txt | head -60
