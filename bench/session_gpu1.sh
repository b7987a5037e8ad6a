set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
( cd examples/launcher && make -s PYTHON=python3 ARCH=sm_90 2>&1 | grep -v "^$" | tail -3; ./client 2>&1 | tail -8; timeout 240 python3 compare_with_bench.py ) 2>&1 | tee $OUT/launcher.txt
timeout 100 bash bench/gpu_all.sh half >/dev/null 2>&1
timeout 60 python3 -m kernelgen.cli bench gemm --size M=8192,N=8192,K=8192 --dtype bfloat16 --markdown --reps 20 2>&1 | tee $OUT/gemm_bf16_8192.md
timeout 90 python3 bench/launch_overhead.py 2>&1 | tee $OUT/launch.txt
timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_suites.py 2>&1 | tail -3 | tee $OUT/suites_test.txt
