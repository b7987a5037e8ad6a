# Fifteenth session: the dot layout (a warp's lanes split K; layout NT) at thin products, beside the cost model's
# pick and cuBLAS (bench/sgemm_regimes_probe.py, --extra candidates of the dot layout). Call 1 (the first kernel,
# without the stream's prefetch, stages=1), then call 2 (tile shapes, prefetch):
#   bash bench/s15_dot_probe.sh 1      bash bench/s15_dot_probe.sh 2
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
D="shared=false,layout=dot,wm=0,wn=0"
probe() {   # name shapes extras...
  local name=$1 shapes=$2; shift 2
  local args=()
  for e in "$@"; do args+=(--extra "$D,$e"); done
  mkdir -p /tmp/p_$name
  OUT=/tmp/p_$name timeout 115 python3 bench/sgemm_regimes_probe.py --shapes "$shapes" --reps 20 --deadline 75 "${args[@]}" \
    > /tmp/p_$name/log.txt 2>&1
  { echo "## $name"; cat /tmp/p_$name/sgemm_regimes_probe.md; grep -v "^|" /tmp/p_$name/log.txt | tail -5; } >> $OUT/s15_dot_probe_$CALL.md
  cp /tmp/p_$name/sgemm_regimes_probe.json $OUT/s15_dot_probe_${CALL}_$name.json 2>/dev/null
}
call1() {
probe m16_longk 16x512x500000:NT,16x1024x500000:NT \
  "bm=16,tm=16,bn=16,tn=4,stages=1,unroll_k=2,split_k=16,reduce_k=workspace" \
  "bm=16,tm=16,bn=16,tn=4,stages=1,unroll_k=2,split_k=32,reduce_k=workspace" \
  "bm=16,tm=16,bn=16,tn=4,stages=1,unroll_k=2,split_k=64,reduce_k=workspace" \
  "bm=16,tm=16,bn=32,tn=4,stages=1,unroll_k=2,split_k=32,reduce_k=workspace" \
  "bm=16,tm=16,bn=16,tn=4,stages=1,unroll_k=1,split_k=32,reduce_k=workspace" \
  "bm=16,tm=16,bn=8,tn=2,stages=1,unroll_k=4,split_k=32,reduce_k=workspace"
probe m16 16x4096x4096:NT,16x7680x2560:NT,32x4096x4096:NT \
  "bm=16,tm=16,bn=16,tn=4,stages=1,unroll_k=2,split_k=1" \
  "bm=16,tm=16,bn=16,tn=4,stages=1,unroll_k=2,split_k=2,reduce_k=workspace" \
  "bm=16,tm=16,bn=16,tn=4,stages=1,unroll_k=2,split_k=4,reduce_k=workspace" \
  "bm=16,tm=16,bn=32,tn=4,stages=1,unroll_k=2,split_k=2,reduce_k=workspace" \
  "bm=16,tm=16,bn=8,tn=2,stages=1,unroll_k=4,split_k=2,reduce_k=workspace"
probe m1 1x4096x4096:NT,1x11008x4096:NT,1x4096x14336:NT \
  "bm=1,tm=1,bn=32,tn=8,stages=1,unroll_k=2,split_k=1" \
  "bm=1,tm=1,bn=32,tn=8,stages=1,unroll_k=4,split_k=1" \
  "bm=1,tm=1,bn=16,tn=4,stages=1,unroll_k=4,split_k=1" \
  "bm=1,tm=1,bn=32,tn=8,stages=1,unroll_k=2,split_k=2,reduce_k=workspace" \
  "bm=1,tm=1,bn=64,tn=8,stages=1,unroll_k=4,split_k=1"
probe m8 8x4096x4096:NT,8x11008x4096:NT \
  "bm=8,tm=8,bn=32,tn=8,stages=1,unroll_k=2,split_k=1" \
  "bm=8,tm=8,bn=16,tn=4,stages=1,unroll_k=2,split_k=1" \
  "bm=8,tm=8,bn=16,tn=4,stages=1,unroll_k=2,split_k=2,reduce_k=workspace" \
  "bm=8,tm=8,bn=32,tn=4,stages=1,unroll_k=4,split_k=1"
probe n8 8192x8x4096:NT,20000x4x2048:NT \
  "bm=16,tm=4,bn=8,tn=8,stages=1,unroll_k=2,split_k=1" \
  "bm=32,tm=4,bn=8,tn=8,stages=1,unroll_k=2,split_k=1" \
  "bm=32,tm=8,bn=8,tn=8,stages=1,unroll_k=2,split_k=1"
}

call2() {
probe m16_longk 16x512x500000:NT \
  "bm=16,tm=16,bn=32,tn=4,stages=1,unroll_k=2,split_k=32,reduce_k=workspace" \
  "bm=16,tm=16,bn=16,tn=4,stages=2,unroll_k=1,split_k=32,reduce_k=workspace" \
  "bm=16,tm=16,bn=32,tn=4,stages=2,unroll_k=1,split_k=32,reduce_k=workspace" \
  "bm=16,tm=8,bn=32,tn=8,stages=2,unroll_k=1,split_k=32,reduce_k=workspace" \
  "bm=16,tm=8,bn=32,tn=8,stages=1,unroll_k=1,split_k=32,reduce_k=workspace" \
  "bm=16,tm=8,bn=16,tn=4,stages=1,unroll_k=2,split_k=32,reduce_k=workspace" \
  "bm=16,tm=8,bn=16,tn=4,stages=2,unroll_k=1,split_k=32,reduce_k=workspace" \
  "bm=16,tm=16,bn=16,tn=4,stages=2,unroll_k=2,split_k=32,reduce_k=workspace"
probe m16 16x4096x4096:NT,16x7680x2560:NT \
  "bm=16,tm=16,bn=32,tn=4,stages=1,unroll_k=2,split_k=2,reduce_k=workspace" \
  "bm=16,tm=16,bn=32,tn=4,stages=2,unroll_k=1,split_k=2,reduce_k=workspace" \
  "bm=16,tm=8,bn=32,tn=8,stages=2,unroll_k=1,split_k=2,reduce_k=workspace" \
  "bm=16,tm=8,bn=16,tn=4,stages=1,unroll_k=2,split_k=2,reduce_k=workspace" \
  "bm=16,tm=8,bn=16,tn=4,stages=2,unroll_k=1,split_k=2,reduce_k=workspace"
probe m1 1x4096x4096:NT,1x4096x14336:NT \
  "bm=1,tm=1,bn=16,tn=4,stages=1,unroll_k=4,split_k=1" \
  "bm=1,tm=1,bn=16,tn=4,stages=2,unroll_k=2,split_k=1" \
  "bm=1,tm=1,bn=32,tn=8,stages=2,unroll_k=1,split_k=2,reduce_k=workspace" \
  "bm=1,tm=1,bn=8,tn=2,stages=1,unroll_k=4,split_k=1" \
  "bm=1,tm=1,bn=16,tn=4,stages=2,unroll_k=2,split_k=2,reduce_k=workspace" \
  "bm=1,tm=1,bn=32,tn=4,stages=2,unroll_k=2,split_k=1"
probe n8 8192x8x4096:NT \
  "bm=32,tm=4,bn=8,tn=8,stages=1,unroll_k=2,split_k=1" \
  "bm=32,tm=4,bn=8,tn=8,stages=2,unroll_k=1,split_k=1" \
  "bm=64,tm=4,bn=8,tn=8,stages=2,unroll_k=1,split_k=1" \
  "bm=32,tm=4,bn=8,tn=8,stages=2,unroll_k=2,split_k=1"
}
CALL=$1; call$1
grep -h "^| .*extra\|schedule_for" $OUT/s15_dot_probe_$CALL.md | head -80
