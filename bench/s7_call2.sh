# Seventh session, second device call: the 16-bit gelu's GPU tests, the 7B layer's stages, its GEMM shapes.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
PT="python3 -m pytest -q -m gpu -p no:cacheprovider"
{ date -u; timeout 120 $PT tests/test_half_ops.py -k "gelu or elementwise" 2>&1 | tail -8; } > $OUT/gpu_tests.txt 2>&1
for d in bfloat16 float32; do
  timeout 90 python3 -m kernelgen.cli bench transformer --size 7b --dtype $d --markdown --breakdown 2>&1 | grep -vi warn > $OUT/transformer_7b_${d}_breakdown.md; done
timeout 260 python3 bench/gemm_shapes_probe.py --shapes 2048x12288x4096:NT,2048x4096x4096:NT,2048x16384x4096:NT,2048x4096x16384:NT --deadline 200 > $OUT/shapes.log 2>&1
ls $OUT
