"""Ctrl-C stops a build, and is reported as an interrupt, however the step it lands in ends: DuckDB
turns it into ``RuntimeError('Query interrupted')``, a finaliser drops it, a worker may not stop on
SIGTERM or may die without a result, a Dagster run leaves SIGTERM ignored. Every case sends a real
signal to this process; ``tests/pipeline/test_interrupts.py`` holds the watch alone."""

import os
import signal
import time
from pathlib import Path

import dagster as dg
import pytest

from assets.release import rebuild
from assets.release.rebuild import run_graph
from tests.interrupt_signals import drop_an_interrupt, interrupt_soon, long_query

pytestmark = pytest.mark.usefixtures("fresh_signals")


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


def test_sigterm_between_steps_stops_a_build_started_with_ctrl_c_ignored(tmp_path):
    """A background job of a shell without job control starts with SIGINT ignored; each Dagster run
    then leaves SIGTERM ignored as it ends, and the build must still stop on SIGTERM after it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ran = tmp_path / "second"

    def between_steps(message: str) -> None:
        if message.startswith("[1/2] first ok"):
            signal.raise_signal(signal.SIGTERM)

    with pytest.raises(KeyboardInterrupt):
        run_graph(_two_steps(lambda: None, ran), settings={}, progress=between_steps, log_level="CRITICAL")
    assert not ran.exists()


def _partitioned(step) -> dg.Definitions:
    @dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a", "b"]))
    def parts(context: dg.AssetExecutionContext) -> None:
        step(context.partition_key)

    return dg.Definitions(assets=[parts])


def test_ctrl_c_kills_parallel_workers_that_do_not_stop_on_sigterm(tmp_path, monkeypatch):
    monkeypatch.setattr(rebuild, "STOP_GRACE_SECONDS", 0.5)

    build = os.getpid()

    def stubborn(partition: str) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        (tmp_path / partition).write_text(str(os.getpid()))
        if partition == "b":  # Ctrl-C once both workers run; sent from here, so no thread of the build is forked
            deadline = time.monotonic() + 60
            while not (tmp_path / "a").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(build, signal.SIGINT)
        time.sleep(120)

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
    # The errors are compared too: should the other worker ever fail, the assertion says why.
    assert [(s.partition, s.success, s.error) for s in run.steps] == [
        ("a", True, None), ("b", False, "its worker process ended without a result (exit code 3)")]


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
