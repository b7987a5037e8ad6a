# Ninth session: the mma.sync gemm after its pipeline's stages were unrolled (issue 12's mma.sync step):
# the variants at fp16/bf16 4096^3 (the best two again at 8192^3), the ladders beside cuBLAS, the GPU tests
# of the tensor-core gemm.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
O=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
  timeout 200 python3 bench/mma_sync_probe.py --only 0,1,3,4,22,24,27,28 --best 2 --reps 30 2>&1 | grep -v "^$"
} > $O/mma_sync_probe.txt 2>&1
rm -f $O/mma_sync_probe.json
for d in float16 bfloat16; do
  timeout 150 python3 -m kernelgen.cli bench gemm --dtype $d --ladder --markdown > $O/gemm_ladder_$d.md 2>&1
done
{ date -u; timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_op_gemm.py tests/test_gemm_shapes.py tests/test_op_attention_mma.py 2>&1 | tail -15; } > $O/gpu_tests_gemm.txt
ls $O
