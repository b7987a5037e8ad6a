# Twenty-second session, call 3: the dmma GEMM's GPU tests, kernelgen.torch's and the blocks'; the fp32 blocks with
# their GEMMs where kernelgen.torch.linear's default puts them (dmma on this GPU); dmma tiles at GPT-2's shapes.
#   bash bench/s22_call3.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q -x -m gpu tests/test_gemm_dmma.py tests/test_torch_ops.py tests/test_transformer.py -n 4 > $OUT/gpu_tests.txt 2>&1
tail -3 $OUT/gpu_tests.txt
for s in 7b gpt2-small; do
  timeout 150 python3 -m kernelgen bench transformer --size $s --dtype float32 --markdown --breakdown > $OUT/transformer_${s}_float32.md 2>&1
  sed -n 3,40p $OUT/transformer_${s}_float32.md
done
timeout 150 python3 bench/dmma_probe.py --shapes 8192x2304x768:NT,8192x768x768:NT,8192x3072x768:NT,8192x768x3072:NT,1024x1024x1024:NN,512x4096x4096:NT \
  --json $OUT/dmma_probe_gpt2.json > $OUT/dmma_probe_gpt2.md 2>&1; cut -d'|' -f2-7 $OUT/dmma_probe_gpt2.md
