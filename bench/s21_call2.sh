# Twenty-first session, call 2: after kg_tf32 became an integer add and mask (ptxas expanded cvt.rna.tf32 into 5
# instructions) and 3xTF32's low parts are left to the tensor cores to truncate: fp32 attention errors against torch's,
# the tf32x3 attention probe again, a tf32x3 GEMM, the GPU tests, the 7B fp32 block.   bash bench/s21_call2.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 100 python3 bench/attention_x3_error.py 2>&1 | tail -5
timeout 260 python3 bench/attention_probe.py --tf32x3 > $OUT/attention_probe_x3.log 2>&1; tail -3 $OUT/attention_probe_x3.log
cut -d'|' -f2-5,7 $OUT/attention_probe_x3.md | cut -c1-160
timeout 60 python3 -m kernelgen bench gemm --dtype tf32x3 --size "M=2048,N=12288,K=4096,layout=NT" --reps 10 2>&1 | grep -v -i warn | tail -4
timeout 120 python3 -m pytest -q -m gpu tests/test_op_attention_tf32x3.py tests/test_gemm_tf32.py tests/test_torch_ops.py tests/test_transformer.py -n 4 > $OUT/gpu_tests.txt 2>&1
grep -E "^E   |passed|failed" $OUT/gpu_tests.txt | tail -8
timeout 150 python3 -m kernelgen bench transformer --size 7b --dtype float32 --markdown --breakdown > $OUT/transformer_7b_float32.md 2>&1
sed -n 3,40p $OUT/transformer_7b_float32.md
