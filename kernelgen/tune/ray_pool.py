"""Past one host: runners as Ray actors, one per GPU of the cluster (Ray, an optional extra: pip install
'kernelgen[ray]'), measured through pool.RunnerPool like the GPUs of one host.

    kernelgen tune sgemm --ray auto            # the cluster `ray start` joined this host to
    kernelgen tune sgemm --ray ray://head:10001

Each actor asks Ray for one GPU (Ray sets its CUDA_VISIBLE_DEVICES) and makes its runner there once; the
tuning loop sends (op, schedule, problem) and waits at most `limit_s`: past it the actor is killed (a kernel
that hangs cannot be interrupted from inside its process, as in worker.py), the candidate's Outcome is
"timeout", and a fresh actor takes the next one. An actor that dies mid-candidate is a "launch_error", and so is
the runner's own launch_error, after which the actor is replaced too (a CUDA context that took an illegal
address stays broken). The actors compile what they run themselves (through their host's disk cache): the
builder pool of `kernelgen tune` compiles for the local GPUs only.
"""
from __future__ import annotations

from typing import Callable

from ..errors import UsageError
from ..ops.base import Op, Problem
from ..schedule import Schedule
from .runners import Outcome, Runner, ask


def require():
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs Ray: pip install 'kernelgen[ray]'") from None
    return ray


class _Actor:
    """Holds one runner in its own process, on the GPU Ray gave it."""

    def __init__(self, make_runner: Callable[[], Runner]):
        self.runner = make_runner()

    def info(self):
        return self.runner.arch, self.runner.gpu, self.runner.limits

    def run(self, method: str, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        return ask(self.runner, method, op, sched, problem)


class RayRunner:
    """A runner (arch, gpu, limits, __call__) whose work happens in a Ray actor holding `gpus` GPUs."""

    def __init__(self, make_runner: Callable[[], Runner], limit_s: float, gpus: float = 1,
                 start_limit_s: float = 300.0):
        ray = require()
        self.make_runner, self.limit_s, self.start_limit_s = make_runner, limit_s, start_limit_s
        self._cls = ray.remote(num_gpus=gpus, max_restarts=0)(_Actor)
        self.actor, self.started = None, 0
        self._start()

    def _start(self) -> None:
        ray = require()
        self.actor = self._cls.remote(self.make_runner)
        self.started += 1
        try:
            self.arch, self.gpu, self.limits = ray.get(self.actor.info.remote(), timeout=self.start_limit_s)
        except ray.exceptions.GetTimeoutError:
            self._stop()
            raise UsageError(f"a Ray tuning actor did not start within {self.start_limit_s:g} s (does the cluster "
                             f"have a free GPU? `ray status` says)") from None

    def _stop(self) -> None:
        ray = require()
        actor, self.actor = self.actor, None
        if actor is not None:
            ray.kill(actor, no_restart=True)

    def __call__(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        return self._ask("__call__", op, sched, problem)

    def confirm(self, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        """The runner's check of a winner ("ok" where it has nothing more to check)."""
        return self._ask("confirm", op, sched, problem)

    def _ask(self, method: str, op: Op, sched: Schedule, problem: Problem) -> Outcome:
        ray = require()
        if self.actor is None:
            self._start()
        ref = self.actor.run.remote(method, op, sched, problem)
        try:
            out = ray.get(ref, timeout=self.limit_s)
        except ray.exceptions.GetTimeoutError:
            self._stop()
            return Outcome("timeout", None, f"stopped at the time limit of {self.limit_s:g} s (Ray actor killed)")
        except ray.exceptions.RayActorError as e:
            self._stop()
            return Outcome("launch_error", None, f"the Ray actor died: {str(e).splitlines()[0]}")
        if out.status == "launch_error":
            self._stop()
        return out

    def close(self) -> None:
        self._stop()


def connect(address: str):
    """Join the Ray cluster at `address` ("auto", "ray://host:port", or "local" for a new one on this host)."""
    ray = require()
    if not ray.is_initialized():
        ray.init(address=None if address == "local" else address, include_dashboard=False, log_to_driver=False)
    return ray


def cluster_gpus(ray) -> int:
    """Whole GPUs the cluster offers."""
    n = int(ray.cluster_resources().get("GPU", 0))
    if n < 1:
        raise UsageError("the Ray cluster has no GPU: each tuning actor needs one (`ray status` lists the resources)")
    return n
