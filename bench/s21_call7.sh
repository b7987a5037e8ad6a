# Twenty-first session, call 7: the final commit's GPU tests (attention, the tf32x3 GEMM, kernelgen.torch, the blocks;
# 4 workers) and the attention ladder example on the GPU (each step validated at b8 h16 s2048 d64, causal and not).
#   bash bench/s21_call7.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 250 python3 -m pytest -q -m gpu tests/test_op_attention_tf32x3.py tests/test_op_attention_mma.py tests/test_op_attention.py \
  tests/test_attention_layouts.py tests/test_gemm_tf32.py tests/test_torch_ops.py tests/test_transformer.py -n 4 > $OUT/gpu_tests.txt 2>&1
grep -E "^E   .*Error|passed|failed" $OUT/gpu_tests.txt | sort | uniq -c | tail -6
timeout 200 python3 examples/attention_ladder.py > $OUT/attention_ladder.txt 2>&1; cut -c1-170 $OUT/attention_ladder.txt | grep -v "^ "
