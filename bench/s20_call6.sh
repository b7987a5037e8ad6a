# Twentieth session, call 6: stream-K picked where the epilogue keeps the registers (none, bias, scale, relu):
# the residual epilogue with and without it (excluded by the rule), the fp32 blocks, and the GPU tests.
#   bash bench/s20_call6.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for size in "M=2048,N=4096,K=16384,layout=NT;epilogue=acc + bias + res" "M=2048,N=12288,K=4096,layout=NT;epilogue=acc + bias"; do
  for sk in False True; do
    echo "== $size stream_k=$sk"
    timeout 100 python3 -m kernelgen bench sgemm --size "$size" -k stream_k=$sk --reps 10 2>&1 | grep -v -i warn | grep "given\|vendor:"
  done
done 2>&1 | cut -c1-100 | tee $OUT/s20_epilogues.txt
for s in 7b gpt2-small; do
  timeout 150 python3 -m kernelgen bench transformer --size $s --dtype float32 --markdown --breakdown > $OUT/transformer_${s}_float32_final.md 2>&1
  sed -n 3,40p $OUT/transformer_${s}_float32_final.md
done
timeout 170 python3 -m pytest -q -x -m gpu tests/test_sgemm_stream_k.py tests/test_op_sgemm.py tests/test_torch_ops.py tests/test_transformer.py tests/test_fusion.py -n 4 > $OUT/gpu_tests_final.txt 2>&1
tail -3 $OUT/gpu_tests_final.txt
