# Seventh session: build throughput and a 200-candidate SGEMM tune on the 16-core H100 machine (issue 13's
# targets: >= 8 SGEMM candidates compiled a second, 200 candidates in under 60 s), each from an empty cache.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nproc > $OUT/tune200.txt
KERNELGEN_CACHE_DIR=$(mktemp -d) timeout 200 python3 bench/build_throughput.py --op sgemm --count 64 --jobs 16 > $OUT/build_throughput.txt 2>&1
export KERNELGEN_CACHE_DIR=$(mktemp -d)
t0=$(date +%s.%N)
timeout 300 python3 -m kernelgen.cli tune sgemm --size 2047,2049,1023 --strategy random --budget 200 --jobs 16 \
  --db /tmp/tune200.jsonl 2>/tmp/tune200.err | tail -6 >> $OUT/tune200.txt
t1=$(date +%s.%N)
python3 -c "import sys; print(f'wall {float(sys.argv[1]) - float(sys.argv[2]):.1f} s')" $t1 $t0 >> $OUT/tune200.txt
tail -c 400 /tmp/tune200.err >> $OUT/tune200.txt
cp /tmp/tune200.jsonl $OUT/tune200.jsonl
ls $OUT
