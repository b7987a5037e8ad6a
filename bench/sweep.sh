# A recorded sweep of an op's wide space on the GPU (issue 13's replays): every legal candidate compiled,
# validated at the op's awkward sizes and timed, appended to $OUT/sweep_<op>.jsonl. A sweep longer than
# one device call resumes: the records of earlier calls are committed under bench_results/ and copied in.
#   bash bench/sweep.sh OP SIZE SECONDS [PRIOR.jsonl]
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
op=$1 size=$2 secs=$3 prior=${4:-}
db=$OUT/sweep_$op.jsonl
[ -n "$prior" ] && [ -f "$prior" ] && cp "$prior" "$db"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/sweep_${op}.log; date -u >> $OUT/sweep_${op}.log
timeout -s INT "$secs" python3 -m kernelgen.cli tune "$op" --size "$size" --space wide --strategy exhaustive \
  --db "$db" --resume --jobs 16 --reps 10 --limit-s 60 >> $OUT/sweep_${op}.log 2>&1
echo "rc=$? records=$(wc -l < $db)" >> $OUT/sweep_${op}.log; date -u >> $OUT/sweep_${op}.log
tail -c 3000 $OUT/sweep_${op}.log
