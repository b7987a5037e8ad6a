# Fifteenth session, call 8: the DeepBench rows whose pick a cost-model candidate moved (a one-block-row register-
# copied tile showing 0.3 of its latency past its math; 32x128/cp.async needing more than two blocks an SM), each
# with the candidate's pick, its neighbours and the next families (bench/sgemm_regimes_probe.py, near mode). Run on
# 977fb87; the candidate was not kept (BENCHMARKS.md, fifteenth session).   bash bench/s15_model_probe.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
S=128x4096x4096,64x1760x1760:NT,128x1760x1760:NT,64x2048x2048:NT,128x2048x2048:NT,64x2560x2560:NT,128x2560x2560:NT,64x4096x4096:NT,128x4096x4096:NT,128x7680x2560,64x7680x2560:NT,128x7680x2560:NT,32x3072x1024:NT,64x3072x1024:NT,8x512x500000,8x1024x500000,32x4608x1536:NT,32x8448x2816:NT
mkdir -p /tmp/m
OUT=/tmp/m timeout 560 python3 bench/sgemm_regimes_probe.py --shapes $S --reps 20 --deadline 480 > /tmp/m/log.txt 2>&1
cp /tmp/m/sgemm_regimes_probe.md $OUT/sgemm_model_probe.md; cp /tmp/m/sgemm_regimes_probe.json $OUT/sgemm_model_probe.json
tail -3 /tmp/m/log.txt
