set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
K="python3 -m kernelgen.cli"
for s in 4096,4096,4096 2048,2048,1024; do timeout 60 $K bench sgemm --size $s --markdown --reps 20 2>&1 | grep -E "default|heuristic|vendor:" ; done | tee $OUT/sgemm_default.md
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_op_sgemm.py tests/test_rows.py --tb=line 2>&1 | tail -6 | tee $OUT/gpu_tests5.txt
timeout 200 python3 bench/sgemm_regimes_probe.py --deadline 140 2>&1 | tail -3
for i in 1 2 3; do timeout 100 $K bench --suite deepbench-conv-train --shard $i/3 --reps 10 --markdown --json $OUT/conv_suite_$i.json > $OUT/conv_suite_$i.md 2>$OUT/conv_suite_$i.err; tail -3 $OUT/conv_suite_$i.md; done
