# Sixteenth session: the NN cp.async families with A's mk tile read as K vectors (run_m=1) against the same
# families read element by element (run_m=4), at 1-8 slices, over products of 64-3000 rows (DeepBench's M = 64
# and 128 rows among them) and two larger ones.   bash bench/s16_kvec_families.sh [list]
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
A="copy=cp_async,stages=4,bk=16,a_layout=mk,vec_a=4"
FAM=("bm=32,bn=128,wm=32,wn=32,tm=8,tn=4,$A" "bm=64,bn=128,wm=32,wn=64,tm=8,tn=8,$A"
     "bm=32,bn=256,wm=32,wn=64,tm=8,tn=8,copy=cp_async,stages=3,bk=16,a_layout=mk,vec_a=4"
     "bm=128,bn=128,wm=64,wn=32,tm=8,tn=8,$A")
EXTRA=()
for f in "${FAM[@]}"; do for r in 4 1; do for s in 1 2 3 4 6 8; do
  red=$([ $s = 1 ] && echo atomic || echo workspace)
  EXTRA+=(--extra "$f,run_m=$r,split_k=$s,reduce_k=$red"); done; done; done
timeout 560 python3 bench/sgemm_regimes_probe.py --timing events --deadline 500 ${1:+--list} \
  --shapes 128x4096x4096,128x7680x2560,64x4096x4096,64x7680x2560,128x2048x2048,128x1760x1760,100x2500x2500,256x4096x4096,512x2048x2048,3000x2000x1001,1000x1000x1000,2048x4096x4096 \
  "${EXTRA[@]}" 2>&1 | tail -3
[ -z "$1" ] && mv $OUT/sgemm_regimes_probe.md $OUT/s16_kvec_families.md && mv $OUT/sgemm_regimes_probe.json $OUT/s16_kvec_families.json
