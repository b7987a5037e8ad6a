"""kernelgen: schedules in Python -> specialised CUDA kernels -> NVRTC -> validated, timed, tuned.

>>> import kernelgen as kg
>>> op = kg.get_op("reduce_sum")
>>> s = op.schedule(threads=256)          # the default schedule with one knob changed
>>> src = kg.render(op.kernel(s))         # CUDA source text
>>> "extern \\"C\\" __global__" in src
True

The ops, the renderer and the GPU layer load on first use, so that the `kernelgen` command starts
with nothing heavy imported and Ctrl-C while it loads exits quietly (kernelgen/__main__.py).
"""
import importlib
import sys
import types

from .config import VERSION as __version__
from .errors import CompileError, KernelgenError, LaunchError, ScheduleError, UsageError, ValidationError

_LAZY = {"launch": "prepared", "OPS": "ops", "get_op": "ops", "render": "render", "schedule": "schedule",
         "Schedule": "schedule"}        # name -> the submodule it comes from

__all__ = ["__version__", "launch", "OPS", "get_op", "render", "schedule", "Schedule", "KernelgenError", "ScheduleError",
           "UsageError", "CompileError", "LaunchError", "ValidationError"]


class _Package(types.ModuleType):
    def __getattr__(self, name):          # only for names not set yet
        if name not in _LAZY:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{self.__name__}.{_LAZY[name]}"), name)
        types.ModuleType.__setattr__(self, name, value)
        return value

    def __setattr__(self, name, value):
        # Loading the submodules kernelgen.render and kernelgen.schedule must not hide the functions
        # kernelgen.render and kernelgen.schedule (the import system sets a package attribute per submodule).
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        types.ModuleType.__setattr__(self, name, value)

    def __dir__(self):
        return sorted(set(types.ModuleType.__dir__(self)) | set(_LAZY))


sys.modules[__name__].__class__ = _Package
