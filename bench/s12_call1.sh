# Twelfth session, first device call: SGEMM variants shaped like cuBLAS's sm80 fp32 kernel (128x128 tiles of
# 2x2 warps, 128 threads, a 3-stage cp.async pipeline of 4-byte copies transposed into the km tiles) at the
# 7B layer's NT shapes; and the price of the element-wise twin at N = 35 (against N = 36, same schedule).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
B="python3 -m kernelgen.cli bench sgemm --reps 20 --markdown"
MIMIC="-k bm=128 -k bn=128 -k tm=16 -k tn=8 -k wm=64 -k wn=64 -k copy=cp_async -k a_layout=km -k vec_a=1 -k vec_b=1 -k pad_b=4"
{
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for size in M=2048,N=12288,K=4096 M=2048,N=4096,K=4096; do
  echo "## $size NT"
  $B --size $size --layout NT 2>&1 | grep -v -i warn | tail -4
  for v in "-k stages=3 -k bk=8" "-k stages=4 -k bk=8" "-k stages=3 -k bk=8 -k swizzle=16" "-k stages=2 -k bk=8"; do
    echo "### mimic $v"; $B --size $size --layout NT $MIMIC $v 2>&1 | grep -v -i warn | tail -2; done
  echo "### 256x128 cp.async st3 bk8 va1 vb1"
  $B --size $size --layout NT -k copy=cp_async -k stages=3 -k a_layout=km -k vec_a=1 -k vec_b=1 -k pad_b=4 2>&1 | grep -v -i warn | tail -2
done
SK="-k bm=128 -k bn=64 -k tm=8 -k tn=8 -k wm=64 -k wn=32 -k split_k=20 -k reduce_k=workspace"
for l in NT NN; do for n in 35 36; do
  echo "## M=8457,N=$n,K=4096 $l (the N=35 default's schedule)"
  $B --size M=8457,N=$n,K=4096 --layout $l $SK $( [ $l = NT ] && echo -k pad_b=4 ) 2>&1 | grep -v -i warn | tail -2
done; done
} > $OUT/s12_call1.md 2>&1
