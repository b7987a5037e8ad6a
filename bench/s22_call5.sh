# Twenty-second session, call 5 (final code): GPU tests of the dmma gemm and the 16-bit gemm it shares a template with,
# the fused epilogues' cost on dmma (issue 15's <= 1.05x), the fp32 blocks again.
#   bash bench/s22_call5.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 260 python3 -m pytest -q -m gpu tests/test_gemm_dmma.py tests/test_op_gemm.py tests/test_torch_ops.py tests/test_transformer.py -n 4 > $OUT/gpu_tests.txt 2>&1
tail -4 $OUT/gpu_tests.txt
for s in 2048,16384,4096:NT 8192,3072,768:NT; do
  timeout 90 python3 bench/epilogue_probe.py $s 20 gemm:dmma > $OUT/epilogue_$(echo $s | tr ',:' 'x_').md 2>&1; tail -5 $OUT/epilogue_$(echo $s | tr ',:' 'x_').md
done
for s in 7b gpt2-small; do
  timeout 150 python3 -m kernelgen bench transformer --size $s --dtype float32 --markdown --breakdown > $OUT/transformer_${s}_float32.md 2>&1
  sed -n 3,12p $OUT/transformer_${s}_float32.md; tail -1 $OUT/transformer_${s}_float32.md
done
