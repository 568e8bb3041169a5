"""One build at a time per folder: the second holder is refused and told who holds the lock, a lock
left by a dead process is taken over, a released lock records nobody. Steps of Dagster runs share the
lock with each other, exclude a build and are excluded by one; a build's own steps take nothing."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipeline.build_lock import LOCK_NAME, BuildLocked, build_lock, process_alive, step_lock

REPO = Path(__file__).resolve().parents[2]


@contextmanager
def held_in_another_process(folder: Path, how: str = 'build_lock({folder!r}, command="holder in a test")') -> \
        Iterator[subprocess.Popen]:
    """A process that takes the lock (``how``), says so on stdout, and waits; killed on leaving."""
    script = textwrap.dedent(f"""
        import sys, time
        from pipeline.build_lock import build_lock, step_lock
        with {how.format(folder=str(folder))}:
            print("held", flush=True)
            time.sleep(300)
    """)
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_a_second_build_is_refused_and_told_who_holds_the_lock(tmp_path):
    with held_in_another_process(tmp_path) as holder, pytest.raises(BuildLocked) as info:
        with build_lock(tmp_path):
            pytest.fail("two builds held the lock")
    assert info.value.holder.pid == holder.pid and info.value.holder.command == "holder in a test"
    assert f"pid {holder.pid}" in str(info.value) and str(tmp_path / LOCK_NAME) in str(info.value)


def test_the_lock_of_a_killed_build_is_taken_over_and_the_takeover_is_said(tmp_path):
    with held_in_another_process(tmp_path) as holder:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert not process_alive(holder.pid)
    assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == holder.pid  # the dead holder's record
    said: list[str] = []
    with build_lock(tmp_path, say=said.append) as me:
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid() == me.pid
    assert len(said) == 1 and f"pid {holder.pid}" in said[0] and "ended without releasing it" in said[0]


def test_within_one_process_the_lock_is_exclusive_too_and_released_on_exit(tmp_path):
    with build_lock(tmp_path) as me:
        with pytest.raises(BuildLocked, match=f"pid {me.pid}"):
            with build_lock(tmp_path):
                pass
    assert (tmp_path / LOCK_NAME).read_text() == ""  # a clean release records nobody
    said: list[str] = []
    with build_lock(tmp_path, say=said.append):
        pass
    assert said == []


def test_an_exception_in_the_build_releases_the_lock(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with build_lock(tmp_path):
            raise RuntimeError("boom")
    with build_lock(tmp_path):
        pass


def test_steps_share_the_lock_and_a_build_waits_for_them(tmp_path):
    with held_in_another_process(tmp_path, how="step_lock({folder!r})"):
        with step_lock(tmp_path):  # a second step, of this run or another, shares it
            pass
        with pytest.raises(BuildLocked, match="a step of a Dagster run"):
            with build_lock(tmp_path):
                pytest.fail("a build ran while a step held the folder")
    with build_lock(tmp_path):  # the step ended: the build goes ahead
        pass


def test_a_step_is_refused_while_a_build_holds_the_folder_and_told_which(tmp_path):
    with held_in_another_process(tmp_path) as holder, pytest.raises(BuildLocked) as info:
        with step_lock(tmp_path):
            pytest.fail("a step ran while a build held the folder")
    assert info.value.holder.pid == holder.pid and "holder in a test" in str(info.value)


def test_a_builds_own_steps_in_its_process_and_its_forks_take_nothing(tmp_path):
    with build_lock(tmp_path):
        with step_lock(tmp_path):  # in the build's process
            pass
        child = os.fork()
        if child == 0:  # a forked step, as the build runs partitions
            try:
                with step_lock(tmp_path):
                    os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    with step_lock(tmp_path):  # released: an outside step now takes it itself
        pass
