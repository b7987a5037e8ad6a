"""Register-bank statistics of the FFMAs in a SASS listing (nvdisasm -c): how many register-file reads each
FFMA makes (operands the reuse cache does not serve) and how many of them share a bank, under three models of
the banks (reg % 2, reg % 4, and 64-bit pairs: (reg >> 1) % 2). Used to test whether dispatch stalls follow
bank conflicts (they did not: bench_results/2026-11-25-s19/).
    python3 bench/sgemm_tma_proto/ffma_banks.py kernel.sass ...
"""
import re, sys
def analyse(path):
    prev = {}
    stats = {}
    total = 0
    for line in open(path):
        m = re.search(r"\bFFMA\s+(R\d+|RZ), (-?)(R\d+|RZ)(\.reuse)?, (-?)(R\d+|RZ)(\.reuse)?, (-?)(R\d+|RZ)(\.reuse)?", line)
        if not m:
            if re.search(r"\b(BRA|BAR|SYNCS|EXIT)\b", line): prev = {}
            continue
        ops = [(m.group(3), m.group(4)), (m.group(6), m.group(7)), (m.group(9), m.group(10))]
        reads = [int(r[1:]) for slot, (r, _) in enumerate(ops) if r != "RZ" and prev.get(slot) != r]
        prev = {slot: r for slot, (r, reuse) in enumerate(ops) if reuse}
        total += 1
        for banks in (2, 4, "pair"):
            b = [(r >> 1) & 1 if banks == "pair" else r % banks for r in reads]
            worst = max((b.count(x) for x in set(b)), default=0)
            stats.setdefault((banks, worst), 0)
            stats[(banks, worst)] += 1
        stats.setdefault(("reads", len(reads)), 0); stats[("reads", len(reads))] += 1
    print(path, total, {k: f"{100*v/total:.1f}%" for k, v in sorted(stats.items(), key=str)})
for p in sys.argv[1:]: analyse(p)
