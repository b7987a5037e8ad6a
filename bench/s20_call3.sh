# Twentieth session, call 3: stream-K after the split tiles were finished from the two slots (no spills with fused
# epilogues): plain GEMMs against the same tile without it and cuBLAS, a shape of whole waves (the DP path's cost
# alone), the 7B fp32 block per stage, and the stream-K GPU tests.   bash bench/s20_call3.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 100 python3 -m pytest -q -x -m gpu tests/test_sgemm_stream_k.py 2>&1 | tail -2 | tee $OUT/gpu_tests_stream_k.txt
timeout 300 python3 bench/sgemm_regimes_probe.py --timing events --deadline 250 --families near \
  --shapes 2048x12288x4096:NT,2048x4096x4096:NT,2048x16384x4096:NT,2048x4096x16384:NT,2048x8448x4096:NT,3000x3000x3000,2047x2049x1023 \
  --extra "stream_k=False,split_k=1" --extra "stream_k=True,split_k=1,reduce_k=atomic" 2>&1 | tail -1
mv $OUT/sgemm_regimes_probe.md $OUT/s20_stream_k_final.md; mv $OUT/sgemm_regimes_probe.json $OUT/s20_stream_k_final.json
grep -E "schedule_for|extra" $OUT/s20_stream_k_final.md | cut -d'|' -f2-12
timeout 150 python3 -m kernelgen bench transformer --size 7b --dtype float32 --markdown --breakdown > $OUT/transformer_7b_float32_sk.md 2>&1
sed -n 3,40p $OUT/transformer_7b_float32_sk.md
