"""Ctrl-C during native work: run it on a worker thread so the caller's thread can be interrupted.

>>> from kernelgen.interrupt import interruptible
>>> interruptible(sum, [1, 2, 3])
6

Python handles SIGINT only between bytecodes of the main thread, so a long native call (NVRTC
compiling, the emulator running a kernel) would hold Ctrl-C until it returns. `interruptible` runs
`fn` on a daemon thread (the native call drops the GIL) and waits for it in short steps: Ctrl-C
raises KeyboardInterrupt in the caller at once, while the worker, which cannot be stopped inside
native code, finishes in the background with everything it references kept alive. Exceptions of
`fn` are raised in the caller as they are.

A worker still inside native code when the interpreter exits would crash its finalization, so
the exit hook here runs the registered cleanups (`at_exit`), flushes stdout and stderr and, only
while such a worker lives, ends the process at once with os._exit (status 130: it was interrupted).
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from typing import Any, Callable, NoReturn

POLL_S = 0.05
_cleanups: list[Callable[[], None]] = []
_running: set[threading.Event] = set()     # one per worker, set when its work returned


def at_exit(fn: Callable[[], None]) -> Callable[[], None]:
    """Run `fn` when the process exits, before the exit hook may end it at once."""
    _cleanups.append(fn)
    return fn


def busy() -> bool:
    """Whether a worker is still inside native work (after its caller was interrupted)."""
    return any(not done.is_set() for done in list(_running))


@atexit.register
def _exit_hook() -> None:
    for fn in reversed(_cleanups):
        try:
            fn()
        except Exception:
            pass
    if busy():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(130)


def exit_interrupted(what: str = "", *, ignore_more: bool = False) -> NoReturn:
    """Exit 130 (interrupted) with one line on stderr and no traceback. `ignore_more`: a second Ctrl-C
    while the process exits is ignored (for the command's own process, not for a caller's)."""
    if ignore_more:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:              # not the main thread
            pass
    try:
        sys.stderr.write(f"error: interrupted (Ctrl-C){what}\n")
        sys.stderr.flush()
    except Exception:
        pass
    sys.exit(130)


def interruptible(fn: Callable[..., Any], *args, **kwargs) -> Any:
    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs)      # signals reach the main thread only: nothing to gain here
    box: list = []
    done = threading.Event()    # not Thread.join: an interrupted join can mark a running thread stopped

    def work() -> None:
        try:
            box.append((True, fn(*args, **kwargs)))
        except BaseException as e:      # handed to the caller's thread
            box.append((False, e))
        finally:
            done.set()

    _running.add(done)
    threading.Thread(target=work, name=f"kg-{getattr(fn, '__name__', 'work')}", daemon=True).start()
    while not done.wait(POLL_S):
        pass
    _running.discard(done)
    ok, value = box[0]
    if not ok:
        raise value.with_traceback(value.__traceback__)
    return value
