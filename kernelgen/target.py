"""Targets as data: what each arch allows and offers, and what each known GPU peaks at.

>>> from kernelgen.target import target
>>> t = target("sm_80")
>>> t.max_smem, t.has("cp_async"), t.has("wgmma")
(166912, True, False)
>>> target("sm_90a").has("wgmma"), target("sm_90").has("wgmma")
(True, False)
>>> target("sm_12")
Traceback (most recent call last):
...
kernelgen.errors.UsageError: arch 'sm_12' is not a target; choose one of sm_70, sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, sm_120

Every legality rule reads a Target: limits (threads, shared memory per block and per SM, registers),
features (cp.async, ldmatrix, the mma.sync shapes, wgmma, TMA, clusters) and, for the roofline, the
peaks of the GPU it stands for. Without a GPU a target stands for the arch's reference GPU (sm_90:
the H100 SXM); on a GPU, `gpu.device().target` is built from the device's own properties.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .errors import ScheduleError, UsageError
from .frozen import hash_once

KB = 1024

# Features, by the first arch that has them. "a" archs (sm_90a) add arch-specific instructions that
# run on that exact chip only; a plain sm_90 cubin cannot use them (ptxas refuses wgmma there).
FEATURES_SINCE = {
    "wmma_f16": (7, 0),           # nvcuda::wmma 16x16x16 with half inputs
    "mma_m16n8k8_f16": (7, 5),
    "ldmatrix": (7, 5),
    "cp_async": (8, 0),           # cp.async.ca/cg, commit and wait groups
    "bf16": (8, 0),               # __nv_bfloat16 arithmetic, and bf16 inputs to wmma and mma.sync
    "mma_m16n8k16_f16": (8, 0),
    "mma_m16n8k16_bf16": (8, 0),
    "mma_m16n8k8_tf32": (8, 0),
    "mma_f64": (8, 0),            # mma.sync m8n8k4 .f64 (DMMA)
    "mma_m16n8k8_f64": (9, 0),    # mma.sync m16n8k8 .f64: one instruction for four m8n8k4
    "tma": (9, 0),                # cp.async.bulk.tensor with mbarrier completion
    "clusters": (9, 0),           # thread-block clusters, distributed shared memory
}
ARCH_SPECIFIC = {"sm_90a": frozenset({"wgmma", "setmaxnreg"})}


@dataclass(frozen=True)
class Peaks:
    """Datasheet figures of one GPU: bytes/s of device memory and dense flop/s per math path."""

    gpu: str
    sms: int
    l2_bytes: int
    bytes_per_s: float
    fp32: float                   # CUDA cores, FFMA
    tf32: float = 0.0             # tensor cores, dense
    fp16: float = 0.0             # tensor cores, fp16/bf16 inputs with fp32 accumulation, dense
    fp64: float = 0.0             # fp64 tensor cores (DMMA), dense; else the fp64 FMA rate


MATH_PATHS = ("fp32", "tf32", "fp16", "fp64")   # Peaks' flop/s fields, a DType's `math`


# The GPUs whose figures are known (the driver reports no useful clocks for a roofline). Names are
# matched as substrings of the device name.
GPUS = (
    Peaks("H100 80GB HBM3", 132, 50 * 1024 * KB, 3.35e12, 66.9e12, 494.7e12, 989.4e12, fp64=66.9e12),
    Peaks("H100 PCIe", 114, 50 * 1024 * KB, 2.0e12, 51.2e12, 378e12, 756e12, fp64=51.2e12),
    Peaks("H200", 132, 50 * 1024 * KB, 4.8e12, 66.9e12, 494.7e12, 989.4e12, fp64=66.9e12),
    Peaks("A100-SXM4-80GB", 108, 40 * 1024 * KB, 2.04e12, 19.5e12, 156e12, 312e12, fp64=19.5e12),
    Peaks("A100-SXM4-40GB", 108, 40 * 1024 * KB, 1.56e12, 19.5e12, 156e12, 312e12, fp64=19.5e12),
    Peaks("A100 80GB PCIe", 108, 40 * 1024 * KB, 1.94e12, 19.5e12, 156e12, 312e12, fp64=19.5e12),
    Peaks("L40S", 142, 96 * 1024 * KB, 0.864e12, 91.6e12, 183e12, 362e12, fp64=1.41e12),
    Peaks("RTX 4090", 128, 72 * 1024 * KB, 1.01e12, 82.6e12, 82.6e12, 165.2e12, fp64=1.29e12),
    Peaks("A10", 72, 6 * 1024 * KB, 0.6e12, 31.2e12, 62.5e12, 125e12, fp64=0.98e12),
    Peaks("V100-SXM2", 80, 6 * 1024 * KB, 0.9e12, 15.7e12, 0.0, 125e12, fp64=7.8e12),
)


@dataclass(frozen=True)
class ArchLimits:
    max_smem: int                 # shared memory per block, with the dynamic opt-in
    smem_per_sm: int
    max_threads_per_sm: int
    reference_gpu: str            # whose SM count and peaks stand for the arch when no GPU is present


ARCHS = {
    "sm_70": ArchLimits(96 * KB, 96 * KB, 2048, "V100-SXM2"),
    "sm_75": ArchLimits(64 * KB, 64 * KB, 1024, "V100-SXM2"),
    "sm_80": ArchLimits(163 * KB, 164 * KB, 2048, "A100-SXM4-80GB"),
    "sm_86": ArchLimits(99 * KB, 100 * KB, 1536, "A10"),
    "sm_87": ArchLimits(163 * KB, 164 * KB, 1536, "A100-SXM4-80GB"),
    "sm_89": ArchLimits(99 * KB, 100 * KB, 1536, "L40S"),
    "sm_90": ArchLimits(227 * KB, 228 * KB, 2048, "H100 80GB HBM3"),
    "sm_90a": ArchLimits(227 * KB, 228 * KB, 2048, "H100 80GB HBM3"),
    "sm_100": ArchLimits(227 * KB, 228 * KB, 2048, "H100 80GB HBM3"),
    "sm_120": ArchLimits(99 * KB, 100 * KB, 1536, "RTX 4090"),
}
DEFAULT_ARCH = "sm_90"


def capability(arch: str) -> tuple[int, int]:
    """(major, minor) of an arch name: sm_90a -> (9, 0), sm_120 -> (12, 0)."""
    digits = arch[3:].rstrip("a")
    return int(digits[:-1]), int(digits[-1])


def features_of(arch: str) -> frozenset[str]:
    cc = capability(arch)
    return frozenset(f for f, since in FEATURES_SINCE.items() if cc >= since) | ARCH_SPECIFIC.get(arch, frozenset())


def first_arch_with(feature: str) -> str:
    return next((a for a in ARCHS if feature in features_of(a)), "none")


@hash_once
@dataclass(frozen=True)
class Target:
    """What legality is checked against and what the roofline is drawn with."""

    arch: str = DEFAULT_ARCH
    gpu: str = "H100 80GB HBM3"   # the device's name, or the arch's reference GPU
    sms: int = 132
    max_threads: int = 1024
    max_threads_per_sm: int = 2048
    static_smem: int = 48 * KB    # without the dynamic opt-in
    max_smem: int = 227 * KB      # per block, with the dynamic opt-in
    smem_per_sm: int = 228 * KB
    regs_per_sm: int = 64 * KB
    max_registers: int = 255
    l2_bytes: int = 50 * 1024 * KB
    features: frozenset = field(default_factory=lambda: features_of(DEFAULT_ARCH))
    peaks: Peaks | None = None    # None: no figures known for this GPU (the roofline estimates them)

    @property
    def short(self) -> str:
        """The arch as it appears in kernel names: sm90, sm90a."""
        return self.arch.replace("_", "")

    def has(self, feature: str) -> bool:
        return feature in self.features

    def require(self, feature: str, primitive: str, target: str, value) -> None:
        """ScheduleError unless this arch has `feature`, naming the first arch that does."""
        if not self.has(feature):
            specific = [a for a, fs in ARCH_SPECIFIC.items() if feature in fs]
            need = (f"{' or '.join(specific)} (an arch-specific target: no other arch runs it)" if specific
                    else f"{first_arch_with(feature)} or later")
            raise ScheduleError(primitive, target, value, limit=f"{feature} needs {need}; {self.arch} lacks it")

    def resident(self, threads: int, smem_bytes: int, registers: int) -> int:
        """Blocks of `threads` threads, `smem_bytes` of shared memory and ~`registers` a thread an SM holds at
        once (1-32): its threads, its shared memory (1 KB a block reserved) and its registers (allocated 8 at a
        time, at most 255)."""
        regs = min(255, -(-max(registers, 32) // 8) * 8)
        return max(1, min(32, self.max_threads_per_sm // threads, self.smem_per_sm // (smem_bytes + 1024),
                          self.regs_per_sm // (regs * threads)))

    def peak_flops(self, math: str) -> float:
        """Dense flop/s of a math path ("fp32", "tf32", "fp16", "fp64"), 0 when unknown."""
        return getattr(self.peaks, math, 0.0) if self.peaks else 0.0


def gpu_peaks(name: str) -> Peaks | None:
    return next((p for p in GPUS if p.gpu in name), None)


def parse_arch(arch: str) -> str:
    if arch not in ARCHS:
        raise UsageError(f"arch {arch!r} is not a target; choose one of {', '.join(ARCHS)}")
    return arch


def target(arch: str = DEFAULT_ARCH) -> Target:
    """The target for `arch` without a GPU: the arch's limits and features, its reference GPU's SMs."""
    lim = ARCHS[parse_arch(arch)]
    peaks = gpu_peaks(lim.reference_gpu)
    return Target(arch=arch, gpu=peaks.gpu, sms=peaks.sms, max_threads_per_sm=lim.max_threads_per_sm,
                  max_smem=lim.max_smem, smem_per_sm=lim.smem_per_sm, l2_bytes=peaks.l2_bytes,
                  features=features_of(arch), peaks=peaks)


def default_target() -> Target:
    return target(DEFAULT_ARCH)


def device_arch(major: int, minor: int) -> str:
    """The arch a device of compute capability major.minor compiles for: sm_90a on a Hopper chip, so
    that its arch-specific instructions (wgmma) are in reach; the plain arch elsewhere."""
    arch = f"sm_{major}{minor}"
    return arch + "a" if f"{arch}a" in ARCHS else arch


def for_device(name: str, major: int, minor: int, sms: int, l2_bytes: int, max_smem: int, smem_per_sm: int,
               max_threads_per_sm: int, regs_per_sm: int, estimate: Peaks) -> Target:
    """A GPU's own figures; peaks from the datasheet table when the GPU is known, else `estimate`."""
    arch = device_arch(major, minor)
    base = target(arch) if arch in ARCHS else Target(arch=arch, features=features_of(arch))
    return replace(base, gpu=name, sms=sms, l2_bytes=l2_bytes, max_smem=max_smem, smem_per_sm=smem_per_sm,
                   max_threads_per_sm=max_threads_per_sm, regs_per_sm=regs_per_sm,
                   peaks=gpu_peaks(name) or estimate)
