# Twentieth session, call 4: the MLP up GEMM with its GELU epilogue, stream-K or not (the block's stage ran 7.9 ms
# with it against 5.7 ms before), and the same with whole waves (no stream-K region).   bash bench/s20_call4.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for size in "M=2048,N=16384,K=4096,layout=NT;epilogue=gelu(acc + bias)" "M=2048,N=16384,K=4096,layout=NT;epilogue=acc + bias" \
            "M=2048,N=8448,K=4096,layout=NT;epilogue=gelu(acc + bias)"; do
  for sk in False True; do
    echo "== $size stream_k=$sk"
    timeout 100 python3 -m kernelgen bench sgemm --size "$size" -k stream_k=$sk --reps 10 2>&1 | grep -v -i warn | tail -4
  done
done 2>&1 | tee $OUT/s20_gelu_probe.txt
