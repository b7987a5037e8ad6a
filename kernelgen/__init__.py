"""kernelgen: schedules in Python -> specialised CUDA kernels -> NVRTC -> validated, timed, tuned.

>>> import kernelgen as kg
>>> op = kg.get_op("reduce_sum")
>>> s = op.schedule(threads=256)          # the default schedule with one knob changed
>>> src = kg.render(op.kernel(s))         # CUDA source text
>>> "extern \\"C\\" __global__" in src
True
"""
from .config import VERSION as __version__
from .errors import CompileError, KernelgenError, LaunchError, ScheduleError, UsageError, ValidationError
from .ops import OPS, get_op
from .prepared import launch
from .render import render
from .schedule import Schedule, schedule

__all__ = ["__version__", "launch", "OPS", "get_op", "render", "schedule", "Schedule", "KernelgenError", "ScheduleError",
           "UsageError", "CompileError", "LaunchError", "ValidationError"]
