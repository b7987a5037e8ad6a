# Fifteenth session, call 18 (a candidate not kept): the dot families needing more blocks than SMs (COMPANY), the rows whose K
# slices that moves, each with the slices it had before (bench/sgemm_regimes_probe.py --extra over the pick).
#   bash bench/s15_dot_company.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/c1 /tmp/c2
OUT=/tmp/c1 timeout 200 python3 bench/sgemm_regimes_probe.py --reps 20 --deadline 150 \
  --shapes 16x1760x1760:NT,16x2048x2048:NT,16x3072x1024:NT,16x4096x4096:NT,8x4096x4096:NT \
  --extra "split_k=1,reduce_k=atomic" --extra "split_k=2,reduce_k=workspace" > /tmp/c1/log.txt 2>&1
OUT=/tmp/c2 timeout 200 python3 bench/sgemm_regimes_probe.py --reps 20 --deadline 150 \
  --shapes 16x512x500000:NT,16x1024x500000:NT \
  --extra "split_k=4,reduce_k=workspace" --extra "split_k=8,reduce_k=workspace" > /tmp/c2/log.txt 2>&1
cat /tmp/c1/sgemm_regimes_probe.md > $OUT/sgemm_dot_company.md; grep "^| [0-9]" /tmp/c2/sgemm_regimes_probe.md >> $OUT/sgemm_dot_company.md
grep -h "schedule_for\|extra\|half" $OUT/sgemm_dot_company.md | cut -d'|' -f2-5,9-11
