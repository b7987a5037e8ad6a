# Twenty-first session, call 6: the GPU tests call 5 saw fail with NVRTC errors "at end of source" (8 workers), again
# with 4 workers, then with 1; the 7B block with its GEMMs in tf32x3 too.   bash bench/s21_call6.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
T="tests/test_attention_layouts.py::test_every_step_is_correct_in_every_layout_on_the_gpu tests/test_op_attention.py::test_every_step_is_correct_on_the_gpu tests/test_torch_ops.py tests/test_transformer.py"
timeout 150 python3 -m pytest -q -m gpu $T -n 4 > $OUT/gpu_tests_n4.txt 2>&1; grep -E "^E   .*Error|passed|failed" $OUT/gpu_tests_n4.txt | sort | uniq -c | tail -6
timeout 150 python3 -m pytest -q -m gpu tests/test_torch_ops.py tests/test_transformer.py > $OUT/gpu_tests_n1.txt 2>&1; grep -E "^E   .*Error|passed|failed" $OUT/gpu_tests_n1.txt | sort | uniq -c | tail -6
df -h /tmp . | tail -2
timeout 150 python3 -m kernelgen bench transformer --size 7b --dtype tf32x3 --markdown --breakdown > $OUT/transformer_7b_tf32x3.md 2>&1
sed -n 3,12p $OUT/transformer_7b_tf32x3.md
