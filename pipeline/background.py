"""One call run beside the caller's own work, for work that spends its time outside the interpreter.

A step that runs DuckDB queries, or waits on another process (the SQL sandbox's worker), leaves the
interpreter free most of the time; the caller can go on with work of its own meanwhile. Only work
like that gains: two pure-Python calls share one interpreter lock.

Used as a context manager, so that no call outlives its block by accident: the block waits for the
call on its way out, whether it ended normally or with an ordinary exception, because the process
may go on and fork (``robustgym build`` forks its workers between steps, and a fork copies the locks
a running call holds, DuckDB's included, into the child). An interrupt (Ctrl-C, SIGTERM as
``KeyboardInterrupt``) leaves at once: the thread is a daemon, and the process is stopping. Not an
executor for the same reason: its threads are joined when the interpreter exits.

While any call runs, the interpreter's switch interval is lowered (``SWITCH_INTERVAL_S``). A thread
that comes back from DuckDB or a pipe needs the interpreter lock again, and the other thread, busy in
Python, keeps it for up to the switch interval: 5 ms by default, longer than most statements take.
The demo's source load beside its contract (Great Expectations' import and validation, pure Python)
took 5.8-6.3 s, and 5.0-5.4 s with the interval lowered. Where the other thread mostly waits (the
reference agents on their sandboxes beside the noise stage's checks) nothing changes either way.
"""

import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

SWITCH_INTERVAL_S = 0.0005  # while a background call runs (Python's default: 0.005)


class _SwitchInterval:
    """Lowers the interpreter's switch interval while at least one background call runs, and puts
    back the one it found when the last one ends."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running = 0
        self._saved = sys.getswitchinterval()

    def enter(self) -> None:
        with self._lock:
            if self._running == 0:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(self._saved, SWITCH_INTERVAL_S))
            self._running += 1

    def leave(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                sys.setswitchinterval(self._saved)


_switching = _SwitchInterval()


class BackgroundCall(Generic[T]):
    """``fn(*args)`` started at once on a daemon thread; ``result()`` waits for it and returns its value
    or raises its exception. ``with BackgroundCall(...) as call:`` waits for it at the end of the block
    (see the module's docstring)."""

    def __init__(self, fn: Callable[..., T], *args, name: str):
        self._fn, self._args = fn, args
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        _switching.enter()
        try:
            self._thread.start()
        except BaseException:
            _switching.leave()
            raise

    def _run(self) -> None:
        try:
            self._value = self._fn(*self._args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self._error = exc
        finally:
            _switching.leave()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def __enter__(self) -> "BackgroundCall[T]":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None or issubclass(exc_type, Exception):
            self._thread.join()
