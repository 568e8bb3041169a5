"""One build at a time per folder: the second holder is refused and told who holds the lock, a lock
left by a dead process is taken over, a released lock records nobody."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.build_lock import LOCK_NAME, BuildLocked, build_lock, process_alive

REPO = Path(__file__).resolve().parents[2]


def hold_in_another_process(folder: Path) -> subprocess.Popen:
    """A process that takes the lock, says so on stdout, and waits to be killed."""
    script = textwrap.dedent(f"""
        import sys, time
        from pipeline.build_lock import build_lock
        with build_lock({str(folder)!r}, command="holder in a test"):
            print("held", flush=True)
            time.sleep(300)
    """)
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_build_is_refused_and_told_who_holds_the_lock(tmp_path):
    holder = hold_in_another_process(tmp_path)
    try:
        with pytest.raises(BuildLocked) as info:
            with build_lock(tmp_path):
                pytest.fail("two builds held the lock")
        assert info.value.holder.pid == holder.pid and info.value.holder.command == "holder in a test"
        assert f"pid {holder.pid}" in str(info.value) and str(tmp_path / LOCK_NAME) in str(info.value)
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_of_a_killed_build_is_taken_over_and_the_takeover_is_said(tmp_path):
    holder = hold_in_another_process(tmp_path)
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
