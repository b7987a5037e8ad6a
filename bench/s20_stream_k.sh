# Twentieth session: stream-K (annotate(stream_k, True)) against the same tile without it and cuBLAS, at the 7B
# block's NT GEMMs and shapes whose tiles fill their last wave in part; GPU validation first.
#   bash bench/s20_stream_k.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $OUT/device.txt
timeout 150 python3 -m pytest -q -x -m gpu tests/test_sgemm_stream_k.py 2>&1 | tail -4 | tee $OUT/gpu_tests_stream_k.txt
timeout 400 python3 bench/sgemm_regimes_probe.py --timing events --deadline 330 --families near \
  --shapes 2048x12288x4096:NT,2048x4096x4096:NT,2048x16384x4096:NT,2048x4096x16384:NT,4096x4096x4096,3000x3000x3000,2047x2049x1023,8192x1024x4096:NT \
  --extra "stream_k=True" 2>&1 | tail -3
mv $OUT/sgemm_regimes_probe.md $OUT/s20_stream_k_probe.md; mv $OUT/sgemm_regimes_probe.json $OUT/s20_stream_k_probe.json
cut -d'|' -f2-12 $OUT/s20_stream_k_probe.md
