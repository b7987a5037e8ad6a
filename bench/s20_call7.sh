# Twentieth session, call 7: stream-K after thread 0 hands each unit to the block through shared memory (224
# registers at 256x128; a GELU tile's loads stay at the top of the K loop): plain GEMMs, the block's epilogues with
# and without it, the 7B fp32 block with stream-K on all four GEMMs.   bash bench/s20_call7.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 bench/sgemm_regimes_probe.py --timing events --deadline 150 --families near \
  --shapes 2048x12288x4096:NT,2048x4096x4096:NT,2048x4096x16384:NT,2048x8448x4096:NT,3000x3000x3000 \
  --extra "stream_k=False,split_k=1" --extra "stream_k=True,split_k=1,reduce_k=atomic" 2>&1 | tail -1
mv $OUT/sgemm_regimes_probe.md $OUT/s20_stream_k_shared.md; mv $OUT/sgemm_regimes_probe.json $OUT/s20_stream_k_shared.json
grep -E "extra" $OUT/s20_stream_k_shared.md | cut -d'|' -f2-12
for size in "M=2048,N=16384,K=4096,layout=NT;epilogue=gelu(acc + bias)" "M=2048,N=4096,K=16384,layout=NT;epilogue=acc + bias + res" \
            "M=2048,N=4096,K=4096,layout=NT;epilogue=acc + bias + res"; do
  for sk in False True; do
    echo "== $size stream_k=$sk"
    timeout 100 python3 -m kernelgen bench sgemm --size "$size" -k stream_k=$sk --reps 10 2>&1 | grep -v -i warn | grep "given\|vendor:"
  done
done 2>&1 | cut -c1-100 | tee $OUT/s20_epilogues_shared.txt
timeout 150 python3 -m kernelgen bench transformer --size 7b --dtype float32 --markdown --breakdown > $OUT/transformer_7b_float32_allsk.md 2>&1
sed -n 3,40p $OUT/transformer_7b_float32_allsk.md
