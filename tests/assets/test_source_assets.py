"""The source asset materializes a real database and reports what it holds."""

import dagster as dg
import duckdb

from assets.resources import ProjectPaths
from assets.source.assets import source_database
from pipeline.source_db import row_counts


def test_materializing_the_demo_source_records_counts_kind_and_fingerprint(tmp_path, demo_dir, demo_chartevents_dir):
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
    assert meta["tables"].value == 31
    assert len(meta["fingerprint"].value) == 64
    with duckdb.connect(str(tmp_path / "data" / "source.duckdb"), read_only=True) as con:
        counts = row_counts(con)
    assert counts["patients"] == 100 and counts["chartevents"] == 668_862
    assert meta["total_rows"].value == sum(counts.values())
    assert "| labevents | 107,727 |" in meta["row_counts"].value


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
