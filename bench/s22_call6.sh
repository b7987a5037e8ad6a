# Twenty-second session, call 6: sgemm's and dmma's picks against cuBLAS over DeepBench's 160 fp32 GEMMs, and the
# decision kernelgen.torch.linear takes between them scored against the faster measured.
#   bash bench/s22_call6.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 560 python3 bench/fp32_choice_probe.py > $OUT/fp32_choice_deepbench.md 2>&1
tail -30 $OUT/fp32_choice_deepbench.md
