# Records of other sizes of the swept ops (their default spaces), the history a model strategy is warmed
# with when it transfers: $OUT/history_<op>.jsonl.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
t() { op=$1; shift; for size in "$@"; do
  timeout -s INT 75 python3 -m kernelgen.cli tune $op --size $size --strategy exhaustive --db $OUT/history_$op.jsonl \
    --jobs 16 --reps 10 --limit-s 60 2>/dev/null | tail -2; done; }
t sgemm 1000,1000,1000 4096,1024,2048 512,4096,4096
t conv2d N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1 N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1
t softmax rows=1024,cols=50257 rows=4096,cols=4096 rows=2048,cols=128256
wc -l $OUT/*.jsonl
