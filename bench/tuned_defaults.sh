# Tuned defaults (issue 13), one device call of at most 600 s on an H100 (16 cores): a short model-guided tune of
# every DeepBench conv shape, the H100 table built from it (and the shipped s8 sweeps), then each shape's default
# schedule with that table timed beside the heuristic, the per-shape tuned best and cuDNN in one run.
#   bash bench/tuned_defaults.sh          ($OUT: the output folder; the project on PYTHONPATH)
#   DRY=1 SECONDS_TOTAL=60 bash bench/tuned_defaults.sh     # the CPU check: made-up times, a shorter deadline
# Writes $OUT/conv_tune.jsonl.gz (the tuning records), $OUT/h100.json (the table: copy it to kernelgen/tuned/h100.json),
# $OUT/tuned_defaults.md (the comparison) and $OUT/tuned_defaults.log. Stops cleanly by 560 s, keeping what it measured.
set -u
T0=$(date +%s)
TOTAL=${SECONDS_TOTAL:-560}
DEADLINE=$((T0 + TOTAL))              # everything done by then
TUNE_END=$((T0 + TOTAL * 5 / 8))      # the tune's share (350 s); the table and the timing run take the rest
DRY=${DRY:+--dry-run}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/bench_out}; mkdir -p "$OUT"
DB=$OUT/conv_tune.jsonl TABLE=$OUT/h100.json LOG=$OUT/tuned_defaults.log
S8=bench_results/2026-11-24-s8
SWEEPS="$S8/sweep_conv2d.jsonl.gz $S8/history_conv2d.jsonl.gz $S8/sweep_sgemm.jsonl.gz $S8/history_sgemm.jsonl.gz
        $S8/sweep_softmax.jsonl.gz $S8/history_softmax.jsonl.gz"
left() { echo $((DEADLINE - $(date +%s))); }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
  python3 -c "import sklearn" 2>/dev/null && echo "scikit-learn present" || echo "scikit-learn missing: random search"
} > "$LOG" 2>&1

# 1. the tune: every shape an equal share of the time to TUNE_END, at most 32 candidates each, the conv sweeps of
#    the s8 session as the model's history. SIGINT at the limit: the records so far are on disk (fsynced a line).
timeout -k 10 -s INT $((TUNE_END + 15 - $(date +%s))) python3 bench/tuned_defaults.py tune --suite deepbench-conv-train \
  --db "$DB" --until $TUNE_END --budget 32 --jobs 16 --reps 10 --limit-s 30 \
  --history $S8/sweep_conv2d.jsonl.gz --history $S8/history_conv2d.jsonl.gz $DRY >> "$LOG" 2>&1
echo "tune done at $(( $(date +%s) - T0 )) s: $(wc -l < "$DB") records" >> "$LOG"

# 2. the table: the best record per (op, problem, arch) on the H100, from this tune and the shipped sweeps
dbs=(--db "$DB"); for f in $SWEEPS; do dbs+=(--db "$f"); done
timeout 60 python3 -m kernelgen.cli tune-db table "${dbs[@]}" --gpu H100 -o "$TABLE" >> "$LOG" 2>&1
echo "table done at $(( $(date +%s) - T0 )) s" >> "$LOG"

# 3. the comparison: default (with the table) vs unseen (own entry left out) vs heuristic vs tuned vs cuDNN
if [ -f "$TABLE" ]; then
  timeout -k 5 -s INT $(( $(left) - 5 )) python3 bench/tuned_defaults.py measure --suite deepbench-conv-train \
    --db "$DB" $(for f in $SWEEPS; do echo --more-db $f; done) --table "$TABLE" --out "$OUT/tuned_defaults.md" --until $((DEADLINE - 15)) --reps 10 --jobs 16 \
    $DRY >> "$LOG" 2>&1
fi
gzip -f "$DB"                     # read as it is by TuningDB (and `tune-db table --db`)
echo "all done at $(( $(date +%s) - T0 )) s" >> "$LOG"
tail -n 12 "$OUT/tuned_defaults.md" 2>/dev/null; tail -n 5 "$LOG"
