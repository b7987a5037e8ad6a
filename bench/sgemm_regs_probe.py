"""Register budget: each ladder step and the default with __maxnreg__ (as rendered when min_blocks > 1)
against __launch_bounds__(threads), at 4096^3 on the GPU: registers, spills, time. Run from the repository root."""
import re, sys
from kernelgen import gpu
from kernelgen.compile import compile_cuda
from kernelgen.ops import get_op
from kernelgen.render import render
from kernelgen.timing import device_arrays, time_callable
op = get_op("sgemm")
prob = op.problem({"M": 4096, "N": 4096, "K": 4096})
lim = gpu.device().limits()
steps = op.ladder()
cases = [(f"step{i}", steps[i - 1].schedule) for i in (2, 3, 4, 7, 8, 9)]
arrays = device_arrays(op, prob)
for label, sched in cases:
    k = op.kernel(sched, lim)
    plan = op.plan(k, prob, lim)
    src = render(k)
    T = k.knob("min_blocks")
    threads = dict(k.params)["threads"]
    lb = f"__launch_bounds__({threads}{', %d' % T if T > 1 else ''})"
    for variant, s in (("maxnreg", src), ("launch_bounds", re.sub(r"__maxnreg__\(\d+\)", lb, src))):
        c = compile_cuda(s, gpu.device().arch, k.name)
        regs = re.findall(r"Function properties for (\S+)\n.*\n.*?Used (\d+) registers", c.log)
        regs = re.findall(r"Used (\d+) registers", c.log)
        launch = gpu.prepare(plan, s, arrays)
        t = time_callable(launch, reps=10)
        print(f"{label:6} {variant:14} regs {regs} spill {c.spill_bytes()} {t.median_us:9.1f} us", flush=True)
