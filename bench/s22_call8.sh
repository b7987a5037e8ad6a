# Twenty-second session, call 8 (final code): the GPU tests of kernelgen.torch and the blocks after float32 linear's
# route moved to launch time; the 7B fp32 block once more.
#   bash bench/s22_call8.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -q -m gpu tests/test_gemm_dmma.py tests/test_torch_ops.py tests/test_transformer.py tests/test_fusion.py -n 4 > $OUT/gpu_tests.txt 2>&1
tail -4 $OUT/gpu_tests.txt
timeout 150 python3 -m kernelgen bench transformer --size 7b --dtype float32 --markdown > $OUT/transformer_7b_float32.md 2>&1
sed -n 3,12p $OUT/transformer_7b_float32.md; tail -1 $OUT/transformer_7b_float32.md
