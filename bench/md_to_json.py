"""Convert the tables `kernelgen bench --markdown` printed (bench_results/*.md) into results JSON
(kernelgen-results/1), so `kernelgen plot` and `kernelgen report` can draw them.

    PYTHONPATH=. python3 bench/md_to_json.py bench_results/gemm_ladders_h100_staged.md -o bench_results/json/
    PYTHONPATH=. python3 bench/md_to_json.py bench_results/*.md -o bench_results/json/

Each FILE.md becomes FOLDER/FILE.json; a file with no bench table is skipped with a note.
Schedules are not in the Markdown: rows carry the kernel's name, and "schedule": null.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelgen import results
from kernelgen.errors import UsageError


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("markdown", nargs="+")
    ap.add_argument("-o", "--out", default="bench_results/json", help="folder for the JSON files")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for md in map(Path, args.markdown):
        try:
            doc = results.from_markdown(md.read_text(encoding="utf-8"), source=str(md))
        except UsageError as e:
            print(f"note: {e}", file=sys.stderr)
            continue
        dest = results.write(doc, out / (md.stem + ".json"))
        print(f"{dest}: {len(doc['runs'])} runs, {sum(len(r['rows']) for r in doc['runs'])} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
