# Twenty-first session, call 4: tf32x3 attention's split on the ALU, the FMA pipes or both, and 64-query one-stage tiles
# (three blocks an SM), at the blocks' shapes.   bash bench/s21_call4.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 280 python3 bench/attention_probe.py --tf32x3 --shapes "batch=1,heads=32,seq=2048,head_dim=128,causal=1,layout=packed;batch=8,heads=12,seq=1024,head_dim=64,causal=1,layout=packed" > $OUT/attention_probe_x3.log 2>&1; tail -2 $OUT/attention_probe_x3.log
cut -d'|' -f2-5 $OUT/attention_probe_x3.md | cut -c1-150
