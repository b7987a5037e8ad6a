"""Builders apart from runners: compiles in a process pool ahead of the runner, a cache safe under
concurrency, compile errors recorded without the runner, the look-ahead order; no GPU (NVRTC only)."""
import hashlib
import io
import multiprocessing
import types

import pytest

from kernelgen import get_op
from kernelgen.errors import CompileError
from kernelgen.target import target
from kernelgen.tune import STRATEGIES, Outcome, ReplayRunner, tune
from kernelgen.tune.builder import Builders, Built, build
from kernelgen.tune.db import MemoryDB
from kernelgen.tune.space import legal_space

SOURCE = 'extern "C" __global__ void k(float* x) {{ x[threadIdx.x] = {}.f; }}'


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNELGEN_NO_CACHE", raising=False)
    return tmp_path / "cache"


def _compile_at_once(barrier, source, queue):
    from kernelgen.compile import compile_cuda
    barrier.wait()
    res = compile_cuda(source, "sm_90", "k")
    queue.put((hashlib.sha256(res.cubin).hexdigest(), res.cached, len(res.log)))


@pytest.mark.nvrtc
def test_processes_compiling_the_same_source_at_once_share_one_whole_entry(cache):
    from kernelgen.compile import compile_cuda
    ctx = multiprocessing.get_context("spawn")
    n = 4
    barrier, queue = ctx.Barrier(n), ctx.Queue()
    source = SOURCE.format(7)
    procs = [ctx.Process(target=_compile_at_once, args=(barrier, source, queue)) for _ in range(n)]
    for p in procs:
        p.start()
    got = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert len({h for h, _, _ in got}) == 1                      # every process has the same cubin
    files = sorted(f.suffix for f in cache.rglob("*") if f.is_file())
    assert files == [".cubin", ".log"]                            # one entry, no temporary file left
    again = compile_cuda(source, "sm_90", "k")
    assert again.cached and hashlib.sha256(again.cubin).hexdigest() == got[0][0]


@pytest.mark.nvrtc
def test_an_entry_that_lost_its_log_or_a_stray_temporary_file_is_compiled_again(cache):
    from kernelgen.compile import compile_cuda
    first = compile_cuda(SOURCE.format(8), "sm_90", "k")
    (log,) = cache.rglob("*.log")
    log.unlink()                                                  # an age-based cleaner took the log
    (log.parent / (log.stem + "abc.tmp")).write_bytes(b"\x7fELF torn")   # a writer killed mid-write
    again = compile_cuda(SOURCE.format(8), "sm_90", "k")
    assert not again.cached and again.cubin == first.cubin and log.exists()
    assert compile_cuda(SOURCE.format(8), "sm_90", "k").cached


@pytest.mark.nvrtc
def test_a_build_in_the_pool_leaves_the_cubin_the_runners_prepare_finds(cache):
    from kernelgen.prepared import prepare
    op = get_op("reduce_sum")
    problem = op.problem({"n": 77777})
    sched = op.schedule(threads=128)
    with Builders(jobs=1) as pool:
        built = pool.submit(op, sched, problem, target()).result(timeout=120)
        assert pool.built == 1 and pool.failed == 0
    assert built.status == "ok" and not built.cached and built.features["ptxas.registers"] > 0
    prep = prepare(op, sched, problem, target())                 # what a runner does first, in another process
    assert prep.kernel.name == built.name and prep.binary.cached


@pytest.mark.nvrtc
def test_a_build_compiles_the_one_twin_the_search_validates(cache):
    # a source holds only the entries its plan launches: a tuned size whose rows are vector-aligned takes
    # sgemm's aligned kernel; the search validates at the sizes that take it too, so the build compiles
    # that twin only; the sizes that take the _unaligned twin are the winner's check (runner.confirm)
    from kernelgen.prepared import prepare
    from kernelgen.tune.runners import validation_problems
    op = get_op("sgemm")
    problem, sched = op.problem({"M": 256, "N": 256, "K": 64}), op.default_schedule()
    with Builders(jobs=1) as pool:                                 # in another process, as in a tune
        assert pool.submit(op, sched, problem, target()).result(timeout=300).status == "ok"
    timed = validation_problems(op, sched, problem, target(), "timed")
    other = validation_problems(op, sched, problem, target(), "other")
    assert timed and other and sorted(map(str, timed + other)) == sorted(map(str, validation_problems(op, sched, problem, target())))
    preps = [prepare(op, sched, p, target()) for p in [problem] + timed]
    assert len({p.source for p in preps}) == 1 and all(p.binary.cached for p in preps)
    twin = prepare(op, sched, other[0], target())
    assert twin.source != preps[0].source and not twin.binary.cached


class CompilingReplay(ReplayRunner):
    """Replays times, but compiles first as the GPU runner does, and notes whether the cache had it."""

    def __init__(self, times):
        super().__init__(times)
        self.cached = []

    def __call__(self, op, sched, problem):
        from kernelgen.prepared import prepare
        self.cached.append(prepare(op, sched, problem, self.limits).binary.cached)
        return super().__call__(op, sched, problem)


def reduce_times(op, problem):
    space, _ = legal_space(op, problem, target())
    return {c.schedule.to_json(): Outcome("ok", 10.0 + c.knobs["items"] + c.knobs["threads"] / 128) for c in space}


@pytest.mark.nvrtc
def test_the_runner_measures_cubins_the_builders_compiled_ahead(cache):
    op = get_op("reduce_sum")
    problem = op.problem({"n": 55555})
    runner = CompilingReplay(reduce_times(op, problem))
    bar = io.StringIO()
    with Builders(jobs=2) as pool:
        res = tune(op, problem, runner=runner, strategy="random", budget=8, batch=3, db=MemoryDB(), builders=pool,
                   progress=bar)
    assert res.measured == 8 and runner.cached == [True] * 8     # the GPU never waited on NVRTC
    assert all(r.features["ptxas.registers"] > 0 for r in res.records)
    assert res.build_seconds > 0
    last = bar.getvalue().splitlines()[-1]
    assert "8/8 measured" in last and "8 built" in last and "0 failed" in last and f"best {res.best.time_us:.2f} us" in last


@pytest.mark.nvrtc
def test_a_compile_error_is_recorded_without_asking_the_runner(cache, monkeypatch):
    import kernelgen.prepared as prepared
    op = get_op("reduce_sum")
    problem = op.problem({"n": 33333})
    space, _ = legal_space(op, problem, target())
    broken = space[1].name
    real = prepared.compile_cuda

    def compile_cuda(source, arch, symbol="kernel", options=()):
        if symbol == broken:
            raise CompileError(symbol, "kernel.cu(3): error: synthetic", source)
        return real(source, arch, symbol, options)

    monkeypatch.setattr(prepared, "compile_cuda", compile_cuda)
    runner = ReplayRunner(reduce_times(op, problem))
    res = tune(op, problem, runner=runner, budget=3, db=MemoryDB(), builders=Builders(jobs=0), progress=False,
               default_first=False)     # the space's order: its second candidate is the broken one
    assert [r.status for r in res.records] == ["ok", "compile_error", "ok"]
    assert "error: synthetic" in res.records[1].detail and len(runner.calls) == 2


def test_a_build_that_is_not_a_compile_error_is_raised(monkeypatch):
    import kernelgen.tune.builder as builder
    monkeypatch.setattr(builder, "build", lambda *a: 1 / 0)
    with Builders(jobs=0) as pool:
        with pytest.raises(ZeroDivisionError):
            pool.submit(None, None, None, None).result()


def crashing_build(op, sched, problem, target):
    """A builder that dies (as NVRTC crashing would) on reduce_sum schedules of 1024 threads."""
    import os
    if op.knobs_from_schedule(sched)["threads"] == 1024:
        os._exit(11)
    return Built(sched.to_json()[:20], "ok")


def test_a_builder_that_dies_is_replaced_and_its_candidate_is_a_compile_error_after_three_tries():
    op = get_op("reduce_sum")
    problem = op.problem({"n": 1 << 20})
    space, _ = legal_space(op, problem, target())
    picked = [c for c in space if c.knobs["threads"] != 1024][:2]
    picked.insert(1, next(c for c in space if c.knobs["threads"] == 1024))
    with Builders(jobs=1, build_fn=crashing_build) as pool:
        jobs = [pool.submit(op, c.schedule, problem, target()) for c in picked]
        built = [j.result(timeout=300) for j in jobs]
        assert [b.status for b in built] == ["ok", "compile_error", "ok"]
        assert "died 3 times" in built[1].detail and pool.restarts >= 3
        assert pool.built == 3 and pool.failed == 1
        assert pool.submit(op, picked[0].schedule, problem, target()).result(timeout=300).status == "ok"  # alive


class Scripted:
    """A strategy that records the order of asks and tells."""
    log: list = []

    class Search:
        def __init__(self, space, seed=0):
            self.space, self.next = space, 0

        def ask(self, n):
            out = self.space[self.next:self.next + n]
            self.next += len(out)
            Scripted.log.append(("ask", len(out)))
            return out

        def tell(self, results):
            Scripted.log.append(("tell", len(results)))


@pytest.mark.parametrize("ahead, expected", [
    (1, ["ask", "tell", "ask", "tell", "ask", "tell"]),                  # without builders: as before
    (2, ["ask", "ask", "tell", "ask", "tell", "tell"]),                  # one batch compiles while one runs
])
def test_builders_ask_one_batch_ahead_in_an_order_that_depends_on_counts_only(monkeypatch, ahead, expected):
    op = get_op("reduce_sum")
    problem = op.problem({"n": 1 << 20})
    monkeypatch.setitem(STRATEGIES, "scripted", types.SimpleNamespace(Search=Scripted.Search))
    Scripted.log = []
    monkeypatch.setattr("kernelgen.tune.builder.build", lambda op, sched, problem, target: Built("k", "ok"))
    tune(op, problem, runner=ReplayRunner({}), strategy="scripted", budget=12, batch=4, db=MemoryDB(),
         builders=Builders(jobs=0), ahead=ahead, progress=False)
    assert [what for what, _ in Scripted.log] == expected


def test_build_runs_without_a_pool_where_nvrtc_is_missing_it_is_a_usage_error(monkeypatch):
    """Anything but a CompileError escapes a build: the tuner stops with it instead of recording it."""
    import kernelgen.compile as compile_mod
    from kernelgen.errors import UsageError

    def missing():
        raise UsageError("NVRTC is not available")
    monkeypatch.setattr(compile_mod, "_nvrtc", missing)
    monkeypatch.setattr(compile_mod, "nvrtc_version", missing)
    op = get_op("reduce_sum")
    with pytest.raises(UsageError, match="NVRTC is not available"):
        build(op, op.schedule(threads=64), op.problem({"n": 4321}), target())


def test_knobs_left_unset_survive_the_builders_pickling():
    # A builder process receives the op by pickle: the "unset" sentinel of a knob must stay itself
    # there, or it is read as the knob's value (elementwise's prefetch_pad broke every build with it).
    import pickle

    from kernelgen.ops import get_op
    from kernelgen.ops.knobs import _MISSING
    op = get_op("elementwise")
    assert pickle.loads(pickle.dumps(_MISSING)) is _MISSING
    sched = op.schedule_from_knobs(**dict(op.default_knobs(), grid_stride=8, prefetch=8, prefetch_scope="registers"))
    again = pickle.loads(pickle.dumps(op))
    assert again.knobs_from_schedule(sched) == op.knobs_from_schedule(sched)
