set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
K="python3 -m kernelgen.cli"
mkdir -p /tmp/r
for i in 1 2 3 4; do timeout 135 $K bench --suite deepbench-gemm-train --shard $i/4 --reps 10 --markdown --json /tmp/r/gemm_suite_$i.json > /tmp/r/gemm_suite_$i.md 2>/tmp/r/gemm_suite_$i.err; echo "shard $i rc=$?"; tail -2 /tmp/r/gemm_suite_$i.md; tail -1 /tmp/r/gemm_suite_$i.err | tr '\r' '\n' | tail -1; done
tar czf $OUT/gemm_suite.tgz -C /tmp/r .
