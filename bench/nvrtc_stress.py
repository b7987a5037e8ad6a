"""Sporadic NVRTC "At end of source" errors in GPU test runs of 4-8 workers: does handing nvrtcCreateProgram its
source as a temporary (the old compile.py) show them, and holding it (the new) not?

    PYTHONPATH=. python3 bench/nvrtc_stress.py MODE PROCS ROUNDS     # MODE temporary | held

PROCS processes each compile ROUNDS x (layer norm fp32, bf16; the bf16 wgmma gemm) sources straight
through NVRTC (no cache), from a thread as kernelgen.interrupt does, and count the failures.
"""
import multiprocessing
import sys
import threading


def compile_once(nvrtc, source: str, name: str, opts: list, mode: str) -> str:
    if mode == "temporary":
        err, prog = nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    else:
        src, nm = source.encode(), f"{name}.cu".encode()
        err, prog = nvrtc.nvrtcCreateProgram(src, nm, 0, [], [])
    try:
        (cerr,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if cerr == nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return ""
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * max(size, 2)
        nvrtc.nvrtcGetProgramLog(prog, buf)
        return buf.rstrip(b"\0 ").decode(errors="replace").splitlines()[0]
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def worker(args):
    mode, seed, rounds = args
    from kernelgen import get_op
    from kernelgen.compile import _nvrtc, _runtime_includes, BASE_OPTIONS
    from kernelgen.render import render
    from kernelgen.target import target
    nvrtc = _nvrtc()
    t = target("sm_90a")
    ln, gemm = get_op("layernorm"), get_op("gemm")
    p = gemm.problem({"M": 512, "N": 512, "K": 512}, dtype="bfloat16", layout="NT")
    kernels = [ln.kernel(ln.default_schedule(), t, ln.types(d)) for d in ("float32", "bfloat16")]
    kernels.append(gemm.kernel(gemm.schedule_for(p, t), t, gemm.types("bfloat16"), "NT"))
    opts = [b"--gpu-architecture=sm_90a"] + [o.encode() for o in BASE_OPTIONS + _runtime_includes()]
    failures = []
    for r in range(rounds):
        for k in kernels:
            src = render(k) + f"\n// round {seed}.{r}\n"
            box = []
            th = threading.Thread(target=lambda: box.append(compile_once(nvrtc, src, k.name, opts, mode)))
            th.start()
            th.join()
            if box[0]:
                failures.append(f"{k.name}: {box[0]}")
    return rounds * len(kernels), failures


def main():
    mode, procs, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with multiprocessing.get_context("spawn").Pool(procs) as pool:
        results = pool.map(worker, [(mode, i, rounds) for i in range(procs)])
    total = sum(n for n, _ in results)
    failures = [f for _, fs in results for f in fs]
    print(f"{mode}: {procs} processes, {total} compiles, {len(failures)} failed")
    for f in failures[:10]:
        print("  ", f)


if __name__ == "__main__":
    main()
