# Records of other sizes of sgemm on its wide space, drawn at random (uniform over the space), for the transfer
# replay: the shipped sweep (2047x2049x1023) runs the element-wise kernel and its best points vary knobs the
# default space never does (unroll_k, min_blocks), so a history of aligned sizes on the default space says
# nothing of them. Sizes unaligned (element-wise loads) and of other shapes. $OUT/history_sgemm_wide.jsonl.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
for size in 3001,1023,1535 1535,2999,767; do
  timeout -s INT 270 python3 -m kernelgen.cli tune sgemm --size $size --space wide --strategy random --seed 1 \
    --budget 1500 --db $OUT/history_sgemm_wide.jsonl --jobs 16 --reps 10 --limit-s 60 2>/dev/null | tail -2
done
wc -l $OUT/*.jsonl
