# Where the SGEMM loses to cuBLAS at the 7B layer's shapes (issues 14 and 15): Nsight Compute on one launch of
# kernelgen's schedule_for pick and of cuBLAS's kernel (torch, TF32 off) at 2048 x 12288 x 4096 NT: issue slots,
# stall reasons, shared wavefronts, L2 and DRAM. Writes $OUT/sgemm_ncu.txt.
#   bash bench/sgemm_ncu.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-.}
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u
  for S in 2048,12288,4096 2048,4096,4096; do
    echo "## kernelgen $S NT"
    timeout 120 python3 -m kernelgen.cli profile sgemm --size $S --layout NT --json /tmp/kg.json 2>&1 | tail -12
    python3 -c "import json; d = json.load(open('/tmp/kg.json')); print(json.dumps(d.get('rows', d), default=str)[:3000])"
    echo "## cuBLAS $S NT (torch.matmul(a, b.t()), fp32, TF32 off)"
    timeout 120 ncu --csv --page raw --print-units base --clock-control none -k regex:'gemm|sm90|cutlass|sgemm' \
      --launch-skip 1 --launch-count 1 \
      --metrics "$(python3 -c 'from kernelgen.ncu import METRICS; print(",".join(METRICS))')" \
      python3 -c "
import torch; torch.backends.cuda.matmul.allow_tf32 = False
M, N, K = map(int, '$S'.split(','))
a = torch.randn(M, K, device='cuda'); b = torch.randn(N, K, device='cuda')
for _ in range(2): torch.matmul(a, b.t())
torch.cuda.synchronize()" 2>&1 | python3 -c "
import sys; from kernelgen.ncu import parse_csv, figures
for l in parse_csv(sys.stdin.read()): print(l.kernel[:100]); print(figures(l.metrics))"
  done
} > $OUT/sgemm_ncu.txt 2>&1
cat $OUT/sgemm_ncu.txt
