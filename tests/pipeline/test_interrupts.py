"""The interrupt watch notes Ctrl-C and SIGTERM however the code they land in ends: DuckDB turns
them into ``RuntimeError('Query interrupted')``, a finaliser drops them, a Dagster run leaves
SIGTERM ignored. Every case sends a real signal to this process."""

import signal

import pytest

from pipeline.interrupts import InterruptWatch
from tests.interrupt_signals import drop_an_interrupt, interrupt_soon, long_query

pytestmark = pytest.mark.usefixtures("fresh_signals")


def test_an_interrupt_duckdb_turned_into_a_failed_query_is_still_received():
    with InterruptWatch() as watch:
        assert not watch.received()
        interrupt_soon()
        with pytest.raises(RuntimeError, match="Query interrupted"):
            long_query()
        assert watch.received()


def test_an_interrupt_a_finaliser_dropped_is_received_and_not_printed(capfd):
    with InterruptWatch() as watch:
        drop_an_interrupt()  # raises nothing here
        assert watch.received()
    assert "Exception ignored" not in capfd.readouterr().err


def test_sigterm_stops_like_ctrl_c_inside_the_watch_only():
    before = signal.getsignal(signal.SIGTERM)
    with InterruptWatch() as watch:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
        assert watch.received()
    assert signal.getsignal(signal.SIGTERM) == before


def test_sigterm_a_dagster_run_left_ignored_stops_again_once_the_watch_keeps_it():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job of a shell without job control
    with InterruptWatch() as watch:
        signal.signal(signal.SIGTERM, signal.getsignal(signal.SIGINT))  # what a Dagster run does as it ends
        watch.keep_sigterm()
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
        assert watch.received()
