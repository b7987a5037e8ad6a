"""Run each candidate in a child process, so a kernel that hangs is stopped at its time limit.

>>> import functools
>>> from kernelgen.ops import get_op
>>> from kernelgen.tune.runners import Outcome, ReplayRunner
>>> from kernelgen.tune.worker import ProcessRunner
>>> op = get_op("reduce_sum")
>>> sched = op.default_schedule()
>>> with ProcessRunner(functools.partial(ReplayRunner, {sched.to_json(): Outcome("ok", 3.0)}), limit_s=30) as run:
...     run(op, sched, op.problem({"n": 4096})).time_us, run.arch
(3.0, 'sm_90')

A kernel that never finishes cannot be interrupted from inside its own process: the launch or the
synchronisation blocks in the driver. So the runner that validates and times (GpuRunner, or any
callable with `arch`, `gpu` and `limits`) is built by `make_runner` in a worker process ("spawn",
so no CUDA state is inherited; built once and reused across candidates, since starting CUDA costs
seconds). The parent sends (op, schedule, problem) and waits at most `limit_s`; past it the worker
is terminated (killed if it ignores that), the candidate's Outcome is "timeout" with the limit in
its detail, and the next candidate gets a fresh worker. A worker that dies mid-candidate (a
segfault in the driver) is a "launch_error"; so is the runner's own launch_error, after which the
worker is replaced too, because a CUDA context that took an illegal address stays broken. An
exception the runner raises is a bug, not a schedule's failure: it is raised here, with the
worker's traceback.
"""
from __future__ import annotations

import multiprocessing
import traceback
from typing import Callable

from ..errors import UsageError
from ..ops.base import Op, Problem
from ..schedule import Schedule
from .runners import Outcome, Runner, ask

START_LIMIT_S = 300.0    # importing, starting CUDA and loading the runner, once per worker


class WorkerError(RuntimeError):
    """The runner raised inside the worker (its traceback is the message)."""


class ProcessRunner:
    def __init__(self, make_runner: Callable[[], Runner], limit_s: float, start_limit_s: float = START_LIMIT_S):
        self.make_runner, self.limit_s, self.start_limit_s = make_runner, limit_s, start_limit_s
        self.context = multiprocessing.get_context("spawn")
        self.process = self.conn = None
        self.started = 0          # workers started, the first included
        self._start()             # now: pruning needs the worker's arch and limits before any candidate

    def __call__(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        return self._ask("__call__", op, sched, problem)

    def confirm(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        """The runner's check of a winner (its `confirm`; "ok" where the runner has nothing more to check)."""
        return self._ask("confirm", op, sched, problem)

    def _ask(self, method: str, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        if self.process is None:
            self._start()
        self.conn.send((method, op, sched, problem))
        if not self.conn.poll(self.limit_s):
            self._stop()
            return Outcome("timeout", None, f"stopped at the time limit of {self.limit_s:g} s (worker killed)")
        try:
            kind, payload = self.conn.recv()
        except EOFError:  # the pipe closed: the worker died
            self.process.join(5)
            code = self.process.exitcode
            self._stop()
            return Outcome("launch_error", None, f"the worker process died (exit code {code})")
        if kind == "error":
            self._stop()
            raise WorkerError(f"the tuning runner raised in its worker process:\n{payload}")
        if payload.status == "launch_error":
            self._stop()
        return payload

    def _start(self) -> None:
        parent, child = self.context.Pipe()
        process = self.context.Process(target=_serve, args=(child, self.make_runner), daemon=True,
                                       name="kernelgen-tune-worker")
        process.start()
        child.close()
        self.process, self.conn, self.started = process, parent, self.started + 1
        if not parent.poll(self.start_limit_s):
            self._stop()
            raise UsageError(f"the tuning worker did not start within {self.start_limit_s:g} s")
        try:
            kind, payload = parent.recv()
        except EOFError:
            process.join(5)
            code = process.exitcode
            self._stop()
            raise UsageError(f"the tuning worker exited (code {code}) before it started") from None
        if kind == "error":
            self._stop()
            raise WorkerError(f"the tuning runner could not be made in its worker process:\n{payload}")
        self.arch, self.gpu, self.limits = payload

    def _stop(self) -> None:
        """End the worker whatever it is doing: SIGTERM, then SIGKILL if it lingers."""
        process, self.process = self.process, None
        if process is None:
            return
        self.conn.close()
        if process.is_alive():
            process.terminate()
            process.join(2)
        if process.is_alive():
            process.kill()
            process.join()

    def close(self) -> None:
        """Ask the worker to leave (it finishes nothing in flight: there is none between calls)."""
        if self.process is not None:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(2)
        self._stop()

    def __enter__(self) -> "ProcessRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _serve(conn, make_runner: Callable[[], Runner]) -> None:
    """The worker: make the runner, say what it runs on, then answer (op, schedule, problem) jobs."""
    try:
        runner = make_runner()
        conn.send(("ready", (runner.arch, runner.gpu, runner.limits)))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            job = conn.recv()
        except EOFError:  # the parent is gone
            return
        if job is None:
            return
        try:
            conn.send(("done", ask(runner, *job)))
        except BaseException:
            conn.send(("error", traceback.format_exc()))
