"""Register budget: each SGEMM ladder step and the default compiled with an explicit budget
(`__maxnreg__(65536 / (threads x min_blocks))`) and with `__launch_bounds__(threads[, min_blocks])`,
whichever the template rendered: registers, spills and time at 4096^3 on the GPU. The template uses
__launch_bounds__ for min_blocks = 1 and __maxnreg__ above (bench_results/sgemm_regs_probe_h100.txt).

    PYTHONPATH=. python3 bench/sgemm_regs_probe.py
"""
import re

from kernelgen import gpu
from kernelgen.compile import compile_cuda
from kernelgen.ops import get_op
from kernelgen.render import render
from kernelgen.timing import device_arrays, time_callable

QUALIFIER = re.compile(r"__maxnreg__\(\d+\)|__launch_bounds__\([^)]*\)")

op = get_op("sgemm")
problem = op.problem({"M": 4096, "N": 4096, "K": 4096})
limits = gpu.device()
arrays = device_arrays(op, problem)
steps = op.ladder()
for label, sched in [(f"step{i}", steps[i - 1].schedule) for i in (2, 3, 4, 7, 8, 9)]:
    kernel = op.kernel(sched, limits)
    plan = op.plan(kernel, problem, limits)
    params, mb = dict(kernel.params), kernel.knob("min_blocks")
    bounds = f"__launch_bounds__({params['threads']}{', %d' % mb if mb > 1 else ''})"
    for variant, qualifier in (("maxnreg", f"__maxnreg__({params['max_regs']})"), ("launch_bounds", bounds)):
        source = QUALIFIER.sub(qualifier, render(kernel))
        compiled = compile_cuda(source, gpu.device().arch, kernel.name)
        regs = re.findall(r"Used (\d+) registers", compiled.log)
        launch = gpu.launcher(gpu.bind(plan, compiled.cubin), arrays,
                              dict(op.input_shapes(problem), **op.output_shapes(problem)), problem.dtype)
        t = time_callable(launch, reps=10)
        print(f"{label:6} {variant:14} regs {regs} spill {compiled.spill_bytes()} {t.median_us:9.1f} us", flush=True)
