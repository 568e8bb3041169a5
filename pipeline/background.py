"""One call run beside the caller's own work, for work that spends its time outside the interpreter.

A step that runs DuckDB queries, or waits on another process (the SQL sandbox's worker), leaves the
interpreter free most of the time; the caller can go on with work of its own meanwhile. Only work
like that gains: two pure-Python calls share one interpreter lock.

A daemon thread, not an executor: the executor's threads are joined when the interpreter exits, so
a step stopped by Ctrl-C or SIGTERM would first wait for the call to end. The caller waits for the
result on its normal path and never forks while the call runs (``robustgym build`` forks its workers
between steps, when no call is running).
"""

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_PENDING = object()


class BackgroundCall(Generic[T]):
    """``fn(*args)`` started at once on a daemon thread; ``result()`` waits for it and returns its value
    or raises its exception."""

    def __init__(self, fn: Callable[..., T], *args, name: str):
        self._fn, self._args = fn, args
        self._value: object = _PENDING
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._fn(*self._args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self._error = exc

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def wait(self) -> None:
        """Wait for the call to end, whatever it gives (a caller that will not read the result)."""
        self._thread.join()
