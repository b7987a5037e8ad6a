"""The ask/tell contract of every strategy, and that annealing uses what it is told; no GPU."""
import json
import math

import pytest

from kernelgen import get_op
from kernelgen.target import target
from kernelgen.tune import STRATEGIES, Outcome, ReplayRunner, tune
from kernelgen.tune.db import TuningDB
from kernelgen.tune.space import Candidate, legal_space


def needs(name):
    """The model strategy needs the optional scikit-learn; the others nothing."""
    if name == "model":
        pytest.importorskip("sklearn", reason="the model strategy needs scikit-learn (kernelgen[model])")


def bowl(x, y):
    """A synthetic landscape on a 20 x 20 grid: fastest at (13, 5); y = 17 fails to compile."""
    if y == 17:
        return Outcome("compile_error", None, "synthetic")
    return Outcome("ok", 10.0 + (x - 13) ** 2 + 2 * (y - 5) ** 2)


def grid():
    return [Candidate({"x": x, "y": y, "flag": f}) for x in range(20) for y in range(20) for f in (False, True)]


def drive(search, landscape, batch, budget=None):
    """The tune loop without a database: ask, run the landscape, tell. Returns the candidates asked."""
    asked = []
    while budget is None or len(asked) < budget:
        got = search.ask(batch if budget is None else min(batch, budget - len(asked)))
        if not got:
            break
        asked += got
        search.tell([(c, landscape(c.knobs["x"], c.knobs["y"])) for c in got])
    return asked


def time_of(c):
    out = bowl(c.knobs["x"], c.knobs["y"])
    return out.time_us if out.time_us is not None else math.inf


@pytest.mark.parametrize("name", sorted(STRATEGIES))
@pytest.mark.parametrize("batch", [1, 7])
def test_every_strategy_asks_each_point_once_then_nothing(name, batch):
    needs(name)
    space = grid()
    search = STRATEGIES[name].Search(space, 3)
    asked = drive(search, bowl, batch)
    assert len(asked) == len(space) and len({id(c) for c in asked}) == len(space)
    assert all(any(c is s for s in space) for c in asked[:50])   # members of the space, not copies
    assert search.ask(5) == [] and search.ask(0) == []


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_is_reproducible_by_seed(name):
    needs(name)
    def knobs(seed):
        return [c.knobs for c in drive(STRATEGIES[name].Search(grid(), seed), bowl, 4, budget=60)]
    assert knobs(5) == knobs(5)
    if name != "exhaustive":
        assert knobs(5) != knobs(6)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_tune_measures_exactly_the_budget(name, tmp_path):
    needs(name)
    op = get_op("reduce_sum")
    problem = op.problem({"n": 1 << 20})
    runner = ReplayRunner({})
    res = tune(op, problem, runner=runner, strategy=name, budget=11, batch=4, db=TuningDB(tmp_path / "t.jsonl"),
               progress=False)
    assert res.measured == len(runner.calls) == len(set(runner.calls)) == 11
    assert len(res.records) == len((tmp_path / "t.jsonl").read_text().splitlines()) == 11


def test_anneal_walks_to_the_bottom_of_the_bowl_where_random_does_not():
    space = grid()
    best = min(space, key=time_of)
    assert best.knobs["x"] == 13 and best.knobs["y"] == 5
    annealed, sampled = [], []
    for seed in range(5):
        annealed.append(min(time_of(c) for c in drive(STRATEGIES["anneal"].Search(space, seed), bowl, 4, budget=80)))
        sampled.append(min(time_of(c) for c in drive(STRATEGIES["random"].Search(space, seed), bowl, 4, budget=80)))
    assert annealed == [10.0] * 5                        # 80 of 800 points: every walk reaches the bottom
    assert sum(sampled) / 5 > 11.0                       # the same number of random points mostly does not


def test_anneal_moves_downhill_from_where_it_stands():
    space = grid()
    search = STRATEGIES["anneal"].Search(space, 0)
    first = search.ask(1)
    search.tell([(first[0], bowl(first[0].knobs["x"], first[0].knobs["y"]))])
    step = search.ask(4)
    moved = [sum(a != b for a, b in zip(c.knobs.values(), first[0].knobs.values())) for c in step]
    assert moved == [1, 1, 1, 1]                          # neighbours: one knob changed
    for c in step:
        for k in ("x", "y"):
            if c.knobs[k] != first[0].knobs[k]:
                assert abs(c.knobs[k] - first[0].knobs[k]) == 1 or first[0].knobs["y"] in (16, 18)


def test_neighbours_step_over_illegal_values():
    from kernelgen.tune.anneal import Neighbours
    pts = [{"t": 128, "c": "a"}, {"t": 512, "c": "a"}, {"t": 1024, "c": "a"}, {"t": 128, "c": "b"}, {"t": 256, "c": "c"}]
    nb = Neighbours(pts)                                  # t=256 is illegal with c=a
    assert sorted(nb.of(0)) == [1, 3]                     # t up to 512 (256 stepped over); c to b
    assert sorted(nb.of(1)) == [0, 2]                     # t down and up; no c=b or c=c at t=512
    assert nb.of(4) == []


def test_anneal_starts_from_somewhere_when_everything_fails_at_first():
    def walled(x, y):                                      # three quarters of the grid fail to launch
        return Outcome("launch_error") if x < 15 else bowl(x, y)
    for seed in range(3):
        asked = drive(STRATEGIES["anneal"].Search(grid(), seed), walled, 3, budget=120)
        ran = [walled(c.knobs["x"], c.knobs["y"]).time_us for c in asked]
        assert min(t for t in ran if t is not None) == 14.0   # (15, 5), found past the failing region


def test_resume_retells_recorded_outcomes_so_the_walk_continues(tmp_path):
    op = get_op("reduce_sum")
    problem = op.problem({"n": 1 << 20})
    space, _ = legal_space(op, problem, target())
    times = {c.schedule.to_json(): Outcome("ok", 100.0 / c.knobs["items"] + c.knobs["grid_stride"]
                                             + (c.knobs["finish"] == "atomic") + c.knobs["threads"] / 256)
             for c in space}
    db = TuningDB(tmp_path / "t.jsonl")
    first = tune(op, problem, runner=ReplayRunner(times), strategy="anneal", budget=12, db=db, progress=False)
    runner = ReplayRunner(times)
    second = tune(op, problem, runner=runner, strategy="anneal", budget=12, db=db, resume=True, progress=False)
    assert second.skipped == 12 and second.measured == 12   # the same seed re-walks the first 12 from the db
    keys = [json.dumps(r.schedule, sort_keys=True) for r in db.records()]
    assert len(keys) == len(set(keys)) == 24
    assert second.best.time_us <= first.best.time_us


@pytest.mark.parametrize("name", ["pattern", "genetic", "model"])
def test_the_searches_that_learn_find_the_bottom_of_the_bowl_in_a_tenth_of_it(name):
    needs(name)
    space = grid()                                       # 800 points
    found = [min(time_of(c) for c in drive(STRATEGIES[name].Search(space, seed), bowl, 4, budget=80))
             for seed in range(5)]
    assert sorted(found)[2] == 10.0                      # the median run reaches the bottom in 80
    sampled = [min(time_of(c) for c in drive(STRATEGIES["random"].Search(space, seed), bowl, 4, budget=80))
               for seed in range(5)]
    assert sorted(sampled)[2] > 10.0


def test_pattern_search_polls_one_knob_moves_first_and_restarts_when_converged():
    space = grid()
    search = STRATEGIES["pattern"].Search(space, 0, init=1)
    (first,) = search.ask(1)
    search.tell([(first, Outcome("ok", 50.0))])
    ring = search.ask(3)
    assert all(sum(a != b for a, b in zip(c.knobs.values(), first.knobs.values())) == 1 for c in ring)
    # on a flat landscape no move is better: once every point within two knobs is asked, a new run starts
    flat = STRATEGIES["pattern"].Search(space, 0, init=1)
    asked = drive(flat, lambda x, y: Outcome("ok", 1.0), 4, budget=500)    # 438 points within two knobs of one
    assert flat.runs == 2 and len({id(c) for c in asked}) == 500


def test_pattern_search_crosses_between_islands_of_one_knob_moves():
    """bm and wm must change together: one-knob moves from (64, 32) reach nothing, two-knob moves reach (128, 64)."""
    space = [Candidate({"bm": 64, "wm": 32}), Candidate({"bm": 128, "wm": 64}), Candidate({"bm": 256, "wm": 128})]
    s = STRATEGIES["pattern"].Search(space, 0, init=1)
    (start,) = s.ask(1)
    s.tell([(start, Outcome("ok", 5.0))])
    (step,) = s.ask(1)
    assert s.runs == 1 and step is not start       # a move of the same run, not a restart


def test_genetic_breeds_from_told_members_and_replaces_a_parent_only_when_faster():
    from kernelgen.tune import genetic
    space = grid()
    search = genetic.Search(space, 0, population=6)
    start = search.ask(6)                                   # the random start-up population
    search.tell([(c, bowl(c.knobs["x"], c.knobs["y"])) for c in start])
    assert sorted(search.population) == sorted(search.where[id(c)] for c in start)
    (trial,) = search.ask(1)
    slot = search.parent[search.where[id(trial)]]
    parent = search.population[slot]
    search.tell([(trial, Outcome("ok", 1e9))])                     # slower than anything: the parent stays
    assert search.population[slot] == parent
    (trial,) = search.ask(1)
    slot = search.parent[search.where[id(trial)]]
    search.tell([(trial, Outcome("ok", 0.5))])                     # faster than anything: it takes the slot
    assert search.population[slot] == search.where[id(trial)]


def test_the_model_refuses_in_one_line_naming_the_extra_without_scikit_learn(monkeypatch):
    import sys
    from kernelgen.errors import UsageError
    from kernelgen.tune import model
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.ensemble", None)
    assert not model.available()
    with pytest.raises(UsageError) as e:
        model.Search(grid(), 0)
    assert str(e.value) == "the model strategy needs scikit-learn: pip install 'kernelgen[model]'"


def test_the_model_learns_from_other_problems_before_measuring_anything():
    needs("model")
    from kernelgen.tune import model
    from kernelgen.tune.space import Observation

    def feats(c, size):
        return {"x": float(c.knobs["x"]), "y": float(c.knobs["y"]), "size": size}

    space = [Candidate(c.knobs, features=feats(c, 1.0)) for c in grid() if not c.knobs["flag"]]
    history = [Observation(feats(c, 2.0), 3 * time_of(c) if time_of(c) < math.inf else None, "other size")
               for c in space[::3]]
    warm = model.Search(space, 0, history=history)
    first = warm.ask(4)                                     # no random start-up: the history's best region
    assert min(time_of(c) for c in first) <= 12.0
    cold = model.Search(space, 0)
    assert cold.init > 0 and min(time_of(c) for c in cold.ask(4)) > 12.0
