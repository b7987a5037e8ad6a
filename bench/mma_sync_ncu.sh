# Why the mma.sync gemm runs at two thirds of its instruction's ceiling (issue 12): Nsight Compute on
# one launch of the best mma.sync schedules at fp16 4096^3 (stall reasons, issue slots, L2 and DRAM
# throughput), cuBLAS's kernel beside them, and the per-instruction stall samples of the first one.
#   bash bench/mma_sync_ncu.sh          # on a GPU; writes $OUT/mma_sync_ncu*.txt
#   bash bench/mma_sync_ncu.sh source   # only the per-instruction samples (mma_sync_ncu_source.csv)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-.}
S=4096,4096,4096
if [ "$1" != source ]; then
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
  for ks in "-k epilogue=smem" "-k bn=256 -k bk=64 -k stages=3 -k swizzle=8 -k frag_buffers=2 -k epilogue=smem" \
            "-k bn=256 -k stages=4 -k swizzle=8"; do
    echo "## $ks"; timeout 120 python3 -m kernelgen.cli profile gemm --dtype float16 --size $S $ks 2>&1 | tail -40
  done
  echo "## cuBLAS (torch.matmul fp16)"
  timeout 120 ncu --csv --page raw --print-units base --clock-control none -k regex:'gemm|sm90|cutlass' --launch-skip 1 --launch-count 1 \
    --metrics "$(python3 -c 'from kernelgen.ncu import METRICS; print(",".join(METRICS))')" \
    python3 -c "
import torch; a = torch.randn(4096, 4096, device='cuda', dtype=torch.half); b = torch.randn_like(a)
for _ in range(2): torch.matmul(a, b)
torch.cuda.synchronize()" 2>&1 | python3 -c "
import sys; from kernelgen.ncu import parse_csv, figures
for l in parse_csv(sys.stdin.read()): print(l.kernel[:80], figures(l.metrics))"
} > $OUT/mma_sync_ncu.txt 2>&1
fi
SCHED=$(python3 -c "
from kernelgen.ops import get_op; op = get_op('gemm')
print(op.schedule_from_knobs(**dict(op.default_knobs(), epilogue='smem')).to_json())")
timeout 200 ncu --set full --import-source no --page source --print-source sass --csv --clock-control none \
  -k regex:gemm_f16 --launch-count 1 python3 -m kernelgen.ncu gemm $S float16 float16 "$SCHED" \
  > $OUT/mma_sync_ncu_source.csv 2> $OUT/mma_sync_ncu_source.err
ls -la $OUT
