# Fifteenth session, call 4: the dot families' K slices (the model ties them where DRAM bounds the estimate): the
# pick with 1, 2, 3, 4 and 8 slices at thin NT products (bench/sgemm_regimes_probe.py --extra over the pick).
#   bash bench/s15_dot_slices.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/s
S="16x4096x4096:NT,16x7680x2560:NT,16x2560x2560:NT,8x4096x4096:NT,1x4096x4096:NT,1x4096x14336:NT,8192x8x4096:NT,4x14336x4096:NT"
OUT=/tmp/s timeout 280 python3 bench/sgemm_regimes_probe.py --shapes $S --reps 20 --deadline 230 \
  --extra "split_k=1,reduce_k=atomic" --extra "split_k=2,reduce_k=workspace" --extra "split_k=3,reduce_k=workspace" \
  --extra "split_k=4,reduce_k=workspace" --extra "split_k=8,reduce_k=workspace" > /tmp/s/log.txt 2>&1
cp /tmp/s/sgemm_regimes_probe.md $OUT/sgemm_dot_slices.md; cp /tmp/s/sgemm_regimes_probe.json $OUT/sgemm_dot_slices.json
grep -h "schedule_for\|extra" $OUT/sgemm_dot_slices.md | cut -d'|' -f2-5,9-12
