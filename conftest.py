"""Collection rules for the doctests of the package (`--doctest-modules` collects kernelgen/ too)."""
import importlib.util

# kernelgen.torch is the optional PyTorch binding: without torch, importing it raises (by design, with
# the extra to install), so its doctests are collected only where torch is installed.
collect_ignore = [] if importlib.util.find_spec("torch") else ["kernelgen/torch.py"]
