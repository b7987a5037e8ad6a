# Per-instruction stall samples (ncu source page, SASS) of the prototype: $OUT/src_proto.csv
#   bash bench/sgemm_tma_proto/ncu_source.sh
cd bench/sgemm_tma_proto
nvcc -O3 -arch=sm_90a -DBM=256 -DBN=128 -DSTAGES=4 -DLAG=2 -DUNROLL=1 -DHB64=1 sgemm_tma.cu -o /tmp/sgn -lcuda -lcublas || exit 1
ncu --section WarpStateStats --section SourceCounters --clock-control none -k regex:sgemm_tma --launch-count 1 -o /tmp/rep -f /tmp/sgn 2048 12288 4096 0 > /dev/null 2>&1
ncu -i /tmp/rep.ncu-rep --page source --csv --print-source sass > $OUT/src_proto.csv 2>&1
head -c 3000 $OUT/src_proto.csv; wc -l $OUT/src_proto.csv
cd ../..
export PYTHONPATH=$PWD
ncu --section WarpStateStats --section SourceCounters --clock-control none -k regex:sgemm --launch-count 1 -o /tmp/rep2 -f python3 bench/sgemm_tma_proto/one_launch.py 2048 12288 4096 > $OUT/ncu_kg_log.txt 2>&1
ncu -i /tmp/rep2.ncu-rep --page source --csv --print-source sass > $OUT/src_kg.csv 2>&1
wc -l $OUT/src_kg.csv; tail -3 $OUT/ncu_kg_log.txt
