"""load_release reads the release layout of docs/architecture.md and reports every problem at once,
naming the file or the task."""

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from pipeline.task_model import tasks_from_arrow, tasks_to_arrow
from robustgym import load_release
from robustgym.release import ReleaseError


def copy_release(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, copy_function=os.link)  # hard links: no bytes copied
    return dst


def rewrite_tasks(release: Path, split: str, change) -> None:
    path = release / "tasks" / f"{split}.parquet"
    tasks = [change(t) for t in tasks_from_arrow(pq.read_table(path))]
    path.unlink()  # a hard link: replace, never write through
    pq.write_table(tasks_to_arrow(tasks), path)


def test_a_release_loads_with_its_splits_manifest_and_base(demo_release, demo_release_dir):
    manifest = json.loads((demo_release_dir / "manifest.json").read_text())
    assert demo_release.version == manifest["version"]
    assert {s.value: len(t) for s, t in demo_release.splits.items()} == manifest["counts"]
    assert demo_release.base_database == (demo_release_dir / "base.duckdb").resolve()
    some = demo_release.tasks("test")[0]
    assert demo_release.task(some.task_id) == some and some.split == "test"
    with pytest.raises(KeyError, match="no task 'nope'"):
        demo_release.task("nope")


def test_reading_one_split_gives_its_tasks_and_refuses_the_others(demo_release, demo_release_dir, tmp_path):
    test_only = load_release(demo_release_dir, splits=["test"])
    assert test_only.tasks("test") == demo_release.tasks("test") and test_only.tasks() == demo_release.tasks("test")
    # a clean task and its twins share a split: every pair of the split is whole
    assert all(t.clean_task_id in test_only for t in test_only.tasks("test") if t.clean_task_id)
    with pytest.raises(ValueError, match=r"the train split was not read .*named only \['test'\]"):
        test_only.tasks("train")
    with pytest.raises(KeyError):
        test_only.task(demo_release.tasks("train")[0].task_id)
    # the split read is still checked: a task of another base is named
    broken = copy_release(demo_release_dir, tmp_path / "r")
    rewrite_tasks(broken, "test", lambda t: replace(t, base_fingerprint="0" * 64))
    with pytest.raises(ReleaseError, match="not this release's base database"):
        load_release(broken, splits=["test"], verify=False)


def test_a_releases_folder_resolves_through_latest(demo_release_dir, tmp_path):
    root = tmp_path / "releases"
    copy_release(demo_release_dir, root / "v1")
    (root / "latest").write_text("v1\n")
    assert load_release(root).root == (root / "v1").resolve()


def test_a_changed_task_file_is_caught_by_its_hash(demo_release_dir, tmp_path):
    release = copy_release(demo_release_dir, tmp_path / "r")
    rewrite_tasks(release, "test", lambda t: replace(t, question=t.question + "?"))
    with pytest.raises(ReleaseError, match="tasks/test.parquet: sha256 differs"):
        load_release(release)
    assert load_release(release, verify=False).tasks("test")[0].question.endswith("??")


def test_every_problem_is_reported_at_once(demo_release_dir, tmp_path):
    release = copy_release(demo_release_dir, tmp_path / "r")
    rewrite_tasks(release, "train", lambda t: replace(t, accepted_outcomes=()))
    (release / "tasks" / "validation.parquet").unlink()
    with pytest.raises(ReleaseError) as caught:
        load_release(release)
    problems = caught.value.problems
    assert any("tasks/validation.parquet is listed in the manifest but missing" in p for p in problems)
    assert any("no accepted outcome" in p and "fx-potassium-28258130" in p for p in problems)
    assert any("train.parquet: sha256 differs" in p for p in problems)


def test_a_base_database_of_another_source_is_refused(demo_release_dir, tmp_path):
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE _robustgym_meta (key VARCHAR, value VARCHAR)")
    con.execute("INSERT INTO _robustgym_meta VALUES ('kind', 'synthetic'), ('fingerprint', 'f00'), ('details', '{}')")
    con.close()
    with pytest.raises(ReleaseError, match="fingerprint f00"):
        load_release(demo_release_dir, base_database=other)


def test_a_release_without_a_base_database_asks_for_one(demo_release_dir, tmp_path):
    release = copy_release(demo_release_dir, tmp_path / "r")
    manifest = json.loads((release / "manifest.json").read_text())
    manifest.update(base_database=None, rebuild_command="robustgym load MIMIC_DIR --db base.duckdb")
    (release / "manifest.json").unlink()
    (release / "manifest.json").write_text(json.dumps(manifest))
    (release / "base.duckdb").unlink()
    with pytest.raises(ReleaseError, match="robustgym load MIMIC_DIR"):
        load_release(release)
    assert load_release(release, base_database=demo_release_dir / "base.duckdb").tasks()


def test_a_folder_without_manifest_is_not_a_release(tmp_path):
    with pytest.raises(ReleaseError, match="no manifest.json"):
        load_release(tmp_path)
