"""Replay: strategies against recorded sweeps instead of a GPU; random against model-guided, median of 5 seeds.

No sweep of 2000 or more candidates has been recorded on a GPU yet, so the comparisons at that scale
run on synthetic sweeps: a smooth function of the knobs (replay.synthetic_records) over the legal
spaces of real ops (sgemm 580 points, conv2d 222, gemm 319 on sm_90), and over a GEMM-shaped knob
space of 8342 points built here. They test the search logic, not a claim about real kernels; the
H100 records in bench_results/ are replayed too, where a sweep has enough records.
"""
import functools
import itertools
import json
import math
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelgen import get_op
from kernelgen.cli import main
from kernelgen.errors import UsageError
from kernelgen.tune import STRATEGIES
from kernelgen.tune.db import TuningDB
from kernelgen.tune.replay import (compare, load_sweep, median_evaluations, read_records, replay,
                                   synthetic_records)
from kernelgen.tune.runners import Outcome
from kernelgen.tune.space import Candidate

RESULTS = Path(__file__).resolve().parent.parent / "bench_results"
sklearn = pytest.importorskip  # noqa: E731  (called inside the tests that need the model)


def needs_model():
    pytest.importorskip("sklearn", reason="the model strategy needs scikit-learn (kernelgen[model])")


def test_a_sweep_is_the_recorded_schedules_with_their_median_time():
    op = get_op("gemv")
    sweep = load_sweep(op, read_records(RESULTS / "tuning_h100_run3.jsonl"), "M=8192,N=8192")
    assert len(sweep.space) == 84 and sweep.left_out == 0          # 146 records, some schedules measured twice
    assert sweep.gpu == "H100 80GB HBM3" and sweep.arch == "sm_90"
    assert {r.problem for r in sweep.others} == {"M=16384,N=4096", "M=2048,N=32768", "M=65536,N=1024",
                                                 "M=262144,N=128"}
    times = {}
    for r in read_records(RESULTS / "tuning_h100_run3.jsonl"):
        if r.op == "gemv" and r.problem == "M=8192,N=8192":
            times.setdefault(json.dumps(r.schedule, sort_keys=True), []).append(r.time_us)
    twice = next(k for k, v in times.items() if len(v) == 2)
    cand = next(c for c in sweep.space if json.dumps(c.schedule.to_dict(), sort_keys=True) == twice)
    assert sweep.outcomes[cand.schedule.to_json()].time_us == statistics.median(times[twice])


def test_several_sweeps_in_a_file_ask_which_and_a_missing_one_lists_them():
    op = get_op("gemv")
    records = read_records(RESULTS / "tuning_h100_run3.jsonl")
    with pytest.raises(UsageError, match=r"hold 5 sweeps of gemv; choose one with --size: M=8192,N=8192 .*146 records"):
        load_sweep(op, records)
    with pytest.raises(UsageError, match="no records of gemv on M=1,N=1 to replay"):
        load_sweep(op, records, "M=1,N=1")


def test_replay_counts_evaluations_until_one_within_95_percent_of_the_best():
    op = get_op("softmax")
    sweep = load_sweep(op, synthetic_records(op, op.problem(), seed=3))
    every = replay(sweep, "exhaustive", until_goal=False)
    assert every.measured == len(sweep.space) and every.best_us == sweep.best_us
    order = [c.schedule.to_json() for c in sweep.space]       # exhaustive asks in the space's order
    limit = sweep.best_us / 0.95
    first = next(n for n, k in enumerate(order, 1) if sweep.outcomes[k].status == "ok" and sweep.outcomes[k].time_us <= limit)
    assert every.evaluations == first
    stopped = replay(sweep, "exhaustive", batch=1)
    assert stopped.evaluations == first == stopped.measured     # it stops at the goal


def test_synthetic_sweeps_are_smooth_flat_as_real_ones_and_marked_as_not_measurements():
    op = get_op("sgemm")
    records = synthetic_records(op, op.problem(), seed=0)
    assert len(records) == 582 and {r.gpu for r in records} == {"synthetic"}
    assert all("not a measurement" in r.detail for r in records)
    times = sorted(r.time_us for r in records if r.status == "ok")
    assert 1.25 < times[len(times) // 2] / times[0] < 1.35            # the H100 sweeps: 1.05x to 1.6x
    assert sum(r.status != "ok" for r in records) == int(0.05 * 582)
    again = synthetic_records(op, op.problem(), seed=0)
    assert [r.time_us for r in again] == [r.time_us for r in records]


@pytest.mark.parametrize("op_name", ["sgemm", "conv2d", "gemm"])
def test_every_strategy_reaches_the_goal_on_a_synthetic_sweep_of_a_real_op_space(op_name):
    op = get_op(op_name)
    sweep = load_sweep(op, synthetic_records(op, op.problem(), seed=0))
    names = [s for s in STRATEGIES if s != "model" or __import__("kernelgen.tune.model").tune.model.available()]
    for name in names:
        r = replay(sweep, name, 0)
        assert r.evaluations is not None and r.evaluations <= len(sweep.space), name


def geomean(xs):
    return math.exp(statistics.mean(math.log(x) for x in xs))


def test_model_guided_needs_under_a_tenth_of_real_op_spaces():
    """Median over 5 seeds of evaluations to 95% of the best on 9 synthetic sweeps (3 landscapes of
    sgemm, conv2d and gemm): their geometric mean. One landscape alone is not a verdict: where the
    best point is one of the 3 wmma points of gemm's 319, no strategy finds it in a tenth. Nor is
    "fewer than random" asserted here: in spaces this small, with 2-5% of the points within 95%,
    random's 5 seeds are often lucky (these 9 sweeps: geometric means 20.9 model, 20.4 random; the
    next 3 landscapes: 15.4 and 33.7). The 8342-point test below compares the two."""
    needs_model()
    medians, sizes = [], []
    for op_name in ("sgemm", "conv2d", "gemm"):
        op = get_op(op_name)
        for landscape in range(3):
            sweep = load_sweep(op, synthetic_records(op, op.problem(), seed=landscape))
            sizes.append(len(sweep.space))
            medians.append(median_evaluations([replay(sweep, "model", s) for s in range(5)]))
    assert geomean(medians) <= 0.10 * geomean(sizes), medians


def test_records_of_another_size_halve_the_evaluations_the_model_needs():
    needs_model()
    op = get_op("sgemm")
    here, there = op.problem({"M": 2048, "N": 2048, "K": 1024}), op.problem({"M": 4096, "N": 4096, "K": 4096})
    sweep = load_sweep(op, synthetic_records(op, here, seed=0) + synthetic_records(op, there, seed=0), str(here))
    assert len(sweep.others) == 580
    cold = median_evaluations([replay(sweep, "model", s, transfer=False) for s in range(5)])
    warm = median_evaluations([replay(sweep, "model", s, transfer=True) for s in range(5)])
    assert warm <= cold / 2, (warm, cold)


def gemm_like_space():
    """A GEMM-shaped knob space with GEMM-shaped legality (threads, shared memory, registers): 8342 points."""
    out = []
    for bm, bn, bk, tm, tn, stages, copy, swizzle in itertools.product(
            (32, 64, 128, 256), (32, 64, 128, 256), (8, 16, 32, 64), (2, 4, 8, 16), (2, 4, 8, 16), (1, 2, 3, 4),
            ("sync", "cp_async"), (1, 8)):
        threads, smem, regs = (bm // tm) * (bn // tn), (bm + bn) * bk * 4 * stages, tm * tn + 2 * (tm + tn) + 24
        if not (64 <= threads <= 1024 and smem <= 227 * 1024 and regs <= 255) or (copy == "sync" and stages > 2):
            continue
        knobs = dict(bm=bm, bn=bn, bk=bk, tm=tm, tn=tn, stages=stages, copy=copy, swizzle=swizzle)
        blocks = min(2048 // threads, 233472 // smem, 65536 // (regs * threads))
        feats = {**{k: float(v) for k, v in knobs.items() if k != "copy"}, "copy=sync": float(copy == "sync"),
                 "threads": float(threads), "smem": float(smem), "regs": float(regs), "occupancy": blocks * threads / 2048}
        out.append(Candidate(knobs, features=feats))
    return out


def gemm_like_times(space, seed):
    """A smooth bowl in the log-knobs (median 1.3x the best) with an occupancy cliff; 5% fail."""
    import numpy as np
    rng = np.random.default_rng(seed)
    names = list(space[0].knobs)
    x = np.array([[math.log2(v) if isinstance(v, int) else float(v == "cp_async") for v in c.knobs.values()]
                  for c in space])
    x = (x - x.min(0)) / np.where(x.max(0) > x.min(0), x.max(0) - x.min(0), 1)
    b = rng.normal(0, 0.4, (len(names), len(names)))
    q = np.diag(rng.uniform(0.3, 2.0, len(names))) + (b + b.T) / 4
    q += np.eye(len(names)) * max(0, 0.05 - np.linalg.eigvalsh(q).min())
    z = x - rng.uniform(0, 1, len(names))
    cost = np.einsum("ij,jk,ik->i", z, q, z)
    cost = (cost - cost.min()) * math.log(1.3) / np.median(cost - cost.min())
    occupancy = np.array([c.features["occupancy"] for c in space])
    t = 100 * np.exp(cost) * (1 + 0.3 * (occupancy < 0.25)) * np.exp(rng.normal(0, 0.01, len(space)))
    fail = set(rng.choice(len(space), len(space) // 20, replace=False).tolist())
    return {id(c): Outcome("launch_error") if i in fail else Outcome("ok", float(t[i])) for i, c in enumerate(space)}


def evaluations_to_goal(name, space, times, seed, batch=4):
    best = min(o.time_us for o in times.values() if o.time_us)
    search, n = STRATEGIES[name].Search(space, seed), 0
    while asked := search.ask(batch):
        search.tell([(c, times[id(c)]) for c in asked])
        for c in asked:
            n += 1
            if times[id(c)].time_us and times[id(c)].time_us <= best / 0.95:
                return n
    return math.inf


def test_on_a_synthetic_space_of_8342_points_the_model_needs_under_a_hundredth_of_it():
    needs_model()
    space = gemm_like_space()
    assert len(space) == 8342
    medians = {"model": [], "random": []}
    for landscape in range(3):
        times = gemm_like_times(space, landscape)
        for name in medians:
            medians[name].append(statistics.median(evaluations_to_goal(name, space, times, s) for s in range(5)))
    assert max(medians["model"]) <= 0.01 * len(space), medians
    assert sum(medians["model"]) < sum(medians["random"]), medians


def test_the_h100_records_replay_and_every_strategy_reaches_95_percent():
    op = get_op("gemv")
    sweep = load_sweep(op, read_records(RESULTS / "tuning_h100_run3.jsonl"), "M=8192,N=8192")
    for name in STRATEGIES:
        if name == "model" and not __import__("kernelgen.tune.model").tune.model.available():
            continue
        runs = [replay(sweep, name, s) for s in range(5)]
        assert all(r.evaluations is not None for r in runs), name


def test_on_the_h100_softmax_sweep_with_one_point_within_95_percent_the_model_beats_random():
    """softmax rows=1024,cols=32768 on the H100: 30 schedules, one within 95% of the best (9.3x spread)."""
    needs_model()
    op = get_op("softmax")
    sweep = load_sweep(op, read_records(RESULTS / "tuning_h100_run3.jsonl"), "rows=1024,cols=32768")
    assert len(sweep.space) == 30
    runs = compare(sweep, ["random", "model"], seeds=5)
    assert median_evaluations(runs["model"]) < median_evaluations(runs["random"])


# -- the recorded wide sweeps (H100, 2026-11-24: `bash bench/sweep.sh`, every candidate validated) ------------
SWEEPS = RESULTS / "2026-11-24-s8"
WIDE = {"sgemm": "M=2047,N=2049,K=1023", "conv2d": "N=16,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1",
        "softmax": "rows=4096,cols=32000"}


@functools.lru_cache(maxsize=None)
def wide_sweep(op_name):
    op = get_op(op_name)
    return load_sweep(op, read_records(SWEEPS / f"sweep_{op_name}.jsonl.gz"), WIDE[op_name])


@functools.lru_cache(maxsize=None)
def cold_runs(op_name):
    """The model's replays of a recorded sweep without other sizes' records, seeds 0..4 (two tests read them)."""
    return [replay(wide_sweep(op_name), "model", s, transfer=False) for s in range(5)]


@pytest.mark.parametrize("op_name", sorted(WIDE))
def test_a_recorded_wide_sweep_holds_over_2000_schedules_all_measured(op_name):
    sweep = wide_sweep(op_name)
    assert len(sweep.space) >= 2000 and sweep.left_out == 0
    assert sweep.gpu == "H100 80GB HBM3" and sweep.arch == "sm_90a"
    assert all(o.status == "ok" for o in sweep.outcomes.values())        # the wide space compiled and validated
    within = sum(o.time_us <= sweep.best_us / 0.95 for o in sweep.outcomes.values())
    assert within < 0.02 * len(sweep.space)     # few within 95% (sgemm 6, conv2d 8, softmax 22): not a flat space


@pytest.mark.parametrize("op_name", sorted(WIDE))
def test_the_model_alone_needs_under_a_tenth_of_a_recorded_sweep(op_name):
    """Cold (no other sizes): median over 5 seeds, sgemm 59 of 2064, conv2d 57 of 2400, softmax 29 of 2308 (seeds
    0..14: 49, 79, 31). 51, 131 and 29 (seeds 0..14: 45, 124, 31) while the features of a split-K candidate
    described the fill zeroing the output (4096 blocks, 31 waves at every size) instead of its GEMM: 72 of
    sgemm's points, 764 of conv2d's; 144, 235 and 35 before the model read how full the last wave is."""
    needs_model()
    runs = cold_runs(op_name)
    assert median_evaluations(runs) <= 0.10 * len(wide_sweep(op_name).space), [r.evaluations for r in runs]


@pytest.mark.parametrize("op_name", ["conv2d", "softmax"])
def test_other_sizes_records_halve_what_the_model_needs_on_a_recorded_sweep(op_name):
    """Warmed by the H100 records of other sizes (bench/sweep_history.sh): conv2d 4 against 57 cold, softmax
    1 against 29 (seeds 0..14: 3 against 79, 1 against 31); 2 and 13 (seeds 0..14: 2 and 9) before the model
    weighed each other size by how its advice fares here (model.py), which asks each size's favourite first.
    conv2d was 21 against 131 while split-K candidates' features, and the history's stored ones, described
    the fill zeroing y. Not sgemm: there the other sizes' best tiles (256x128) lose to wave quantisation at
    2047x2049 (136 blocks on 132 SMs), and the warmed model needs 107 against 59 (seeds 0..14: 116 against 49;
    208 and 201 before the weighing, 242 against 51 before the split-K fix, BENCHMARKS.md)."""
    needs_model()
    sweep = wide_sweep(op_name)
    history = read_records(SWEEPS / f"history_{op_name}.jsonl.gz")
    cold = median_evaluations(cold_runs(op_name))
    warm = median_evaluations([replay(sweep, "model", s, extra_history=history) for s in range(5)])
    assert warm <= cold / 2, (warm, cold)


def test_sgemm_records_of_other_unaligned_sizes_halve_what_the_model_needs():
    """sgemm's sweep (2047x2049x1023) runs the element-wise kernel and its 6 points within 95% of the best use
    unroll_k 2 or min_blocks 2, knobs its default space never varies. Warmed by 3000 records of two other
    unaligned sizes drawn at random from the same wide space on the H100 (bench/sweep_history_wide.sh:
    3001x1023x1535, 1535x2999x767): 19 against 59 cold (seeds 0..14: 19 against 49; 23 and 22 before the
    model weighed other sizes by their advice)."""
    needs_model()
    cold = median_evaluations(cold_runs("sgemm"))
    warm = median_evaluations([replay(wide_sweep("sgemm"), "model", s, extra_history=wide_sgemm_history())
                               for s in range(5)])
    assert warm <= cold / 2, (warm, cold)


@functools.lru_cache(maxsize=None)
def wide_sgemm_history():
    return read_records(RESULTS / "2026-11-24-s11" / "history_sgemm_wide.jsonl.gz")


def test_sgemm_warmed_by_like_and_unlike_sizes_together_halves_what_the_model_needs():
    """A user's database holds both kinds: the aligned sizes' default-space records (their kernels unlike the
    sweep's; alone they mislead: 107 against 59) and the unaligned sizes' wide-space ones. The model weighs
    each size by how the points its own forest ranks best measure here (model.py: each size's favourite is
    asked first, a size whose picks run 16% slower than the best size's is left out), so the mix needs 17
    against 59 cold (seeds 0..14: 17 against 49; seeds 15..29: 15 against 52). Pooled as equals, as before
    the weighing: 52 (seeds 0..14: 60; 15..29: 42). Sensitive to the weighing's scale (model.TAU, seeds 0..14):
    0.03 gives 33, 0.1 gives 70."""
    needs_model()
    history = read_records(SWEEPS / "history_sgemm.jsonl.gz") + wide_sgemm_history()
    cold = median_evaluations(cold_runs("sgemm"))
    warm = median_evaluations([replay(wide_sweep("sgemm"), "model", s, extra_history=history) for s in range(5)])
    assert warm <= cold / 2, (warm, cold)


# -- the command line ----------------------------------------------------------------------------------
def test_cli_replay_compares_strategies_over_seeds():
    path = RESULTS / "tuning_h100_run3.jsonl"
    res = CliRunner().invoke(main, ["tune", "gemv", "--replay", str(path), "--size", "M=8192,N=8192",
                                    "--compare", "random,pattern", "--seeds", "3"])
    assert res.exit_code == 0, res.output
    assert "84 candidates on H100 80GB HBM3 (sm_90)" in res.output and "95% of it is <= " in res.output
    rows = {line.split()[0]: line.split() for line in res.output.splitlines() if line.startswith(("random", "pattern"))}
    assert set(rows) == {"random", "pattern"} and len(rows["random"][3].split(",")) == 3
    assert "median over seeds 0..2" in res.output


def test_cli_replay_of_one_strategy_and_its_mistakes(tmp_path):
    path = str(RESULTS / "tuning_softmax_h100_run3.jsonl")
    ok = CliRunner().invoke(main, ["tune", "softmax", "--replay", path, "--size", "rows=8192,cols=128",
                                   "--strategy", "genetic", "--seed", "4"])
    assert ok.exit_code == 0, ok.output
    assert "51 candidates" in ok.output and ok.output.splitlines()[-1].startswith("genetic ")
    for args, message in [
        ([], "hold 2 sweeps of softmax; choose one with --size"),
        (["--size", "rows=8192,cols=128", "--resume"], "a --replay records nothing"),
        (["--size", "rows=8192,cols=128", "--compare", "random,bayes"], "strategy 'bayes' is unknown"),
    ]:
        res = CliRunner().invoke(main, ["tune", "softmax", "--replay", path, *args])
        assert res.exit_code == 2 and message in res.output, res.output
    res = CliRunner().invoke(main, ["tune", "softmax", "--compare", "random,model"])
    assert res.exit_code == 2 and "give it with --replay FILE" in res.output
    res = CliRunner().invoke(main, ["tune", "softmax", "--replay", str(tmp_path)])
    assert res.exit_code == 2 and "is a folder" in res.output


def test_cli_model_without_scikit_learn_is_one_line_naming_the_extra(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.ensemble", None)
    path = str(RESULTS / "tuning_softmax_h100_run3.jsonl")
    res = CliRunner().invoke(main, ["tune", "softmax", "--replay", path, "--size", "rows=8192,cols=128",
                                    "--strategy", "model"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1] == \
        "error: the model strategy needs scikit-learn: pip install 'kernelgen[model]'"
    gpu = CliRunner().invoke(main, ["tune", "softmax", "--strategy", "model"])   # said before any GPU is looked for
    assert gpu.exit_code == 2 and "pip install 'kernelgen[model]'" in gpu.output


def test_cli_replay_takes_history_from_db_and_records_nothing_there(tmp_path):
    needs_model()
    op = get_op("sgemm")
    here, there = op.problem(), op.problem({"M": 4096, "N": 4096, "K": 4096})
    sweep_file = tmp_path / "sweep.jsonl"
    sweep_db = TuningDB(sweep_file)
    for r in synthetic_records(op, here, seed=0):
        sweep_db.append(r)
    other = TuningDB(tmp_path / "other.jsonl")
    for r in synthetic_records(op, there, seed=0):
        other.append(r)
    before = other.path.read_bytes()
    runs = {}
    for flag in ("--transfer", "--no-transfer"):
        res = CliRunner().invoke(main, ["tune", "sgemm", "--replay", str(sweep_file), "--db", str(other.path),
                                        "--compare", "model", "--seeds", "3", flag])
        assert res.exit_code == 0, res.output
        row = next(line for line in res.output.splitlines() if line.startswith("model"))
        runs[flag] = float(row.split()[1])
    assert runs["--transfer"] < runs["--no-transfer"]
    assert other.path.read_bytes() == before and len(sweep_db.records()) == 580
