# Twenty-second session, call 11 (after the review): GPU tests of the files the review touched (compile.py's buffers,
# kgt.linear's float32 default, the dmma tests), and the fp32 choice probe on a shard of DeepBench (its shared inputs).
#   bash bench/s22_call11.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q -m gpu tests/test_gemm_dmma.py tests/test_torch_ops.py tests/test_transformer.py -n 4 > $OUT/gpu_tests.txt 2>&1
tail -3 $OUT/gpu_tests.txt
timeout 60 python3 bench/fp32_choice_probe.py --shard 1/16 > $OUT/fp32_choice_shard.md 2>&1; tail -4 $OUT/fp32_choice_shard.md
