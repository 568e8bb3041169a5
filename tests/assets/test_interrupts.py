"""Ctrl-C stops a build, and is reported as an interrupt, however the step it lands in ends: DuckDB
turns it into ``RuntimeError('Query interrupted')``, a finaliser drops it, a worker may not stop on
SIGTERM or may die without a result. Every case sends a real signal to this process."""

import os
import signal
import threading
import time
import weakref
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from assets.release import rebuild
from assets.release.interrupts import InterruptWatch
from assets.release.rebuild import run_graph

# Seconds of work: the interrupt lands long before it ends. On one thread DuckDB notices it at once;
# on several it may notice only when the query ends.
LONG_QUERY = "SELECT count(*) FROM range(20000000000) t(i) WHERE hash(i) % 7 = 3"


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """Python's own SIGINT handler, even when the suite was started with SIGINT ignored (a background
    job of a shell without job control)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def long_query() -> None:
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute(LONG_QUERY).fetchall()


def interrupt_soon(after: float = 0.3) -> None:
    threading.Timer(after, os.kill, (os.getpid(), signal.SIGINT)).start()


def interrupt_once(*ready: Path) -> None:
    """Ctrl-C as soon as every file in ``ready`` exists (written by the workers once they run)."""
    def wait_then_interrupt() -> None:
        while not all(p.exists() for p in ready):
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=wait_then_interrupt, daemon=True).start()


def drop_an_interrupt() -> None:
    """Ctrl-C landing in a weakref callback: Python prints the exception as "ignored" and goes on."""
    class Held:
        pass

    held = Held()
    noted = weakref.ref(held, lambda _: signal.raise_signal(signal.SIGINT))  # noqa: F841 - kept alive
    del held


# ---------------------------------------------------------------- the watch alone

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


# ---------------------------------------------------------------- run_graph

def _two_steps(first_step, ran: Path) -> dg.Definitions:
    @dg.asset
    def first() -> None:
        first_step()

    @dg.asset(deps=[first])
    def second() -> None:
        ran.write_text("second ran")

    return dg.Definitions(assets=[first, second])


def test_a_build_whose_step_lost_the_interrupt_stops_after_that_step(tmp_path):
    ran = tmp_path / "second"
    with pytest.raises(KeyboardInterrupt):
        run_graph(_two_steps(drop_an_interrupt, ran), settings={}, log_level="CRITICAL")
    assert not ran.exists()


def test_a_query_interrupted_in_a_step_is_an_interrupt_not_a_failed_build(tmp_path):
    ran = tmp_path / "second"

    def query() -> None:
        interrupt_soon()
        long_query()

    with pytest.raises(KeyboardInterrupt):
        run_graph(_two_steps(query, ran), settings={}, log_level="CRITICAL")
    assert not ran.exists()


def _partitioned(step) -> dg.Definitions:
    @dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a", "b"]))
    def parts(context: dg.AssetExecutionContext) -> None:
        step(context.partition_key)

    return dg.Definitions(assets=[parts])


def test_ctrl_c_kills_parallel_workers_that_do_not_stop_on_sigterm(tmp_path, monkeypatch):
    monkeypatch.setattr(rebuild, "STOP_GRACE_SECONDS", 0.5)

    def stubborn(partition: str) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        (tmp_path / partition).write_text(str(os.getpid()))
        time.sleep(120)

    interrupt_once(tmp_path / "a", tmp_path / "b")
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_graph(_partitioned(stubborn), settings={}, log_level="CRITICAL", workers=2)
    assert time.monotonic() - started < 60
    pids = [int((tmp_path / p).read_text()) for p in "ab"]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # gone, and reaped


def test_a_worker_that_dies_without_a_result_fails_its_step_instead_of_hanging():
    def dies(partition: str) -> None:
        if partition == "b":
            os._exit(3)

    run = run_graph(_partitioned(dies), settings={}, log_level="CRITICAL", workers=2)
    assert [(s.partition, s.success) for s in run.steps] == [("a", True), ("b", False)]
    assert run.failed.error == "its worker process ended without a result (exit code 3)"


# ---------------------------------------------------------------- what the build command says

def _build_interrupted_in_a_step(tmp_path: Path, publishes: bool) -> int:
    """``robustgym build`` over one step that (maybe) publishes a release folder, then gets Ctrl-C."""
    from assets.resources import ProjectPaths
    from robustgym.cli import build_parser
    from robustgym.commands.build import run

    @dg.asset(name="release")
    def publish(paths: ProjectPaths) -> None:
        if publishes:  # as the release step's final rename leaves the folder
            (paths.releases / "1.0.0").mkdir(parents=True)
        signal.raise_signal(signal.SIGINT)

    args = build_parser().parse_args(["build", "--data-dir", str(tmp_path / "data"),
                                      "--releases-dir", str(tmp_path / "rel")])
    return run(args, defs=dg.Definitions(assets=[publish], resources={"paths": ProjectPaths()}))


def test_ctrl_c_after_the_release_is_published_says_it_is_complete(tmp_path, capsys):
    assert _build_interrupted_in_a_step(tmp_path, publishes=True) == 130
    err = capsys.readouterr().err
    assert f"interrupted after publishing; release 1.0.0 is complete at {tmp_path / 'rel' / '1.0.0'}" in err


def test_ctrl_c_before_anything_is_published_is_an_interrupt_for_the_command_line_to_report(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _build_interrupted_in_a_step(tmp_path, publishes=False)
