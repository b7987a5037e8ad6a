# Fifteenth session, call 3: every SGEMM family (the dot families too) at thin NT products, at the cost model's best
# slices for each, beside cuBLAS: what calibrates the dot families (bench/sgemm_regimes_probe.py --families all).
#   bash bench/s15_dot_families.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
run() {   # name shapes
  mkdir -p /tmp/f_$1
  OUT=/tmp/f_$1 timeout 280 python3 bench/sgemm_regimes_probe.py --families all --shapes "$2" --reps 20 --deadline 220 \
    > /tmp/f_$1/log.txt 2>&1
  cp /tmp/f_$1/sgemm_regimes_probe.md $OUT/sgemm_dot_families_$1.md
  cp /tmp/f_$1/sgemm_regimes_probe.json $OUT/sgemm_dot_families_$1.json
}
run listed 16x512x500000:NT,16x1024x500000:NT,16x4096x4096:NT,16x1760x1760:NT,16x3072x1024:NT
run nolist 1x4096x4096:NT,1x11008x4096:NT,8x4096x4096:NT,5x8000x2000:NT,12x5000x3000:NT,8192x8x4096:NT,3000x16x3000:NT,16x50257x768:NT
grep -h "schedule_for\|dot" $OUT/sgemm_dot_families_*.md | cut -d'|' -f2-4,9-12
