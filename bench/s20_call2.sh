# Twentieth session, call 2: stream-K where the tiles fill one to three waves (the cost model's regime it was not
# fitted in), the 7B fp32 block with schedule_for picking stream-K, and the GPU tests of sgemm and the blocks.
#   bash bench/s20_call2.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 280 python3 bench/sgemm_regimes_probe.py --timing events --deadline 230 --families near \
  --shapes 2047x2049x1023,3000x3000x3000,2500x2500x2500,1536x8192x2048:NT,2304x2304x4096,1100x9000x1500:NT \
  --extra "stream_k=False,split_k=1" --extra "stream_k=True,split_k=1,reduce_k=atomic" \
  --extra "bm=128,stream_k=True,split_k=1,reduce_k=atomic" 2>&1 | tail -2
mv $OUT/sgemm_regimes_probe.md $OUT/s20_stream_k_waves.md; mv $OUT/sgemm_regimes_probe.json $OUT/s20_stream_k_waves.json
grep -E "schedule_for|extra" $OUT/s20_stream_k_waves.md | cut -d'|' -f2-12
timeout 150 python3 -m kernelgen bench transformer --size 7b --dtype float32 --markdown --breakdown > $OUT/transformer_7b_float32.md 2>&1
sed -n 3,40p $OUT/transformer_7b_float32.md
timeout 140 python3 -m pytest -q -x -m gpu tests/test_sgemm_stream_k.py tests/test_op_sgemm.py tests/test_torch_ops.py tests/test_transformer.py -n 4 > $OUT/gpu_tests.txt 2>&1
tail -3 $OUT/gpu_tests.txt
