"""The source asset materializes a real database, checks it in its own step, and reports what it holds."""

import json

import dagster as dg
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from assets.resources import ProjectPaths
from assets.source.assets import source_database
from assets.source.checks import SOURCE_TABLES_CHECK
from assets.stale_outputs import remove_outputs_of_other_sources
from pipeline.build_lock import LOCK_NAME
from pipeline.source_db import row_counts


def test_materializing_the_demo_source_records_counts_kind_fingerprint_and_the_contract_warning(
        tmp_path, demo_dir, demo_chartevents_dir):
    result = dg.materialize(
        [source_database],
        resources={"paths": ProjectPaths(data_dir=str(tmp_path / "data"))},
        run_config={"ops": {"source_database": {"config": {
            "kind": "mimic_iv", "mimic_dirs": [str(demo_dir), str(demo_chartevents_dir)]}}}},
    )
    assert result.success
    (mat,) = result.asset_materializations_for_node("source_database")
    meta = mat.metadata
    assert meta["source_kind"].value == "mimic_iv"
    assert meta["tables"].value == "31"
    assert len(meta["fingerprint"].value) == 64
    with duckdb.connect(str(tmp_path / "data" / "source.duckdb"), read_only=True) as con:
        counts = row_counts(con)
    assert counts["patients"] == 100 and counts["chartevents"] == 668_862
    assert meta["dagster/row_count"].value == sum(counts.values())
    assert {"table": "labevents", "rows": 107_727} in [r.data for r in meta["rows_per_table"].records]
    # The reconstruction repeats chartevents keys: a warning (the run goes on) that says what and how often.
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == SOURCE_TABLES_CHECK and not check.passed
    assert check.severity is dg.AssetCheckSeverity.WARN
    evidence = check.metadata["evidence"].value
    assert "chartevents" in evidence and "unexpected" in evidence
    # No pending file left; the build lock's file stays, empty, as after `robustgym build`.
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == sorted([LOCK_NAME, "source.duckdb"])
    assert (tmp_path / "data" / LOCK_NAME).read_text() == ""


def test_a_mimic_source_without_folders_fails_with_a_clear_message(tmp_path):
    result = dg.materialize(
        [source_database],
        resources={"paths": ProjectPaths(data_dir=str(tmp_path / "data"))},
        run_config={"ops": {"source_database": {"config": {"kind": "mimic_iv"}}}},
        raise_on_error=False,
    )
    assert not result.success
    failure = result.failure_data_for_node("source_database")
    assert "needs mimic_dirs" in str(failure.error.message) or "needs mimic_dirs" in str(failure.error)
    assert not (tmp_path / "data" / "source.duckdb").exists()


def _task_file(path, fingerprints):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"task_id": [f"t{i}" for i in range(len(fingerprints))],
                             "base_fingerprint": pa.array(fingerprints, pa.string())}), str(path))


def test_outputs_built_on_another_source_are_removed_and_current_ones_kept(tmp_path):
    paths = ProjectPaths(data_dir=str(tmp_path / "data"))
    _task_file(paths.clean_tasks_dir / "laboratory.parquet", ["new", "new"])
    _task_file(paths.clean_tasks_dir / "diagnoses.parquet", ["old"])
    _task_file(paths.clean_tasks_dir / "vitals_io.parquet", [])  # empty: proves nothing about its source
    _task_file(paths.noise_dir / "record.parquet", ["new", "old"])
    (paths.clean_tasks_dir / "catalogue.json").write_text("[]")
    candidate = paths.data / "release_candidate"
    candidate.mkdir()
    (candidate / "settings.json").write_text(json.dumps({"source_fingerprint": "old"}))

    removed = remove_outputs_of_other_sources(paths, "new")
    assert sorted(removed) == ["clean_tasks/diagnoses.parquet", "clean_tasks/vitals_io.parquet",
                               "noise/record.parquet", "release_candidate/"]
    assert sorted(p.name for p in paths.clean_tasks_dir.iterdir()) == ["catalogue.json", "laboratory.parquet"]
    assert not candidate.exists()
    assert remove_outputs_of_other_sources(paths, "new") == []


def test_the_source_audit_profiles_the_demos_own_anomalies_and_names_the_reconstruction(
        tmp_path, demo_full_db):
    """The natural-noise audit: counts per table and kind with examples, a chart, and the lossy input named."""
    from assets.source.assets import source_anomalies
    from pipeline.source_audit import read_audit, read_flagged

    paths = ProjectPaths(data_dir=str(tmp_path / "data"))
    paths.data.mkdir(parents=True)
    import shutil

    shutil.copyfile(demo_full_db, paths.source_db)
    result = dg.materialize([source_anomalies], resources={"paths": paths})
    assert result.success
    (mat,) = result.asset_materializations_for_node("source_anomalies")
    meta = mat.metadata
    rows = {(r.data["table"], r.data["anomaly"]): r.data["rows"] for r in meta["flagged_per_table_and_kind"].records}
    assert rows[("chartevents", "outside_encounter")] == 2991
    assert "icu/chartevents.csv.gz" in meta["lossy_inputs"].value and "LOSSY" in meta["lossy_inputs"].value
    assert meta["dagster/row_count"].value == sum(rows.values())
    assert paths.source_flagged_rows.exists() and (paths.data / "source_anomalies.png").stat().st_size > 0
    audit = read_audit(paths.source_audit)
    flagged = read_flagged(paths.source_flagged_rows)
    assert audit.rows_flagged == sum(len(ids) for kinds in flagged.values() for ids in kinds.values())
