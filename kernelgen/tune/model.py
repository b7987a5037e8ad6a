"""Model-guided search: a random forest learns time from features and asks for the predicted fastest.

>>> from kernelgen.tune import model
>>> from kernelgen.tune.runners import Outcome
>>> from kernelgen.tune.space import Candidate
>>> space = [Candidate({"x": x, "y": y}) for x in range(30) for y in range(30)]
>>> def time_of(k):
...     return 1.0 + (k["x"] - 21) ** 2 + 3 * (k["y"] - 8) ** 2
>>> def search():
...     s, n = model.Search(space, seed=0), 0
...     while n < 60 and (asked := s.ask(4)):
...         s.tell([(c, Outcome("ok", time_of(c.knobs))) for c in asked])
...         n += len(asked)
...     return min(time_of(c.knobs) for c, _ in s.told.values()) <= 2.0   # within 2x of the best of 900, in 60
>>> search() if model.available() else True              # scikit-learn is the optional extra kernelgen[model]
True

The model is scikit-learn's RandomForestRegressor (`pip install 'kernelgen[model]'`); without it,
making a Search is a UsageError naming the extra. It learns, over each candidate's feature vector
(kernelgen.features: knobs, threads, shared bytes, the register estimate, occupancy, waves and how full
the last one is, sizes, the target's figures; the knobs alone for a bare Candidate):
  - what this search was told, and
  - `history`: what the tuning database holds of the same op on other problems and GPUs
    (history.py). That is the transfer: a new size starts from what other sizes taught.
The target is log(time) minus the median log(time) of the same problem, so sizes that differ a
thousandfold in time share one scale of "how much slower than usual"; a failure counts as twice
the slowest of its problem, so the model learns where kernels fail, too.

Not every other problem teaches this one: sgemm's aligned sizes run kernels unlike those of an unaligned
size, and pooled with records of unaligned sizes they undid what those saved on the replay of 2047x2049x1023
(tests/test_tune_replay.py, median of seeds 0..4: 52 evaluations, 59 cold, 23 with the unaligned alone;
seeds 0..14: 60, 49, 22). So each other problem also gets a small forest of its own (its advice) and is
weighed by how the points its advice ranks best turn out when this problem measures them: the first ask
measures each problem's favourite, every problem counts alike until MIN_OWN measurements, then its records
weigh exp(-(regret - the best regret) / TAU) (_history_weights), and a problem far behind is left out of
the fit. The mix then needs 17 (seeds 0..14: 17; 15..29: 15 against 52 cold). (Tried and not kept:
weighing by how well the advice ranks all the points measured, by Kendall's or a top-weighted tau, squared
or as a share of the best, or keeping only the best-ranked sizes: a misleading size ranks the whole space
about as well as a good one; 32 to 65 evaluations over seeds 0..14. The weighing is sensitive to TAU:
0.03 and 0.1 give 33 and 70 over seeds 0..14, where 0.05 gives 17.)

ask(n): with nothing to learn from yet (no history, fewer than `init` points told) random points;
then, for each of the n slots, with probability `explore` a random unasked point, else the unasked
point of lowest predicted time minus `kappa` standard deviations of the trees' predictions (an
optimistic bound: a point the trees disagree on is worth measuring). (Tried and not kept, on the
synthetic sweeps of tests/test_tune_replay.py: a first sample covering every value of every knob,
Thompson sampling from one tree per slot, kappa 0, 0.5 and 2, explore 0.2: all within the spread
of the seeds, none better.) The forest is refitted when
enough was told since the last fit (every tell at first, then every ~1/8 more), not on every ask.
Everything random comes from `seed`; ask returns [] only when every point has been asked.
"""
from __future__ import annotations

import math
import random
from collections import defaultdict

import numpy as np

from ..errors import UsageError
from .runners import Outcome
from .space import Candidate, Observation

INIT = 8            # random points before the first fit, when there is no history
EXPLORE = 0.1
KAPPA = 1.0
TREES = 32
SAMPLES = 4096     # rows each tree is grown on at most (a bootstrap sample); 512 drew too few of the problem's own rows
                   # among thousands of other sizes' (sgemm's warmed replay: 364 evaluations at 512, 242 at 4096)
HISTORY_CAP = 3000  # observations of other problems a fit takes (a seeded sample of those kept, beyond that)
FAILED = math.log(2.0)
# Weighing other problems by their advice (see _history_weights):
ADVISER_TREES = 16  # trees of the forest learnt from one other problem's records alone
MIN_OWN = 4         # this problem's measurements before the other problems are weighed (until then: equal)
TOP = 0.25          # a problem's advice is judged on the share of this problem's measurements it ranks best
TAU = 0.05          # weight exp(-(its regret - the best regret) / TAU): 0.05 more log(time) costs a factor e
LEFT_OUT = 0.05     # a problem weighted below this is left out of the fit (it would still take bootstrap draws)


def available() -> bool:
    try:
        import sklearn.ensemble  # noqa: F401
        return True
    except ImportError:
        return False


def require():
    """The forest class; a UsageError naming the extra where scikit-learn is missing."""
    try:
        from sklearn.ensemble import RandomForestRegressor
    except ImportError:
        raise UsageError("the model strategy needs scikit-learn: pip install 'kernelgen[model]'") from None
    return RandomForestRegressor


class Search:
    def __init__(self, space: list[Candidate], seed: int = 0, history: list[Observation] = (), init: int | None = None,
                 explore: float = EXPLORE, kappa: float = KAPPA, trees: int = TREES):
        self.forest = require()
        self.space = list(space)
        self.seed, self.rng = seed, random.Random(seed)
        self.where = {id(c): i for i, c in enumerate(self.space)}
        vectors = [with_derived(c.features) if c.features is not None else knob_vector(c.knobs) for c in self.space]
        self.keys = list(dict.fromkeys(k for v in vectors for k in v))
        self.X = _matrix(vectors, self.keys)
        history = list(history)
        self.hX = _matrix([with_derived(o.features) for o in history], self.keys)
        self.hy = _targets([(o.time_us, o.group) for o in history])
        self.hgroup = np.array([o.group for o in history], dtype=object)
        self.advice = self._advisers()
        self.init = (0 if history else min(INIT, max(3, len(self.space) // 20))) if init is None else init
        self.explore, self.kappa, self.trees = explore, kappa, trees
        self.unasked = np.ones(len(self.space), dtype=bool)
        self.order = list(range(len(self.space)))
        self.rng.shuffle(self.order)
        self.told: dict[int, tuple[Candidate, Outcome]] = {}
        self.ranking: list[int] | None = None    # unasked and asked points, best predicted first
        self.fitted_on = -1                        # points told at the last fit

    def ask(self, n: int) -> list[Candidate]:
        if n <= 0:
            return []
        self._refit()
        out = self._favourites(n) if not self.told else []
        while len(out) < n and self.unasked.any():
            if self.ranking is None or self.rng.random() < self.explore:
                i = self._random()
            else:
                i = self._predicted_best()
            self.unasked[i] = False
            out.append(i)
        return [self.space[i] for i in out]

    def tell(self, results: list[tuple[Candidate, Outcome]]) -> None:
        for cand, out in results:
            self.told[self.where[id(cand)]] = (cand, out)

    def _refit(self) -> None:
        told = len(self.told)
        if not len(self.hy) and told < min(self.init, len(self.space)):
            return
        if told - self.fitted_on < max(1, self.fitted_on // 8):
            return
        idx = list(self.told)
        hweight = self._history_weights(idx)
        rows = self._history_rows(hweight)
        X = np.vstack([self.hX[rows], self.X[idx]]) if idx else self.hX[rows]
        y = np.concatenate([self.hy[rows], _targets([(self._time(i), "") for i in idx])])
        weight = np.concatenate([hweight[rows], np.ones(len(idx))])
        forest = self.forest(n_estimators=self.trees, max_features=0.6, max_samples=min(len(y), SAMPLES),
                             random_state=self.seed, n_jobs=1)
        # no weights where all count alike: the fit stays the one without weighing (cold runs are unchanged)
        forest.fit(X, y, sample_weight=None if (weight == 1).all() else weight)
        per_tree = np.stack([t.predict(self.X) for t in forest.estimators_])
        score = per_tree.mean(axis=0) - self.kappa * per_tree.std(axis=0)
        self.ranking = [int(i) for i in np.argsort(score, kind="stable")]
        self.ranking.reverse()   # popped from the end: best last
        self.fitted_on = told

    def _advisers(self) -> dict[str, np.ndarray]:
        """Each other problem's advice: what a small forest learnt from its records alone predicts over this
        space (the targets of _targets). One forest over all of them cannot tell which problems behave like
        this one: a problem whose kernels are unlike this one's pulls its predictions to the wrong tiles."""
        advice = {}
        for g in dict.fromkeys(self.hgroup):
            mine = self.hgroup == g
            forest = self.forest(n_estimators=ADVISER_TREES, max_features=0.6, random_state=self.seed, n_jobs=1)
            advice[g] = forest.fit(self.hX[mine], self.hy[mine]).predict(self.X)
        return advice

    def _favourites(self, n: int) -> list[int]:
        """The first ask, before any measurement: each other problem's predicted best (in the history's order),
        up to n. Every problem counts alike until measured, and measuring its favourite tests its advice."""
        out = []
        for pred in self.advice.values():
            i = int(np.argmin(pred))
            if len(out) < n and self.unasked[i]:
                self.unasked[i] = False
                out.append(i)
        return out

    def _history_weights(self, idx: list[int]) -> np.ndarray:
        """A weight for each history record: its problem's, by how good the points its advice ranks best among
        this problem's measurements turned out (the regret: their mean log(time) minus the best measured;
        a top-focused test, because a problem may rank the whole space fairly and still point at the wrong
        best tiles). exp(-(regret - the best problem's regret) / TAU); all 1 before MIN_OWN measurements."""
        ok = [i for i in idx if self._time(i) is not None]
        if len(ok) < MIN_OWN or not self.advice:
            return np.ones(len(self.hy))
        own = np.log([self._time(i) for i in ok])
        top = max(1, round(len(ok) * TOP))
        regret = {g: float(own[np.argsort(pred[ok], kind="stable")[:top]].mean() - own.min())
                  for g, pred in self.advice.items()}
        best = min(regret.values())
        by_group = {g: math.exp(-(r - best) / TAU) for g, r in regret.items()}
        return np.array([by_group[g] for g in self.hgroup], dtype=np.float64)

    def _history_rows(self, weight: np.ndarray) -> np.ndarray:
        """The history records a fit takes: those weighted above LEFT_OUT, at most HISTORY_CAP of them (a
        sample seeded by the search's seed)."""
        rows = np.flatnonzero(weight > LEFT_OUT)
        if len(rows) > HISTORY_CAP:
            rows = np.sort(np.random.default_rng(self.seed).choice(rows, HISTORY_CAP, replace=False))
        return rows

    def _time(self, i: int) -> float | None:
        out = self.told[i][1]
        return out.time_us if out.status == "ok" and out.time_us is not None else None

    def _predicted_best(self) -> int:
        while not self.unasked[self.ranking[-1]]:
            self.ranking.pop()
        return self.ranking.pop()

    def _random(self) -> int:
        while not self.unasked[self.order[-1]]:
            self.order.pop()
        return self.order.pop()


def knob_vector(knobs: dict) -> dict[str, float]:
    """Knobs as numbers where no features are given: numbers as they are, booleans 0/1, others one-hot."""
    out = {}
    for k, v in knobs.items():
        if isinstance(v, bool) or isinstance(v, (int, float)):
            out[k] = float(v)
        else:
            out[f"{k}={v}"] = 1.0
    return out


def with_derived(f: dict) -> dict:
    """The features plus what the forest cannot read off them across sizes: how full the last wave of
    blocks is (waves / ceil(waves): 1.0 when the blocks fill whole waves, 0.52 for 136 blocks on 132
    slots). A tile that fills four waves at one size may leave the last nearly empty at the next; the raw
    wave count splits differently at every size, this figure the same way (computed here, so records
    written before it existed carry it too)."""
    waves = f.get("waves")
    if not waves:
        return f
    return dict(f, **{"waves.last_fill": waves / math.ceil(waves), "waves.ceil": float(math.ceil(waves))})


def _matrix(vectors: list[dict], keys: list[str]) -> np.ndarray:
    """Rows in `keys` order; a key a vector lacks is 0 (a one-hot knob value it does not take)."""
    return np.array([[float(v.get(k, 0.0)) for k in keys] for v in vectors], dtype=np.float64).reshape(len(vectors),
                                                                                                        len(keys))


def _targets(rows: list[tuple[float | None, str]]) -> np.ndarray:
    """log(time) minus the median log(time) of its group; a failure: the group's slowest + log 2."""
    logs: dict[str, list[float]] = defaultdict(list)
    for t, g in rows:
        if t is not None and t > 0:
            logs[g].append(math.log(t))
    median = {g: float(np.median(v)) for g, v in logs.items()}
    worst = {g: max(v) - median[g] for g, v in logs.items()}
    return np.array([math.log(t) - median[g] if t is not None and t > 0 else worst.get(g, 0.0) + FAILED
                     for t, g in rows], dtype=np.float64)
