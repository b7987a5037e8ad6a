#!/bin/bash
# The nineteenth session's TMA-fed NT SGEMM prototype (sgemm_tma.cu; issue 15's fp32 block): each -D config
# built with nvcc, validated against cuBLAS (TF32 off) and timed beside it on the 7B layer's NT shapes and a
# ragged one. Needs an sm_90 GPU, nvcc, cuBLAS. Results: bench_results/2026-11-25-s19/sgemm_tma_proto_*.txt.
#   bash bench/sgemm_tma_proto/run.sh
cd "$(dirname "$0")"
mkdir -p /tmp/pb
i=0
while read -r cfg; do
  [ -z "$cfg" ] && continue
  i=$((i+1)); echo "$cfg" > /tmp/pb/cfg$i
  nvcc -O3 -arch=sm_90a $cfg sgemm_tma.cu -o /tmp/pb/b$i -lcuda -lcublas 2>/tmp/pb/err$i &
done <<'CFGS'
-DBM=256 -DBN=128 -DSTAGES=4 -DLAG=2 -DUNROLL=1 -DHB64=0
-DBM=256 -DBN=128 -DSTAGES=4 -DLAG=2 -DUNROLL=1 -DHB64=1
-DBM=256 -DBN=128 -DSTAGES=4 -DLAG=2 -DUNROLL=1 -DHB64=1 -DA64=1
-DBM=128 -DBN=256 -DSTAGES=4 -DLAG=2 -DUNROLL=1 -DHB64=1
-DBM=256 -DBN=128 -DSTAGES=4 -DLAG=2 -DUNROLL=2 -DHB64=1
CFGS
wait
for b in /tmp/pb/b*; do
  n=${b#/tmp/pb/b}
  [ -s /tmp/pb/err$n ] && head -3 /tmp/pb/err$n
  for s in "2000 3001 4096 3" "2048 12288 4096" "2048 4096 4096" "2048 4096 16384"; do
    timeout 60 $b $s || echo "FAILED $(cat /tmp/pb/cfg$n) $s"
  done
done
