"""Whether a build was interrupted, whatever became of the exception that was to say so.

Ctrl-C (SIGINT) or SIGTERM during ``run_graph`` reaches the code in several disguises, or not at all:

- Dagster swaps its own SIGINT handler in around each run. In a step it raises
  ``DagsterExecutionInterruptedError``; while it sets a run up or winds it down it only notes the
  signal, and it forgets the note when the run ends: the run then succeeds and the build goes on.
- DuckDB turns an exception raised by a signal handler during a query into
  ``RuntimeError('Query interrupted')``: the step fails like any failed query.
- An exception raised while a finaliser or a weakref callback runs is printed as "Exception
  ignored" and dropped.

So an interrupt is not read from how a step ended. The interpreter's C-level signal handler writes
the number of each signal it catches to the wakeup fd before any Python handler runs, whichever
that is; ``InterruptWatch`` holds that pipe and ``run_graph`` reads it after each step. A build
therefore stops at the latest when the step running at the interrupt ends, and says it was
interrupted rather than that a step failed.
"""

import os
import signal
import sys
import threading

from dagster._core.errors import DagsterExecutionInterruptedError

_STOPPING = (signal.SIGINT, signal.SIGTERM)


def is_interrupt(exc_type: type[BaseException]) -> bool:
    return issubclass(exc_type, (KeyboardInterrupt, DagsterExecutionInterruptedError))


class InterruptWatch:
    """Within ``with InterruptWatch() as watch``: ``watch.received()`` says whether SIGINT or SIGTERM
    arrived since the block began. SIGTERM stops the build as Ctrl-C does (Dagster handles it so
    inside its runs already). An interrupt raised in a finaliser is not printed: the watch keeps it.

    Outside the main thread signals never reach the code, and the watch sees none."""

    def __init__(self) -> None:
        self._seen = False
        self._read = self._write = None

    def __enter__(self) -> "InterruptWatch":
        if threading.current_thread() is not threading.main_thread():
            return self
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous_term = signal.getsignal(signal.SIGTERM)
        if self._previous_term == signal.SIG_DFL:  # a Python handler, so that the signal is noted too
            signal.signal(signal.SIGTERM, signal.default_int_handler)
        self._previous_hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, *exc) -> None:
        if self._read is None:
            return
        sys.unraisablehook = self._previous_hook
        signal.signal(signal.SIGTERM, self._previous_term)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._read)
        os.close(self._write)
        self._read = self._write = None

    def received(self) -> bool:
        while self._read is not None and not self._seen:
            try:
                noted = os.read(self._read, 512)
            except BlockingIOError:
                break
            self._seen = any(number in _STOPPING for number in noted)
        return self._seen

    def _unraisable(self, unraisable) -> None:
        if not is_interrupt(unraisable.exc_type):
            self._previous_hook(unraisable)


def forget_in_child() -> None:
    """In a forked worker: its own signals are not the build's (the parent stops it by SIGTERM)."""
    if threading.current_thread() is threading.main_thread():
        signal.set_wakeup_fd(-1)
