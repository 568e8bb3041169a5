"""Publishing a release from real tasks: layout, read-back, determinism, atomicity, latest, diff."""

import dataclasses
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import polars as pl
import pytest

import pipeline.release.publish as publish
from pipeline.contracts import ContractViolation
from pipeline.release import ReleaseConflict, build_release, latest_version, resolve_release
from pipeline.release.base_database import check_base_database
from pipeline.release.task_files import sha256_file
from pipeline.task_model import tasks_to_arrow
from pipeline.vocabulary import Split
from tests.pipeline.release.demo_tasks import demo_tasks, observed_noise_shares

SPLITS = [s.value for s in Split]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tasks(demo_db):
    return list(demo_tasks(demo_db))


def _build(tasks, demo_db, releases_dir, version="1.0.0", **kw):
    return build_release(tasks, source_db=demo_db, version=version, releases_dir=releases_dir, seed=7,
                         config={"tasks_per_template": 6}, noise_shares=observed_noise_shares(tasks), **kw)


@pytest.fixture(scope="module")
def release(tasks, demo_db, tmp_path_factory):
    return _build(tasks, demo_db, tmp_path_factory.mktemp("releases"))


def _without_one_pair(tasks):
    gone = next(t for t in tasks if t.variant == "clean" and t.level == "population").task_id
    return [t for t in tasks if gone not in (t.task_id, t.clean_task_id)]


def _published(release, releases_dir):
    """A copy of the module's release folder (with latest), instead of building it again."""
    shutil.copytree(release.path.parent, releases_dir, symlinks=True, dirs_exist_ok=True)
    return releases_dir / release.version


def _leftovers(releases_dir):
    return sorted(p.name for p in releases_dir.iterdir() if p.name.startswith("."))


def test_the_release_folder_has_the_documented_layout(release):
    names = sorted(p.relative_to(release.path).as_posix() for p in release.path.rglob("*") if p.is_file())
    assert names == ["README.md", "base.duckdb", "croissant.json", "diff.json", "manifest.json",
                     "tasks/test.parquet", "tasks/train.parquet", "tasks/validation.parquet"]
    assert latest_version(release.path.parent) == "1.0.0"
    assert resolve_release(release.path.parent) == release.path
    assert _leftovers(release.path.parent) == []


def test_files_read_back_with_polars_and_duckdb_match_the_manifest(release, tasks):
    manifest = json.loads((release.path / "manifest.json").read_text())
    total = 0
    for split in SPLITS:
        rel = f"tasks/{split}.parquet"
        frame = pl.read_parquet(release.path / rel)
        assert frame.height == manifest["files"][rel]["rows"] == manifest["counts"]["by_split"][split]
        assert sha256_file(release.path / rel) == manifest["files"][rel]["sha256"]
        assert set(frame["split"].unique()) <= {split}
        total += frame.height
    assert total == manifest["counts"]["total"] == len(tasks)
    assert sha256_file(release.path / "base.duckdb") == manifest["files"]["base.duckdb"]["sha256"]

    glob = str(release.path / "tasks" / "*.parquet")
    rows = duckdb.sql(f"SELECT split, intent, level, coalesce(noise_type, 'clean') AS n, count(*) AS c "
                      f"FROM read_parquet('{glob}') GROUP BY ALL").fetchall()
    assert sorted(rows) == sorted((c["split"], c["intent"], c["level"], c["noise_type"], c["tasks"])
                                  for c in manifest["counts"]["by_category"])


def test_columns_are_typed_structs_and_lists_not_json_strings(release):
    schema = pl.read_parquet_schema(release.path / "tasks" / "train.parquet")
    assert isinstance(schema["slots"], pl.List) and isinstance(schema["slots"].inner, pl.Struct)
    assert isinstance(schema["patch"], pl.Struct) and isinstance(schema["answer"], pl.Struct)
    assert schema["subject_id"] == pl.Int64
    train = pl.read_parquet(release.path / "tasks" / "train.parquet")
    twin = train.filter(pl.col("noise_type") == "missing_evidence").row(0, named=True)
    assert twin["patch"]["hide"] and twin["clean_task_id"] in set(train["task_id"])


def test_the_manifest_records_source_config_generator_and_schema(release, demo_db):
    m = release.manifest
    with duckdb.connect(str(demo_db), read_only=True) as con:
        fingerprint = con.execute("SELECT value FROM _robustgym_meta WHERE key = 'fingerprint'").fetchone()[0]
    assert m["source"] | {"details": None} == {"kind": "mimic_iv", "fingerprint": fingerprint,
                                               "terms": "mimic_iv_demo", "details": None}
    assert m["seed"] == 7 and m["config"]["tasks_per_template"] == 6
    assert m["config"]["release"]["split_shares"] == {"train": 0.8, "validation": 0.1, "test": 0.1}
    assert m["generator_version"].startswith("git:")
    assert [f["name"] for f in m["schema"]][:3] == ["task_id", "clean_task_id", "variant"]
    assert m["base_database"] == "base.duckdb" and m["rebuild_command"] is None
    assert {c["contract"] for c in m["contracts"]} == {"clean_tasks", "noisy_twins", "pairs", "release_splits"}


def test_the_dataset_card_says_how_to_load_and_under_which_terms(release):
    card = (release.path / "README.md").read_text()
    for needle in ("pl.read_parquet", "read_parquet('releases/1.0.0/tasks/*.parquet')",
                   'load_dataset("releases/1.0.0")', "ODbL", "10.13026/dp1f-ex47", "| laboratory | patient |",
                   release.manifest["files"]["tasks/train.parquet"]["sha256"]):
        assert needle in card, needle


def test_the_shipped_base_database_is_the_source_and_checks_against_the_fingerprint(release, demo_db, tmp_path):
    assert sha256_file(release.path / "base.duckdb") == sha256_file(demo_db)
    check_base_database(release.path, release.path / "base.duckdb")
    other = tmp_path / "other.duckdb"
    shutil.copyfile(demo_db, other)
    with duckdb.connect(str(other)) as con:
        con.execute("UPDATE _robustgym_meta SET value = 'not-the-same' WHERE key = 'fingerprint'")
    with pytest.raises(ValueError, match="not-the-same"):
        check_base_database(release.path, other)


def test_two_builds_of_the_same_inputs_give_byte_identical_task_files(release, tasks, demo_db, tmp_path):
    again = _build(list(reversed(tasks)), demo_db, tmp_path)
    for split in SPLITS:
        rel = f"tasks/{split}.parquet"
        assert (again.path / rel).read_bytes() == (release.path / rel).read_bytes()


def test_tasks_given_as_a_table_publish_the_files_and_provenance_of_the_same_tasks(release, tasks, demo_db,
                                                                                  tmp_path):
    # The release asset hands over the candidate's files as one Arrow table, never decoded to Tasks.
    again = build_release(tasks_to_arrow(reversed(tasks)), source_db=demo_db, version="1.0.0", releases_dir=tmp_path,
                          seed=7, config={"tasks_per_template": 6}, noise_shares=observed_noise_shares(tasks))
    for split in SPLITS:
        rel = f"tasks/{split}.parquet"
        assert (again.path / rel).read_bytes() == (release.path / rel).read_bytes()
    assert again.manifest["noise"] == release.manifest["noise"]
    assert again.manifest["counts"] == release.manifest["counts"]


def test_the_manifest_counts_each_splits_made_up_values_from_its_twins_parameters(tasks, demo_db):
    from pipeline.source_db import read_source_info
    from pipeline.task_model import NamedValue

    twins = [t for t in tasks if t.variant == "noise"][:6]
    made_up = [("train", "Zorblax"), ("train", "4242"), ("validation", "Zorblax"), ("test", "Quix"), ("test", "-17"),
               ("train", "Quix")]
    twins = [dataclasses.replace(t, split=Split(pool), noise_params=(
        NamedValue("name_pool", pool), NamedValue("nonexistent", value), NamedValue("slot", "drug")))
        for t, (pool, value) in zip(twins, made_up)]
    by_split = {s.value: tasks_to_arrow([t for t in twins if t.split is s]) for s in Split}
    with duckdb.connect(str(demo_db), read_only=True) as con:
        info = read_source_info(con)
    assert publish.provenance(info, by_split, None)["noise"]["made_up"] == {
        "per_split": {"test": {"id:drug": 1, "name:drug": 1}, "train": {"id:drug": 1, "name:drug": 2},
                      "validation": {"name:drug": 1}},
        "held_out_also_in_train": 2}


def test_rebuilding_an_existing_version_is_accepted_when_identical_and_refused_when_not(release, tasks, demo_db,
                                                                                      tmp_path):
    first = _published(release, tmp_path)
    before = {p: p.stat().st_mtime_ns for p in first.rglob("*")}
    same = _build(tasks, demo_db, tmp_path)
    assert same.reused and same.path == first
    assert {p: p.stat().st_mtime_ns for p in first.rglob("*")} == before
    changed = [dataclasses.replace(t, question=t.question + " ") if t.variant == "clean" and i == 0 else t
               for i, t in enumerate(tasks)]
    with pytest.raises(ReleaseConflict, match="already exists .* different task files"):
        _build(changed, demo_db, tmp_path)
    assert {p: p.stat().st_mtime_ns for p in first.rglob("*")} == before
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("where", ["write_tasks", "write_croissant", "set_latest"])
def test_a_build_killed_midway_leaves_the_previous_release_and_latest_intact(where, release, tasks, demo_db,
                                                                           tmp_path, monkeypatch):
    first = _published(release, tmp_path)
    snapshot = {p.relative_to(tmp_path): sha256_file(p) for p in first.rglob("*") if p.is_file()}

    def killed(*args, **kwargs):
        raise KeyboardInterrupt(f"killed in {where}")

    monkeypatch.setattr(publish, where, killed)
    with pytest.raises(KeyboardInterrupt):
        _build(_without_one_pair(tasks), demo_db, tmp_path, version="1.1.0")
    assert latest_version(tmp_path) == "1.0.0"
    assert {p.relative_to(tmp_path): sha256_file(p) for p in first.rglob("*") if p.is_file()} == snapshot
    assert _leftovers(tmp_path) == []
    # set_latest runs after the rename: the new version is complete, only the pointer did not move.
    assert (tmp_path / "1.1.0").exists() == (where == "set_latest")


def test_a_contract_violation_publishes_nothing(tasks, demo_db, tmp_path):
    broken = [dataclasses.replace(t, proof=None) if t.variant == "noise" and i % 7 == 0 else t
              for i, t in enumerate(tasks)]
    with pytest.raises(ContractViolation, match="proof") as info:
        _build(broken, demo_db, tmp_path)
    assert any(f.column == "proof_problem" for r in info.value.results for f in r.blocking_failures)
    assert list(tmp_path.iterdir()) == []


def test_latest_moves_and_the_diff_lists_what_changed(release, tasks, demo_db, tmp_path):
    _published(release, tmp_path)
    kept = _without_one_pair(tasks)
    removed = {t.task_id for t in tasks} - {t.task_id for t in kept}
    second = _build(kept, demo_db, tmp_path, version="1.1.0")
    assert latest_version(tmp_path) == "1.1.0"
    diff = json.loads((second.path / "diff.json").read_text())
    assert diff["previous_version"] == "1.0.0"
    assert set(diff["tasks_removed"]) == removed and diff["tasks_added"] == []
    assert diff["total"] == {"before": len(tasks), "after": len(tasks) - len(removed), "delta": -len(removed)}
    assert sum(c["delta"] for c in diff["categories_changed"]) == -len(removed)
    assert "Against 1.0.0" in (second.path / "README.md").read_text()


def test_a_credentialed_source_ships_no_database_and_says_how_to_rebuild_it(tasks, demo_db, tmp_path):
    credentialed = tmp_path / "mimic.duckdb"
    shutil.copyfile(demo_db, credentialed)
    with duckdb.connect(str(credentialed)) as con:
        con.execute("""UPDATE _robustgym_meta SET value = '{"files": [{"path": "hosp/patients.csv.gz",
                       "sha256": "0000"}], "tables_missing": ["chartevents"]}' WHERE key = 'details'""")
    result = _build(tasks, credentialed, tmp_path / "releases")
    assert not (result.path / "base.duckdb").exists()
    assert result.manifest["base_database"] is None
    assert "robustgym load" in result.manifest["rebuild_command"] and "--allow-missing" in result.manifest["rebuild_command"]
    card = (result.path / "README.md").read_text()
    assert "must not be shared outside the PhysioNet data-use agreement" in card


@pytest.mark.parametrize("version", ["", "latest", "../1.0.0", ".1.0.0", "1.0/0", "v1.0.0", "2026.12.02", "1.0"])
def test_versions_that_are_not_semantic_versions_are_refused(version, tasks, demo_db, tmp_path):
    with pytest.raises(ValueError, match="semantic version"):
        _build(tasks, demo_db, tmp_path, version=version)
    assert list(tmp_path.iterdir()) == []


def test_without_a_version_the_content_names_the_release(release, tasks, demo_db, tmp_path):
    result = _build(tasks, demo_db, tmp_path, version=None)
    base, digest = result.version.split("+")
    assert len(digest) == 12 and base.count(".") == 2
    assert _build(tasks, demo_db, tmp_path, version=None).reused


# --------------------------------------------------------------------- identity of the base database


@pytest.fixture(scope="module")
def demo_db_again(demo_dir, tmp_path_factory):
    """The demo loaded a second time from the same files: the same tables in another DuckDB file."""
    from pipeline.loader import load_mimic

    path = tmp_path_factory.mktemp("again") / "demo.duckdb"
    load_mimic([demo_dir], path, allow_missing=True)
    return path


def test_identical_builds_record_the_same_base_database_digest(release, tasks, demo_db_again, tmp_path):
    """DuckDB writes a random identifier into each file, so the bytes of base.duckdb differ between
    identical builds; the manifest's content digest does not, and it is what a reproduction checks."""
    again = _build(tasks, demo_db_again, tmp_path)
    digest = release.manifest["base_database_digest"]
    assert again.manifest["base_database_digest"] == digest
    assert digest["method"] == "rows-v1" and len(digest["sha256"]) == 64
    with duckdb.connect(str(demo_db_again), read_only=True) as con:
        rows = sum(con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables()").fetchall())
    assert digest["tables"] == 31 and digest["rows"] == rows  # 30 MIMIC-IV tables and the metadata
    check_base_database(release.path, again.path / "base.duckdb")


def test_load_release_accepts_a_byte_different_copy_of_the_base_and_refuses_changed_tables(release, demo_db_again,
                                                                                         tmp_path):
    from robustgym.release import ReleaseError, load_release

    copy = tmp_path / "r"
    shutil.copytree(release.path, copy)
    (copy / "base.duckdb").unlink()
    shutil.copyfile(demo_db_again, copy / "base.duckdb")
    assert sha256_file(copy / "base.duckdb") != release.manifest["files"]["base.duckdb"]["sha256"]
    assert load_release(copy).base_database == (copy / "base.duckdb").resolve()
    with duckdb.connect(str(copy / "base.duckdb")) as con:
        con.execute("UPDATE labevents SET valuenum = valuenum + 1 WHERE row_id = 7")
    with pytest.raises(ReleaseError, match="its tables differ from the release's base database"):
        load_release(copy)
    with pytest.raises(ValueError, match="its tables differ"):
        check_base_database(release.path, copy / "base.duckdb")


# --------------------------------------------------------------------- what killed publishes leave


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_publish_removes_the_temporary_folders_of_killed_runs_and_keeps_live_ones(release, tasks, demo_db,
                                                                                  tmp_path):
    first = _published(release, tmp_path)
    dead, alive = _dead_pid(), os.getppid()
    host = publish._HOST
    left = [f".tmp-1.1.0-{host}-{dead}-0badc0de", f".tmp-pending-{dead}-0badc0de",  # the latter: older naming
            f".latest-{host}-{dead}-0badc0de"]
    kept = [f".tmp-1.1.0-{host}-{alive}-0badc0de", f".tmp-1.1.0-0000abcd-{dead}-0badc0de"]  # live; other host
    for name in left[:2] + kept:
        shutil.copytree(first, tmp_path / name)  # a complete, loadable release, as a kill can leave
    (tmp_path / left[2]).symlink_to("1.0.0")
    second = _build(_without_one_pair(tasks), demo_db, tmp_path, version="1.1.0")
    assert _leftovers(tmp_path) == sorted(kept)
    assert latest_version(tmp_path) == "1.1.0" and second.path == tmp_path / "1.1.0"


def test_a_publish_killed_outright_leaves_latest_valid_and_the_next_one_cleans_up(release, tasks, demo_db, tmp_path):
    """SIGKILL after the release is complete in its temporary folder, before the rename: no cleanup
    code runs. `latest` still names the previous release; the next publish removes the leftover."""
    _published(release, tmp_path)
    script = textwrap.dedent(f"""
        import os, pickle, signal, sys
        from pipeline.release import build_release
        tasks = pickle.load(open({str(tmp_path / 'tasks.pickle')!r}, "rb"))
        def progress(message):
            if message.startswith("verifying the release folder"):
                os.kill(os.getpid(), signal.SIGKILL)
        build_release(tasks, source_db={str(demo_db)!r}, version="1.1.0", releases_dir={str(tmp_path)!r}, seed=7,
                      progress=progress, noise_shares={observed_noise_shares(tasks)!r})
    """)
    with open(tmp_path / "tasks.pickle", "wb") as f:
        pickle.dump(_without_one_pair(tasks), f)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    (leftover,) = [n for n in _leftovers(tmp_path) if n.startswith(".tmp-1.1.0-")]
    assert (tmp_path / leftover / "manifest.json").exists()
    assert latest_version(tmp_path) == "1.0.0" and resolve_release(tmp_path) == tmp_path / "1.0.0"
    _build(_without_one_pair(tasks), demo_db, tmp_path, version="1.1.0")
    assert _leftovers(tmp_path) == [] and latest_version(tmp_path) == "1.1.0"
