# Seventeenth session, call 3: the 7B and GPT-2 small blocks with their GEMMs in tf32x3 (PyTorch in float32, TF32 off,
# in the same run), and the GPU tests of the block and of kernelgen.torch.   bash bench/s17_call3.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 150 python3 -m kernelgen bench transformer --size 7b --dtype tf32x3 --breakdown --markdown \
  > $OUT/transformer_7b_tf32x3.md 2>&1
tail -32 $OUT/transformer_7b_tf32x3.md
timeout 90 python3 -m kernelgen bench transformer --size gpt2-small --dtype tf32x3 --breakdown --markdown \
  > $OUT/transformer_gpt2-small_tf32x3.md 2>&1
tail -32 $OUT/transformer_gpt2-small_tf32x3.md
timeout 200 python3 -m pytest -q -m gpu tests/test_transformer.py tests/test_torch_ops.py > $OUT/gpu_tests_transformer.txt 2>&1
tail -3 $OUT/gpu_tests_transformer.txt
