"""Signals as a fresh command meets them, and real interrupts to send to this process."""

import os
import signal
import threading
import weakref

import duckdb
import pytest

# Seconds of work: the interrupt lands long before it ends. On one thread DuckDB notices it at once;
# on several it may notice only when the query ends.
LONG_QUERY = "SELECT count(*) FROM range(20000000000) t(i) WHERE hash(i) % 7 = 3"


@pytest.fixture()
def fresh_signals():
    """The signals of a fresh ``robustgym`` command: Python's own SIGINT handler and SIGTERM's
    default, even when the suite was started with SIGINT ignored (a background job of a shell
    without job control) and an earlier Dagster run then left SIGTERM ignored too (Dagster maps
    SIGTERM to SIGINT's handler when a run ends)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler), signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGINT, before[0])
    signal.signal(signal.SIGTERM, before[1])


def long_query() -> None:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute(LONG_QUERY).fetchall()


def interrupt_soon(after: float = 0.3) -> None:
    threading.Timer(after, os.kill, (os.getpid(), signal.SIGINT)).start()


def drop_an_interrupt() -> None:
    """Ctrl-C landing in a weakref callback: Python prints the exception as "ignored" and goes on."""
    class Held:
        pass

    held = Held()
    noted = weakref.ref(held, lambda _: signal.raise_signal(signal.SIGINT))  # noqa: F841 - kept alive
    del held
