# Sixteenth session: the large NT SGEMMs of the 7B block (x . W^T) against variants of the default tile, and
# one Nsight Compute profile of the default NT kernel (stall reasons).   bash bench/s16_nt_probe.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 330 python3 bench/sgemm_regimes_probe.py --timing events --deadline 300 \
  --shapes 2048x12288x4096:NT,2048x16384x4096:NT,2048x4096x16384:NT,2048x4096x4096:NT \
  --extra "bk=16" --extra "bk=16,swizzle=16" --extra "bm=128,bn=256,tm=8,tn=16" --extra "swizzle=16" \
  --extra "bk=16,pad_a=8" 2>&1 | tail -5
mv $OUT/sgemm_regimes_probe.md $OUT/s16_nt_probe.md; mv $OUT/sgemm_regimes_probe.json $OUT/s16_nt_probe.json
timeout 200 python3 -m kernelgen.cli profile sgemm --layout NT --size M=2048,N=12288,K=4096 2>&1 | grep -vi warn \
  > $OUT/s16_nt_profile.txt
timeout 60 python3 -m kernelgen.cli profile sgemm --layout NT --size M=2048,N=12288,K=4096 -k bk=16 2>&1 \
  | grep -vi warn > $OUT/s16_nt_profile_bk16.txt
cat $OUT/s16_nt_probe.md | cut -d'|' -f2-4,9-12; tail -40 $OUT/s16_nt_profile.txt
