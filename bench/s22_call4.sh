# Twenty-second session, call 4: GPU tests (dmma, kernelgen.torch, the blocks, tf32); the 64x64 dmma tile at the 7B
# shapes; `kernelgen bench gemm --dtype dmma` from the CLI.
#   bash bench/s22_call4.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 240 python3 -m pytest -q -m gpu tests/test_gemm_dmma.py tests/test_torch_ops.py tests/test_transformer.py tests/test_gemm_tf32.py -n 4 > $OUT/gpu_tests.txt 2>&1
tail -5 $OUT/gpu_tests.txt
timeout 200 python3 bench/dmma_probe.py --shapes 2048x12288x4096:NT,2048x4096x4096:NT,2048x16384x4096:NT,2048x4096x16384:NT,3000x3000x3000:NN,2047x2049x1023:NT \
  --variants "64x64 w32x32 bk32 st4;128x64 w64x32 bk32 st3;128x64 w64x32 bk32 st4 mb2" --json $OUT/dmma_probe_64.json > $OUT/dmma_probe_64.md 2>&1
cut -d'|' -f2-9 $OUT/dmma_probe_64.md
timeout 100 python3 -m kernelgen bench gemm --dtype dmma --layout NT --size M=2048,N=12288,K=4096 --markdown > $OUT/bench_gemm_dmma.md 2>&1; cat $OUT/bench_gemm_dmma.md
