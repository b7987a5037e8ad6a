# Candidates a second with one GPU and with every GPU of the host (issue 13: two GPUs >= 1.8x one).
# Each run starts from an empty compile cache and its own database, the same strategy and seed.
#   bash bench/tune_gpus.sh [OP SIZE BUDGET]...     (default: softmax 4096x4096, then sgemm 2047,2049,1023)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/bench_out}; mkdir -p "$OUT"
W=$(mktemp -d)   # the runs' databases and logs (the summary and the log's tails go to $OUT)
[ $# -eq 0 ] && set -- softmax rows=4096,cols=4096 160 sgemm 2047,2049,1023 80
nvidia-smi -L | tee "$OUT/tune_gpus.md"
echo "| op | size | gpus | measured | seconds | candidates/s |" >> "$OUT/tune_gpus.md"
echo "|---|---|---|---|---|---|" >> "$OUT/tune_gpus.md"
while [ $# -ge 3 ]; do
  for g in 1 all; do
    export KERNELGEN_CACHE_DIR=$(mktemp -d)
    t0=$(date +%s.%N)
    python3 -m kernelgen.cli tune "$1" --size "$2" --strategy random --seed 1 --budget "$3" --gpus $g \
      --db "$W/tune_$1_$g.jsonl" 2>"$W/tune_$1_$g.err" | tail -5 > "$W/tune_$1_$g.txt"
    t1=$(date +%s.%N)
    n=$(grep -o "measured [0-9]*" "$W/tune_$1_$g.txt" | grep -o "[0-9]*")
    { echo "## $1 $2 --gpus $g"; tail -c 600 "$W/tune_$1_$g.err"; echo; cat "$W/tune_$1_$g.txt"; } >> "$OUT/tune_gpus.log"
    python3 -c "import sys; n, s = int(sys.argv[1] or 0), float(sys.argv[2]) - float(sys.argv[3]); print(f'| $1 | $2 | $g | {n} | {s:.1f} | {n / s:.2f} |')" "$n" "$t1" "$t0" >> "$OUT/tune_gpus.md"
    tail -1 "$OUT/tune_gpus.md"
  done
  shift 3
done
