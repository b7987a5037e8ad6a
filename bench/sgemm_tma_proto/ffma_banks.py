"""Register-file reads of the FFMAs in a SASS listing (`nvdisasm -c`): an FFMA reads up to three registers, and
an operand the instruction before left in the reuse cache (`.reuse`, same slot, same register) is not read again.
Prints, per listing, the share of FFMAs that read 2 and 3 registers and how many of those reads share a bank
under three models of the banks (reg % 2, reg % 4, 64-bit pairs (reg >> 1) % 2).
    python3 bench/sgemm_tma_proto/ffma_banks.py kernel.sass ...
"""
import collections
import re
import sys

FFMA = re.compile(r"\bFFMA\s+(R\d+|RZ), -?(R\d+|RZ)(\.reuse)?, -?(R\d+|RZ)(\.reuse)?, -?(R\d+|RZ)(\.reuse)?")
FENCE = re.compile(r"\b(BRA|BAR|SYNCS|EXIT)\b")      # the reuse cache is not relied on across these
MODELS = {"mod2": lambda r: r % 2, "mod4": lambda r: r % 4, "pair": lambda r: (r >> 1) & 1}


def ffma_reads(lines):
    """(position, registers read from the register file) of each FFMA among `lines` (SASS instruction texts);
    other lines give (position, None)."""
    cached = {}
    for n, line in enumerate(lines):
        m = FFMA.search(line)
        if not m:
            if FENCE.search(line):
                cached = {}
            yield n, None
            continue
        ops = [(m.group(2), m.group(3)), (m.group(4), m.group(5)), (m.group(6), m.group(7))]
        yield n, [int(r[1:]) for slot, (r, _) in enumerate(ops) if r != "RZ" and cached.get(slot) != r]
        cached = {slot: r for slot, (r, reuse) in enumerate(ops) if reuse}


def worst_bank(reads, model):
    """How many of `reads` fall in the fullest bank under `model`."""
    banks = [MODELS[model](r) for r in reads]
    return max((banks.count(b) for b in set(banks)), default=0)


def main(paths):
    for path in paths:
        stats, total = collections.Counter(), 0
        for _, reads in ffma_reads(open(path).read().splitlines()):
            if reads is None:
                continue
            total += 1
            stats[("reads", len(reads))] += 1
            for model in MODELS:
                stats[(model, len(reads), worst_bank(reads, model))] += 1
        print(path, total, "FFMA", {k: f"{100 * v / total:.1f}%" for k, v in sorted(stats.items(), key=str)})


if __name__ == "__main__":
    main(sys.argv[1:])
