"""No tracebacks: every failure of load, synth, build and eval ends with one clear message naming what
failed and a non-zero exit status, and leaves the existing target untouched. Each command is run as
a user meets it: as a real process, with a full disk (RLIMIT_FSIZE), a target that is a folder, a
read-only folder (permissions bind even under root, see tests/limited_process.py) and Ctrl-C.
``--verbose`` shows the traceback."""

import hashlib
import signal
import subprocess
from pathlib import Path

import pytest

from pipeline.build_lock import LOCK_NAME
from robustgym.cli import main
from tests.limited_process import popen, robustgym, run

FULL_DISK = 256 * 1024  # bytes a process may write: every command here needs more


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_message(done: subprocess.CompletedProcess, command: str, *needles: str) -> str:
    """The command failed with one message (plus the --verbose hint) and no traceback."""
    assert done.returncode not in (0, None), done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith(f"robustgym {command}")]
    assert len(lines) == 1, done.stderr[-3000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def interrupted(argv: list[str], cwd: Path, after: str) -> subprocess.CompletedProcess:
    """Ctrl-C (SIGINT) once the command's progress on stderr shows ``after``."""
    process = popen(argv, cwd=cwd)
    seen = []
    for line in process.stderr:
        seen.append(line)
        if after in line:
            break
    else:
        pytest.fail(f"the command ended before {after!r}: {''.join(seen)[-2000:]}")
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(argv, process.returncode, stdout, "".join(seen) + stderr)


def no_temporary_files(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".") and p.name != LOCK_NAME]


@pytest.fixture(scope="module")
def previous(demo_db) -> bytes:
    """The bytes of a good database that failed commands must leave in place."""
    return demo_db.read_bytes()


def placed(previous: bytes, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(previous)
    return path


def failing_load(monkeypatch, interrupt: bool) -> None:
    """``load_mimic`` ending as DuckDB ends a query that Ctrl-C interrupted (or, without the Ctrl-C, as
    a query that just failed): with ``RuntimeError('Query interrupted')``."""
    def load_mimic(*args, **kwargs):
        try:
            if interrupt:
                signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr("pipeline.loader.load_mimic", load_mimic)


@pytest.mark.usefixtures("fresh_signals")
def test_a_query_failed_by_ctrl_c_is_reported_as_the_interrupt(demo_dir, tmp_path, monkeypatch, capsys):
    failing_load(monkeypatch, interrupt=True)
    assert main(["load", str(demo_dir), "--allow-missing", "--db", str(tmp_path / "x.duckdb")]) == 130
    assert "robustgym load: interrupted; its target was left as it was" in capsys.readouterr().err


@pytest.mark.usefixtures("fresh_signals")
def test_the_same_failure_without_ctrl_c_is_a_failure(demo_dir, tmp_path, monkeypatch, capsys):
    failing_load(monkeypatch, interrupt=False)
    assert main(["load", str(demo_dir), "--allow-missing", "--db", str(tmp_path / "x.duckdb")]) == 1
    assert "robustgym load failed: RuntimeError: Query interrupted" in capsys.readouterr().err


# ---------------------------------------------------------------- load and synth

DEMO_LOAD = ("load", "{demo}", "--allow-missing", "--db")


def load_argv(demo_dir: Path, db: Path, *more: str) -> list[str]:
    return robustgym("load", demo_dir, "--allow-missing", "--db", db, *more)


def test_load_into_a_folder_says_so_without_a_traceback(demo_dir, tmp_path):
    (tmp_path / "db").mkdir()
    done = run(load_argv(demo_dir, tmp_path / "db"), cwd=tmp_path)
    one_message(done, "load", "it is a directory", str(tmp_path / "db"))
    assert list((tmp_path / "db").iterdir()) == [] and done.returncode == 1


def test_load_on_a_full_disk_names_the_database_and_keeps_the_old_one(demo_dir, tmp_path, previous):
    db = placed(previous, tmp_path / "source.duckdb")
    done = run(load_argv(demo_dir, db, "--quiet"), cwd=tmp_path, file_size=FULL_DISK)
    one_message(done, "load", f"could not write the database {db}", "File too large", "nothing was replaced")
    assert db.read_bytes() == previous
    no_temporary_files(tmp_path)


def test_load_into_a_read_only_folder_says_permission_denied(demo_dir, tmp_path, previous):
    folder = tmp_path / "ro"
    db = placed(previous, folder / "source.duckdb")
    folder.chmod(0o555)
    try:
        done = run(load_argv(demo_dir, db, "--quiet"), cwd=tmp_path, bound_by_permissions=True)
    finally:
        folder.chmod(0o755)
    one_message(done, "load", str(db), "Permission denied")
    assert db.read_bytes() == previous


def test_ctrl_c_during_a_load_exits_130_and_keeps_the_old_database(demo_dir, demo_chartevents_dir, tmp_path, previous):
    db = placed(previous, tmp_path / "source.duckdb")
    done = interrupted(robustgym("load", demo_dir, demo_chartevents_dir, "--db", db), tmp_path,
                       after="hosp/patients.csv.gz:")
    assert done.returncode == 130, done.stderr[-2000:]
    one_message(done, "load", "interrupted")
    assert db.read_bytes() == previous
    no_temporary_files(tmp_path)


def test_verbose_adds_the_traceback(demo_dir, tmp_path):
    (tmp_path / "db").mkdir()
    done = run(load_argv(demo_dir, tmp_path / "db", "--verbose"), cwd=tmp_path)
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr and "DatabaseWriteError" in done.stderr
    assert "robustgym load failed: cannot write the database" in done.stderr


def test_synth_on_a_full_disk_into_a_folder_and_read_only_fails_cleanly(tmp_path, previous):
    db = placed(previous, tmp_path / "synthetic.duckdb")
    argv = robustgym("synth", "--patients", "100", "--quiet", "--db")
    one_message(run([*argv, db], cwd=tmp_path, file_size=FULL_DISK), "synth", "File too large")
    assert db.read_bytes() == previous
    (tmp_path / "folder").mkdir()
    one_message(run([*argv, tmp_path / "folder"], cwd=tmp_path), "synth", "it is a directory")
    (tmp_path / "ro").mkdir(mode=0o555)
    one_message(run([*argv, tmp_path / "ro" / "x.duckdb"], cwd=tmp_path, bound_by_permissions=True), "synth",
                "Permission denied")
    no_temporary_files(tmp_path)


def test_ctrl_c_during_synth_exits_130_and_keeps_the_old_database(tmp_path, previous):
    db = placed(previous, tmp_path / "synthetic.duckdb")
    done = interrupted(robustgym("synth", "--patients", "3000", "--db", db), tmp_path, after="patients")
    assert done.returncode == 130, done.stderr[-2000:]
    one_message(done, "synth", "interrupted")
    assert db.read_bytes() == previous
    no_temporary_files(tmp_path)


# ---------------------------------------------------------------- build

BUILD = ("build", "--patients", "100", "--set", "tasks_per_template=1", "--set", "target_pairs=60")


def test_build_on_a_full_disk_fails_at_its_first_stage_without_a_traceback(tmp_path):
    done = run(robustgym(*BUILD), cwd=tmp_path, file_size=FULL_DISK)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "build FAILED at source_database: " in done.stderr and "File too large" in done.stderr
    assert "nothing was published" in done.stderr and not (tmp_path / "releases").exists()


def test_build_with_a_file_for_a_folder_or_a_read_only_folder_fails_before_running_anything(tmp_path):
    (tmp_path / "releases").write_text("not a folder")
    done = run(robustgym(*BUILD), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--releases-dir releases is a file; it must name a folder" in done.stderr
    (tmp_path / "releases").unlink()
    (tmp_path / "data").mkdir(mode=0o555)
    done = run(robustgym(*BUILD), cwd=tmp_path, bound_by_permissions=True)
    one_message(done, "build", "data/.robustgym-build.lock", "Permission denied")
    assert list((tmp_path / "data").iterdir()) == []


def test_a_second_build_in_the_folder_is_refused_naming_the_first_which_ctrl_c_then_stops(tmp_path):
    # 5,000 patients: the first build is still generating its source when it is interrupted.
    first = popen(robustgym("build", "--patients", "5000"), cwd=tmp_path)
    for line in first.stderr:
        if "source_database" in line:
            break
    try:
        second = run(robustgym(*BUILD), cwd=tmp_path)
        assert second.returncode == 75, second.stderr[-2000:]
        assert f"another build is running in data: pid {first.pid}" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.send_signal(signal.SIGINT)
        stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 130 and "Traceback" not in stderr, stderr[-2000:]
    assert "robustgym build: interrupted" in stderr
    assert (tmp_path / "data" / LOCK_NAME).read_text() == ""  # released
    assert not (tmp_path / "releases").exists()


def test_ctrl_c_while_partitions_build_in_parallel_stops_every_worker(tmp_path):
    done = interrupted(robustgym(*BUILD, "--workers", "2"), tmp_path, after="(2 at a time)")
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "robustgym build: interrupted" in done.stderr
    assert not (tmp_path / "releases").exists()
    # No forked worker outlives the build (they run in the build's folder).
    left = [pid for pid in Path("/proc").iterdir() if pid.name.isdigit() and _cwd(pid) == tmp_path.resolve()]
    assert left == []


def _cwd(proc: Path) -> Path | None:
    try:
        return (proc / "cwd").resolve(strict=True)
    except OSError:
        return None


# ---------------------------------------------------------------- eval


def eval_argv(release: Path, out: Path, *more: str) -> list[str]:
    return robustgym("eval", "--release", release, "--agent", "oracle", "--out", out, *more)


def test_eval_into_a_file_on_a_full_disk_and_read_only_fails_cleanly(demo_release_dir, tmp_path):
    (tmp_path / "a-file").write_text("keep me")
    one_message(run(eval_argv(demo_release_dir, tmp_path / "a-file", "--quiet"), cwd=tmp_path), "eval",
                str(tmp_path / "a-file"), "not a folder")
    assert (tmp_path / "a-file").read_text() == "keep me"
    one_message(run(eval_argv(demo_release_dir, tmp_path / "out", "--quiet"), cwd=tmp_path, file_size=1024),
                "eval", "File too large")
    (tmp_path / "ro").mkdir(mode=0o555)
    one_message(run(eval_argv(demo_release_dir, tmp_path / "ro", "--quiet"), cwd=tmp_path,
                    bound_by_permissions=True), "eval", "Permission denied")


def test_ctrl_c_during_eval_exits_130_without_a_traceback(demo_release_dir, tmp_path):
    done = interrupted(eval_argv(demo_release_dir, tmp_path / "out", "--trials", "400"), tmp_path, after="oracle")
    assert done.returncode == 130, done.stderr[-2000:]
    one_message(done, "eval", "interrupted")
