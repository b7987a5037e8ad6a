# Twenty-second session, call 10: NVRTC compiles from 8 processes with the source handed over as a temporary (the old
# compile.py) and held (the new), counting "At end of source" failures.
#   bash bench/s22_call10.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 110 python3 bench/nvrtc_stress.py temporary 8 5 2>&1 | tail -6
timeout 110 python3 bench/nvrtc_stress.py held 8 5 2>&1 | tail -6
