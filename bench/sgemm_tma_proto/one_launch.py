"""One launch of kernelgen's schedule_for SGEMM pick at M,N,K (layout NT) on the GPU, for ncu to profile.
    python3 bench/sgemm_tma_proto/one_launch.py 2048 12288 4096"""
import sys

import cupy

from kernelgen.ops import get_op
from kernelgen.target import default_target
from kernelgen.timing import prepared

op = get_op("sgemm")
M, N, K = map(int, sys.argv[1:4])
problem = op.problem({"M": M, "N": N, "K": K}, layout="NT")
_, launch, _ = prepared(op, op.schedule_for(problem, default_target()), problem)
launch()
cupy.cuda.Device().synchronize()
