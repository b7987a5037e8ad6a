#!/bin/bash
# Nsight Compute on one launch of the prototype (its best config) at 2048 x 12288 x 4096: issue slots, stalls.
#   bash bench/sgemm_tma_proto/ncu.sh
cd "$(dirname "$0")"
nvcc -O3 -arch=sm_90a -DBM=256 -DBN=128 -DSTAGES=4 -DLAG=2 -DUNROLL=1 -DHB64=1 sgemm_tma.cu -o /tmp/sgn -lcuda -lcublas || exit 1
M="$(cd ../.. && python3 -c 'from kernelgen.ncu import METRICS; print(",".join(METRICS))')"
for k in sgemm_tma 'xmma|sm80|sm90|gemm_f32'; do
  echo "## $k"
  ncu --csv --page raw --print-units base --clock-control none --metrics "$M" -k "regex:$k" --launch-count 1 /tmp/sgn 2048 12288 4096 0 2>&1 \
   | (cd ../.. && python3 -c "
import sys; from kernelgen.ncu import parse_csv, figures
t = sys.stdin.read()
ls = parse_csv(t)
if not ls: print(t[-3000:])
for l in ls: print(l.kernel[:100]); print(figures(l.metrics))")
done
