# Twelfth session, last device call: the GPU tests of everything the session's changes reach (sgemm and its
# twins, layouts, fused epilogues and batches, the GEMM shapes, attention, the generic ops, torch interop,
# the transformer), each file under its own time limit; then the 7B fp32 block once more on the final tree.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
PT="python3 -m pytest -q -m gpu -p no:cacheprovider --tb=line"
{ date -u
  for f in tests/test_op_sgemm.py tests/test_layouts.py tests/test_fusion.py tests/test_gemm_shapes.py tests/test_op_attention.py tests/test_attention_layouts.py tests/test_ops_generic.py tests/test_torch_ops.py tests/test_transformer.py tests/test_gpu.py; do
    echo "## $f"; timeout 200 $PT $f 2>&1 | grep -E "passed|failed|FAILED|Error|error" | tail -12   # (a summary line naming warnings is kept: the first run filtered three files out)
  done; } > $OUT/gpu_tests_final.txt 2>&1
ls $OUT
