"""The interrupt watch notes Ctrl-C and SIGTERM however the code they land in ends: DuckDB turns
them into ``RuntimeError('Query interrupted')``, a finaliser drops them, a Dagster run leaves
SIGTERM ignored. A fork holds them until it is done, so none lands inside a library's fork hook.
Every case sends a real signal to this process."""

import os
import signal

import pytest

from pipeline.interrupts import InterruptWatch, forget_in_child, signals_held
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


# A fork hook that stands for a library's (filelock records what each thread holds): armed, a Ctrl-C
# lands while it runs. Registered once for the session, inert unless a test arms it.
_hook_runs: list[str] = []


def _ctrl_c_lands_in_a_fork_hook() -> None:
    if _hook_runs == ["armed"]:
        signal.raise_signal(signal.SIGINT)
        _hook_runs.append("finished")


os.register_at_fork(before=_ctrl_c_lands_in_a_fork_hook)


def test_a_ctrl_c_during_a_fork_waits_until_the_fork_hooks_are_done():
    _hook_runs[:] = ["armed"]
    pid = None
    try:
        with pytest.raises(KeyboardInterrupt):
            with signals_held():
                pid = os.fork()
                if pid == 0:
                    os._exit(0)
                assert _hook_runs == ["armed", "finished"], "the interrupt was raised inside the fork hook"
    finally:
        _hook_runs.clear()
        if pid:
            os.waitpid(pid, 0)


def test_a_forked_child_gets_the_held_signals_back():
    with signals_held():
        pid = os.fork()
        if pid == 0:  # the child: exit status 0 only if the fork held SIGINT and forget_in_child let it in
            code = 1
            try:
                held = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
                forget_in_child()
                code = 0 if held and signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, []) else 1
            finally:
                os._exit(code)  # never back into pytest's own loop, whatever happened
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, []), "the parent's signals stay held"
