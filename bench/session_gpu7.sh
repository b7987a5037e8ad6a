set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
K="python3 -m kernelgen.cli"
mkdir -p /tmp/r
for s in 4096,4096,4096 2048,2048,1024; do timeout 60 $K bench sgemm --size $s --markdown --reps 20 2>&1; done > /tmp/r/sgemm_default.md; grep -E "default|vendor:" /tmp/r/sgemm_default.md | cut -c1-60
for i in 1 2 3; do timeout 125 $K bench --suite llm-layers --shard $i/3 --reps 10 --markdown --json /tmp/r/llm_suite_$i.json > /tmp/r/llm_suite_$i.md 2>/tmp/r/llm_suite_$i.err; echo "shard $i rc=$?"; tail -4 /tmp/r/llm_suite_$i.md; done
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_op_sgemm.py --tb=line 2>&1 | tail -3 | tee /tmp/r/sgemm_gpu_tests.txt
tar czf $OUT/final.tgz -C /tmp/r .
