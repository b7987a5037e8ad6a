"""Record, then compare, the sm_90 SASS of every kernel in generated/ (each op's default and ladder):
a template refactor must leave the machine code alone.

    python3 bench/sass_check.py record /tmp/sass_base     # before the change
    python3 bench/sass_check.py compare /tmp/sass_base    # after: identical / same mix / DIFFERENT
    python3 bench/sass_check.py record /tmp/sass_more 20  # also 20 random legal kernels of each op

Per kernel file: every symbol's nvdisasm lines with addresses, encodings and symbol names taken
out, and its resources (registers, shared, local memory, spills). "same mix" means the instruction
sequence changed but every opcode count, the registers and the shared memory did not.

Compiles go through the content-keyed cache, so an unchanged source is compared with its own cached
cubin. NVRTC is not deterministic for every kernel: the unchanged source of
sgemm_..._lcontiguous_..._akm_pa0_pb0_va4_vb4_vc4_st1_... gives its _unaligned symbol 123 registers
in most fresh compiles and 127 in some (KERNELGEN_NO_CACHE=1). A DIFFERENT verdict on fresh compiles
is only believed once the old source, compiled fresh as often, never gives the new variant.
"""
import json
import random
import re
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kernelgen.compile import compile_cuda
from kernelgen.emit import generated_kernels
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.inspect import _OPCODE, _functions, _resources, _spills
from kernelgen.ops import OPS
from kernelgen.render import render
from kernelgen.target import target


def _normalise(lines: list[str], names: list[str]) -> list[str]:
    out = []
    for line in lines:
        line = re.sub(r"/\*[0-9a-f]{4,}\*/", "", line)          # address
        line = re.sub(r"/\* 0x[0-9a-f]+ \*/", "", line)         # encoding
        for n in names:
            line = line.replace(n, "SYM")
        line = " ".join(line.split())
        if line:
            out.append(line)
    return out


def snapshot(kernel) -> dict:
    compiled = compile_cuda(render(kernel), kernel.arch, kernel.name)
    res, spills = _resources(compiled.cubin), _spills(compiled.log)
    funcs = _functions(compiled.cubin)
    names = sorted(funcs, key=len, reverse=True)
    return {sym: {"sass": _normalise(lines, names), "res": res.get(sym, {}), "spill": spills.get(sym, 0)}
            for sym, lines in funcs.items()}


def sampled(op, n: int, tries: int = 20000) -> list:
    """Up to n legal kernels of random knob choices (seeded by the op's name: the same draws every run)."""
    rng, out, seen = random.Random(op.name), [], set()
    for _ in range(tries):
        knobs = {k.name: rng.choice(tuple(k.choices)) for k in op.knobs}
        try:
            kernel = op.kernel(op.schedule_from_knobs(**knobs), target("sm_90"))
        except (ScheduleError, UsageError, TypeError, ValueError):
            continue
        if kernel.name not in seen:
            seen.add(kernel.name)
            out.append(kernel)
            if len(out) == n:
                break
    return out


def kernels(sample: int = 0):
    ks = {k.name: k for _, op in sorted(OPS.items()) for _, k in generated_kernels(op, target("sm_90"))}
    for _, op in sorted(OPS.items()) if sample else ():
        ks.update((k.name, k) for k in sampled(op, sample))
    return list(ks.values())


def main(mode: str, where: str, sample: int = 0) -> int:
    d = Path(where)
    ks = kernels(sample)
    with ThreadPoolExecutor(4) as pool:
        snaps = dict(zip((k.name for k in ks), pool.map(snapshot, ks)))
    if mode == "record":
        d.mkdir(parents=True, exist_ok=True)
        for name, s in snaps.items():
            (d / f"{name}.json").write_text(json.dumps(s, indent=0))
        print(f"recorded {len(snaps)} kernel files in {d}")
        return 0
    tally, bad = Counter(), 0
    for name, now in snaps.items():
        path = d / f"{name}.json"
        if not path.exists():
            print(f"NEW        {name}")
            tally["new"] += 1
            continue
        base = json.loads(path.read_text())
        for sym in sorted(set(base) | set(now)):
            b, n = base.get(sym), now.get(sym)
            if b is None or n is None:
                verdict = "DIFFERENT (symbol missing)"
            elif b == n:
                verdict = "identical"
            else:
                mix = lambda s: Counter(m.group(1) for ln in s["sass"] if (m := _OPCODE.search("/*0000*/ " + ln)))
                same = mix(b) == mix(n) and b["res"] == n["res"] and b["spill"] == n["spill"]
                verdict = "same mix" if same else "DIFFERENT"
                if not same:
                    diff = (mix(n) - mix(b)) + Counter({f"-{k}": v for k, v in (mix(b) - mix(n)).items()})
                    verdict += f" res {b['res']} -> {n['res']} ops {dict(diff)}"
            tally[verdict.split(" res")[0]] += 1
            bad += verdict.startswith("DIFFERENT")
            if verdict != "identical" or "-v" in sys.argv:
                print(f"{verdict:10} {sym}")
    print(dict(tally))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0))
