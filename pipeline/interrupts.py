"""Whether a command was interrupted, whatever became of the exception that was to say so.

Ctrl-C (SIGINT) or SIGTERM reaches the code in several disguises, or not at all:

- DuckDB turns an exception raised by a signal handler during a query into
  ``RuntimeError('Query interrupted')``: the command fails like any failed query.
- An exception raised while a finaliser or a weakref callback runs is printed as "Exception
  ignored" and dropped.
- Dagster swaps its own SIGINT handler in around each run (``assets/release/interrupts.py``). When
  the run ends it sets SIGTERM to SIGINT's handler, which is "ignored" in a background job of a
  shell without job control: SIGTERM would then be dropped for the rest of the build.

So an interrupt is not read from how the code ended. The interpreter's C-level signal handler
writes the number of each signal it catches to the wakeup fd before any Python handler runs,
whichever that is; ``InterruptWatch`` holds that pipe, and its owner asks it whenever the code it
ran ended (``robustgym.cli.main``) or after each step (``run_graph``).
"""

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_STOPPING = (signal.SIGINT, signal.SIGTERM)


class InterruptWatch:
    """Within ``with InterruptWatch() as watch``: ``watch.received()`` says whether SIGINT or SIGTERM
    arrived since the block began. SIGTERM stops the code as Ctrl-C does (Dagster handles it so
    inside its runs already); ``keep_sigterm()`` puts that back after code that changed it. An
    interrupt (an exception of a type in ``quiet``) raised in a finaliser is not printed: the watch
    keeps it.

    Outside the main thread signals never reach the code, and the watch sees none."""

    def __init__(self, quiet: tuple[type[BaseException], ...] = (KeyboardInterrupt,)) -> None:
        self._quiet = quiet
        self._seen = False
        self._read = self._write = None
        self._term = None

    def __enter__(self) -> "InterruptWatch":
        if threading.current_thread() is not threading.main_thread():
            return self
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous_term = signal.getsignal(signal.SIGTERM)
        self._term = self._previous_term
        if self._previous_term == signal.SIG_DFL:  # a Python handler, so that the signal is noted too
            self._term = signal.default_int_handler
            signal.signal(signal.SIGTERM, self._term)
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

    def keep_sigterm(self) -> None:
        """SIGTERM's handler as the watch set it, after code that changed it (a Dagster run)."""
        if self._read is not None and signal.getsignal(signal.SIGTERM) != self._term:
            signal.signal(signal.SIGTERM, self._term)

    def received(self) -> bool:
        while self._read is not None and not self._seen:
            try:
                noted = os.read(self._read, 512)
            except BlockingIOError:
                break
            self._seen = any(number in _STOPPING for number in noted)
        return self._seen

    def _unraisable(self, unraisable) -> None:
        if not issubclass(unraisable.exc_type, self._quiet):
            self._previous_hook(unraisable)


@contextmanager
def signals_held() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM wait; one that arrived is handled as the block ends.

    For a fork: libraries' fork hooks are Python code (filelock's record what each thread holds),
    and a KeyboardInterrupt raised inside one leaves it half done; its after-fork hook then printed a
    traceback. A forked child starts with the signals still held: ``forget_in_child`` lets them in.
    Only the main thread receives them here; the block is for code that forks, which no other thread
    is running beside (``pipeline.background``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def forget_in_child() -> None:
    """In a forked worker: its own signals are not the build's (the parent stops it by SIGTERM), and
    those the fork held (``signals_held``) reach it again."""
    if threading.current_thread() is threading.main_thread():
        signal.set_wakeup_fd(-1)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)
