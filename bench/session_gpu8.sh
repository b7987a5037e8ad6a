set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 230 python3 -m kernelgen.cli bench --suite llm-layers --shard 1/2 --reps 10 --markdown --json $OUT/llm_suite_1.json > $OUT/llm_suite_1.md 2>/dev/null; echo rc=$?
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/llm_suite_1.json"))
for r in d["runs"]:
    ours, vend = r["rows"][0], (r["rows"][1] if len(r["rows"]) > 1 else None)
    print(f'{r["op"]:10s} {r["problem"]:42s} {ours["time_us"]:10.1f} {vend["time_us"] if vend else float("nan"):10.1f} {ours["vs_vendor"]:.2f}x {ours["valid"]}')
PY
