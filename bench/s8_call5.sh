# Eighth session, call 5: softmax's wide sweep again (one candidate per schedule now), then softmax at
# vocabulary rows on its heuristic against torch.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
bash bench/sweep.sh softmax rows=4096,cols=32000 420 | tail -c 300
{ for c in 32000 50257 128256 262144; do
  timeout 40 python3 -m kernelgen.cli bench softmax --size rows=4096,cols=$c --markdown 2>&1 | tail -4; done; } > $OUT/softmax_vocab.md
