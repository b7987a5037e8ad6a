# Sixteenth session: K-vector fragments (A's mk / B's nk shared tiles read 4 values of K at a time by lanes on
# adjacent rows, run 1) with cp.async, against the picks: large NT (the 7B block's x . W^T), large NN, and
# DeepBench's M = 128 NN rows.   bash bench/s16_kvec_probe.sh [list]
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
KV="a_layout=mk,b_layout=nk,run_m=1,run_n=1,vec_c=1,pad_b=4"
NV="a_layout=mk,run_m=1"
T128="bm=128,bn=128,tm=16,tn=8,wm=64,wn=64"
T256="bm=256,bn=128,tm=16,tn=8,wm=64,wn=64"
go() { timeout 280 python3 bench/sgemm_regimes_probe.py --timing events --deadline 250 ${LIST:+--list} "$@"; }
[ "$1" = list ] && LIST=1
go --shapes 2048x12288x4096:NT,2048x16384x4096:NT,2048x4096x16384:NT,2048x4096x4096:NT,6000x2000x2000:NT \
  --extra "bm=128,$KV,copy=cp_async,stages=3" --extra "bm=128,$KV,copy=cp_async,stages=4" \
  --extra "bm=128,$KV,copy=cp_async,stages=3,bk=16" --extra "bm=256,$KV,copy=cp_async,stages=3" \
  --extra "bm=128,tm=8,tn=16,wm=32,wn=128,$KV,copy=cp_async,stages=3" --extra "bm=256,$KV" 2>&1 | tail -3
[ -z "$LIST" ] && mv $OUT/sgemm_regimes_probe.md $OUT/s16_kvec_nt.md && mv $OUT/sgemm_regimes_probe.json $OUT/s16_kvec_nt.json
go --shapes 2048x4096x4096,6000x2000x2000,128x4096x4096,128x7680x2560 \
  --extra "$T128,$NV,copy=cp_async,stages=3,split_k=1" --extra "$T128,$NV,copy=cp_async,stages=4,split_k=1" \
  --extra "$T256,$NV,copy=cp_async,stages=3,split_k=1" \
  --extra "bm=64,bn=128,wm=32,wn=64,tm=8,tn=8,$NV,copy=cp_async,stages=4,bk=16,split_k=3,reduce_k=workspace" \
  --extra "bm=64,bn=128,wm=32,wn=64,tm=8,tn=8,$NV,copy=cp_async,stages=4,bk=16,split_k=6,reduce_k=workspace" \
  --extra "$T128,$NV,copy=cp_async,stages=3,split_k=4,reduce_k=workspace" 2>&1 | tail -3
[ -z "$LIST" ] && mv $OUT/sgemm_regimes_probe.md $OUT/s16_kvec_nn.md && mv $OUT/sgemm_regimes_probe.json $OUT/s16_kvec_nn.json
[ -z "$LIST" ] && for f in $OUT/s16_kvec_nt.md $OUT/s16_kvec_nn.md; do cut -d'|' -f2-4,9-13 $f; done
