"""Dispatch stalls of FFMAs by how many registers they read (ffma_banks.py): ncu's per-instruction samples
(`ncu -i REP --page source --csv --print-source sass`, which prints no .reuse flags) matched line by line to
the same kernel's `nvdisasm -c` listing (which does). Per (model, registers read, reads in the fullest bank):
the FFMAs executed and their dispatch-stall samples per selected sample.
    python3 bench/sgemm_tma_proto/dispatch_by_reads.py source.csv kernel.sass [source.csv kernel.sass ...]
"""
import collections
import csv
import re
import sys

from ffma_banks import MODELS, ffma_reads, worst_bank


def ncu_rows(path):
    rows = list(csv.reader(open(path)))
    head_at = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    head = rows[head_at]
    return [dict(zip(head, r)) for r in rows[head_at + 1:] if len(r) == len(head)]


def sass_lines(path):
    return [m.group(1) for m in (re.match(r"\s+/\*[0-9a-f]{4}\*/\s+(.*?)\s*;", l) for l in open(path)) if m]


def main(args):
    for csv_path, sass_path in zip(args[::2], args[1::2]):
        rows, lines = ncu_rows(csv_path), sass_lines(sass_path)
        if len(rows) != len(lines):
            sys.exit(f"{csv_path}: {len(rows)} instructions, {sass_path}: {len(lines)}: not the same kernel")
        by = collections.defaultdict(lambda: [0, 0, 0])
        for (n, reads), row in zip(ffma_reads(lines), rows):
            if reads is None:
                continue
            for model in MODELS:
                c = by[(model, len(reads), worst_bank(reads, model))]
                c[0] += int(row["Instructions Executed"] or 0)
                c[1] += int(row["stall_dispatch"] or 0)
                c[2] += int(row["stall_selected"] or 0)
        print(csv_path)
        for key in sorted(by):
            executed, dispatch, selected = by[key]
            print(f"    {key}: executed {executed:.3g}, dispatch / selected {dispatch / max(selected, 1):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
