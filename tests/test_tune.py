"""Search logic without a GPU, through the replay runner; the append-only database."""
import json

import pytest

from kernelgen import get_op
from kernelgen.errors import UsageError
from kernelgen.target import Target, target
from kernelgen.tune import Outcome, ReplayRunner, best_schedule, tune
from kernelgen.tune.db import Record, TuningDB


@pytest.fixture
def op():
    return get_op("reduce_sum")


def recorded(op, problem):
    """A fake GPU: time falls with items, items=8 gives a wrong answer, threads=1024 fails to launch."""
    out = {}
    for knobs in op.space(problem, target()):
        s = op.schedule_from_knobs(**knobs).to_json()
        if knobs["items"] == 8:
            out[s] = Outcome("wrong_answer", None, "err 3.0")
        elif knobs["threads"] == 1024:
            out[s] = Outcome("launch_error", None, "too many resources")
        else:
            out[s] = Outcome("ok", 100.0 / knobs["items"] + knobs["grid_stride"] * 0.01)
    return out


def test_exhaustive_finds_the_best_and_records_failures_with_codes(op, tmp_path):
    problem = op.problem({"n": 1 << 20})
    db = TuningDB(tmp_path / "t.jsonl")
    res = tune(op, problem, runner=ReplayRunner(recorded(op, problem)), db=db, progress=False)
    assert res.best.knobs["items"] == 4 and res.best.knobs["grid_stride"] == 1
    # 96 points without prefetch, 192 with (items 1; distance 4 or 8; four forms): 64 of them at 1024 threads;
    # 24 pruned, shared slots that break their grid stride's blocks per SM (12 at 1024 threads)
    assert res.failures == {"wrong_answer": 24, "launch_error": 24 + 52}
    lines = db.path.read_text().splitlines()
    assert len(lines) == res.measured == 264
    assert {json.loads(l)["status"] for l in lines} == {"ok", "wrong_answer", "launch_error"}
    assert best_schedule(op, problem, db) == op.schedule_from_knobs(**res.best.knobs)


def test_resume_skips_what_is_measured_and_keeps_the_best(op, tmp_path):
    problem = op.problem({"n": 1 << 20})
    db = TuningDB(tmp_path / "t.jsonl")
    first = tune(op, problem, runner=ReplayRunner(recorded(op, problem)), strategy="random", budget=30, db=db,
                 progress=False)
    runner = ReplayRunner(recorded(op, problem))
    second = tune(op, problem, runner=runner, db=db, resume=True, progress=False)
    assert second.skipped == 30 and second.measured == 234 and len(runner.calls) == 234
    assert second.best.time_us <= first.best.time_us
    assert len(db.records()) == 264


def test_illegal_candidates_are_pruned_before_running(op, tmp_path):
    problem = op.problem({"n": 1000})
    runner = ReplayRunner({})
    runner.limits = Target(max_threads=256)  # a device that takes at most 256 threads per block
    res = tune(op, problem, runner=runner, db=TuningDB(tmp_path / "t.jsonl"), progress=False)
    # 512 and 1024 threads pruned, with prefetch too; and 256 threads x 8 blocks an SM of 8 + 1 shared slots
    assert res.pruned == 64 + 128 + 4 and len(runner.calls) == 32 + 60


def test_torn_last_line_is_skipped_and_nothing_is_rewritten(tmp_path):
    db = TuningDB(tmp_path / "t.jsonl")
    db.append(Record.make("reduce_sum", "n=1", "sm_90", "g", {"op": "reduce_sum"}, {}, "ok", 2.0))
    with open(db.path, "a") as f:
        f.write('{"op": "reduce_sum", "probl')  # a crash mid-write
    assert [r.time_us for r in db.records()] == [2.0]


def test_best_without_records_is_a_clear_error(op, tmp_path):
    with pytest.raises(UsageError, match="run `kernelgen tune reduce_sum` first"):
        best_schedule(op, op.problem(), TuningDB(tmp_path / "none.jsonl"))


def test_unknown_strategy(op, tmp_path):
    with pytest.raises(UsageError, match="choose one of exhaustive, random, anneal, genetic, pattern, model"):
        tune(op, op.problem(), runner=ReplayRunner({}), strategy="bayes", db=TuningDB(tmp_path / "x"))


def test_schedules_specialised_for_the_size_are_validated_where_they_apply():
    from kernelgen.tune import validation_problems
    op = get_op("softmax")
    problem = op.problem({"rows": 8192, "cols": 128})
    short = op.schedule_for(problem)                       # the row in registers: at most 128 columns
    checks = validation_problems(op, short, problem, target())
    assert checks and all(p["cols"] <= 128 for p in checks)
    long_rows = op.problem({"rows": 64, "cols": 30000})
    long_sched = op.schedule_for(long_rows)                # 1024 threads x 8 x float4: rows up to 32768 in registers
    every_size = [op.problem(sizes) for sizes in op.test_problems()]
    assert validation_problems(op, long_sched, long_rows, target()) == every_size   # the tails, not 30000 columns

    class LongTestsOnly(type(op)):                         # test sizes the short-row schedule refuses, all of them
        def test_problems(self):
            return ({"rows": 2, "cols": 4093}, {"rows": 1, "cols": 4096})
    assert validation_problems(LongTestsOnly(), short, problem, target()) == [problem]   # then the problem itself


class HalfReduce(type(get_op("reduce_sum"))):
    """reduce_sum as if it took fp16 inputs with fp16 or fp32 outputs (no op does yet)."""
    dtypes = ("float32", "float16")

    def out_dtypes(self, dtype_name):
        return (dtype_name, "float32")


@pytest.mark.parametrize("out, recorded", [(None, "float16"), ("float32", "float16->float32")])
def test_a_half_precision_tune_validates_and_records_half_precision(tmp_path, out, recorded):
    from kernelgen.tune import validation_problems
    op = HalfReduce()
    problem = op.problem({"n": 1 << 20}, dtype="float16", out_dtype=out)
    sched = op.default_schedule()
    checks = validation_problems(op, sched, problem, target())
    assert len(checks) == len(op.test_problems()) and {p.types for p in checks} == {problem.types}
    db = TuningDB(tmp_path / "t.jsonl")
    res = tune(op, problem, runner=ReplayRunner({}), budget=3, db=db, progress=False)
    assert [r.dtype for r in db.records()] == [recorded] * 3
    assert all("_f16" in r.kernel for r in res.records)    # the kernels tuned are the fp16 ones


def test_lines_written_before_features_still_load(tmp_path):
    db = TuningDB(tmp_path / "t.jsonl")
    old = {"op": "reduce_sum", "problem": "n=8", "dtype": "float32", "arch": "sm_90", "gpu": "H100", "version": "0.1",
           "schedule": {"op": "reduce_sum", "steps": []}, "knobs": {}, "status": "ok", "time_us": 1.5,
           "detail": "", "kernel": "k", "timestamp": 1.0}
    db.path.write_text(json.dumps(old) + "\n")
    (rec,) = db.records()
    assert rec.time_us == 1.5 and rec.features is None


def test_records_carry_the_features_of_their_schedule(op, tmp_path):
    from kernelgen.features import features
    problem = op.problem({"n": 1 << 20})
    db = TuningDB(tmp_path / "t.jsonl")
    tune(op, problem, runner=ReplayRunner(recorded(op, problem)), budget=4, db=db, progress=False)
    for rec in db.records():
        kernel = op.kernel(op.schedule_from_knobs(**rec.knobs), target())
        assert rec.features == features(kernel, target(), plan=op.plan(kernel, problem))
        assert rec.features["items"] == rec.knobs["items"]


def test_timeouts_are_records_like_any_failure_and_resume_skips_them(op, tmp_path):
    problem = op.problem({"n": 1 << 20})
    db = TuningDB(tmp_path / "t.jsonl")
    first = tune(op, problem, runner=ReplayRunner({}), budget=5, db=db, progress=False)   # nothing recorded: timeouts
    assert first.failures == {"timeout": 5} and first.best is None
    assert [(r.status, r.time_us) for r in db.records()] == [("timeout", None)] * 5
    runner = ReplayRunner(recorded(op, problem))
    second = tune(op, problem, runner=runner, budget=5, db=db, resume=True, progress=False)
    assert second.skipped == 5 and second.measured == 5 and len(set(runner.calls)) == 5
    assert len(db.records()) == 10


def test_the_progress_line_counts_measured_failed_resumed_best_and_time_left(op, tmp_path):
    import io
    problem = op.problem({"n": 1 << 20})
    db = TuningDB(tmp_path / "t.jsonl")
    tune(op, problem, runner=ReplayRunner(recorded(op, problem)), strategy="random", budget=30, db=db, progress=False)
    log = io.StringIO()                                    # not a terminal: a line now and then, and the last
    res = tune(op, problem, runner=ReplayRunner(recorded(op, problem)), db=db, resume=True, progress=log)
    last = log.getvalue().splitlines()[-1]
    assert last.startswith(f"tuning reduce_sum {problem} [####################] 234/234 measured, 234 built, ")
    assert f"{sum(res.failures.values())} failed, 30 from the database, best " in last and last.endswith("0m00s left")
    assert len(log.getvalue().splitlines()) < 10


def test_the_progress_line_redraws_in_place_on_a_terminal():
    from kernelgen.tune.progress import Progress

    class Terminal(list):
        def write(self, s):
            self.append(s)

        def flush(self):
            pass

        def isatty(self):
            return True

    out = Terminal()
    p = Progress(4, "t", out, clock=iter(range(100)).__next__)
    for n in range(1, 5):
        p.measured = n
        p.show()
    p.show(final=True)
    assert len(out) == 5 and all(s.startswith("\r\x1b[K") for s in out) and out[-1].endswith("\n")
    assert "4/4 measured" in out[-1] and "no best yet" in out[-1]


class Confirming(ReplayRunner):
    """Replays times; its winner's check (confirm) fails on the schedules in `fails`."""

    def __init__(self, times, fails=()):
        super().__init__(times)
        self.fails, self.asked = set(fails), []

    def confirm(self, op, sched, problem):
        self.asked.append(sched.to_json())
        return Outcome("wrong_answer", None, "the other twin") if sched.to_json() in self.fails else Outcome("ok")


def test_a_winner_that_fails_the_final_check_passes_the_crown_on(tmp_path):
    """The search validates at the sizes that take the timed kernel; the winner, at the rest: one that fails
    there is recorded again as wrong_answer (its latest record counts) and the next fastest is asked."""
    from kernelgen.tune import legal_space
    from kernelgen.tune.db import TuningDB
    op = get_op("reduce_sum")
    problem = op.problem({"n": 4096})
    space = legal_space(op, problem, ReplayRunner({}).limits)[0][:6]
    runner = Confirming({c.schedule.to_json(): Outcome("ok", 10.0 + i) for i, c in enumerate(space)},
                        fails={space[0].schedule.to_json()})
    db = TuningDB(str(tmp_path / "t.jsonl"))
    result = tune(op, problem, runner=runner, strategy="exhaustive", db=db, progress=False, space=space)
    assert result.best.time_us == 11.0 and runner.asked == [space[0].schedule.to_json(), space[1].schedule.to_json()]
    assert db.best(op.name).time_us == 11.0 and result.failures == {"wrong_answer": 1}
    assert [r.status for r in db.records() if r.kernel == space[0].name] == ["ok", "wrong_answer"]


# -- the wide space (`tune --space wide`) and shipped, compressed databases -------------------------------
def test_the_wide_space_crosses_knobs_onto_each_point_one_candidate_a_schedule():
    from kernelgen.tune.space import legal_space, points
    op = get_op("sgemm")
    problem = op.problem({"M": 2047, "N": 2049, "K": 1023})
    default, _ = legal_space(op, problem, target("sm_90"))
    wide, pruned = legal_space(op, problem, target("sm_90"), "wide")
    # (the K-vector tiles of 2026-11-25 took the space from 392 / 2064 to 580 / 2910, stream-K's two tiles of
    # 2026-11-29 to 582 / 2928)
    assert len(default) == 582 and len(wide) == 2928 and pruned == 648
    assert len({c.schedule.to_json() for c in wide}) == len(wide)
    assert {c.knobs["unroll_k"] for c in wide} == {0, 2} and {c.knobs["swizzle"] for c in wide} == {1, 8, 16}
    assert {c.schedule.to_json() for c in default} - {c.schedule.to_json() for c in wide} == {
        c.schedule.to_json() for c in default if c.knobs.get("split_k", 1) > 1 and c.knobs["swizzle"] != 8}
    with pytest.raises(UsageError, match="gemv has no wide space"):
        list(points(get_op("gemv"), get_op("gemv").problem(), target("sm_90"), "wide"))


def test_a_row_ops_wide_space_holds_each_schedule_once():
    from kernelgen.tune.space import legal_space
    op = get_op("softmax")
    wide, _ = legal_space(op, op.problem({"rows": 4096, "cols": 32000}), target("sm_90"), "wide")
    assert len(wide) == 2308 == len({c.schedule.to_json() for c in wide})   # l2_batch_mb off the split form: one


def test_tune_space_option_refuses_an_op_without_one_and_a_replay():
    from click.testing import CliRunner
    from kernelgen.cli import main
    for args, message in [(["tune", "gemv", "--space", "wide"], "gemv has no wide space (ops with one: sgemm"),
                          (["tune", "sgemm", "--space", "wide", "--replay", "x.jsonl"], "a --replay's space is the sweep")]:
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, res.output


def test_a_compressed_database_is_read_and_never_appended(tmp_path):
    import gzip
    rec = Record.make("reduce_sum", "n=8", "sm_90", "H100", {"op": "reduce_sum", "steps": []}, {}, "ok", 1.5)
    plain = TuningDB(tmp_path / "t.jsonl")
    plain.append(rec)
    packed = tmp_path / "t.jsonl.gz"
    packed.write_bytes(gzip.compress((tmp_path / "t.jsonl").read_bytes()))
    assert [r.time_us for r in TuningDB(packed).records()] == [1.5]
    with pytest.raises(UsageError, match="compressed .read-only"):
        TuningDB(packed).append(rec)


def test_a_tune_measures_the_ops_default_first_and_never_ends_slower_than_it(op, tmp_path):
    """The default (schedule_for) is the first record; the strategy asked for it too is not measured twice."""
    from kernelgen.tune.space import default_candidate, legal_space
    problem = op.problem({"n": 1 << 20})
    times = recorded(op, problem)
    default = op.schedule_for(problem, target()).to_json()
    times = {s: (Outcome("ok", 0.5) if s == default else o) for s, o in times.items()}   # the fastest of all
    import importlib.util
    model = ("model",) if importlib.util.find_spec("sklearn") else ()   # an optional extra (kernelgen[model])
    for strategy in ("exhaustive", "random", *model, "anneal", "genetic", "pattern"):
        runner = ReplayRunner(times)
        res = tune(op, problem, runner=runner, strategy=strategy, budget=40, db=TuningDB(tmp_path / f"{strategy}.jsonl"),
                   progress=False)
        assert res.records[0].schedule == json.loads(default) and res.best.time_us == 0.5, strategy
        assert len({json.dumps(r.schedule, sort_keys=True) for r in res.records}) == len(res.records) == 40, strategy
    off = tune(op, problem, runner=ReplayRunner(times), strategy="random", budget=5, db=TuningDB(tmp_path / "off.jsonl"),
               progress=False, default_first=False)
    assert off.records[0].schedule != json.loads(default)
    space, _ = legal_space(op, problem, target())
    assert any(c is default_candidate(op, problem, target(), space) for c in space)
