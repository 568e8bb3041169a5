"""The source-table contracts pass on the real demo and name what is wrong when a table is broken."""

import duckdb
import pytest

from pipeline.contracts import Severity, check_source_database


@pytest.fixture(scope="module")
def demo_results(demo_db):
    return {r.contract: r for r in check_source_database(demo_db)}


def test_the_real_demo_meets_every_critical_source_expectation(demo_results):
    assert len(demo_results) == 30  # the demo as shipped has no chartevents
    broken = [f.describe() for r in demo_results.values() for f in r.blocking_failures]
    assert broken == []


def test_results_carry_one_entry_per_expectation_with_severity(demo_results):
    patients = demo_results["source/patients"]
    assert {r.severity for r in patients.results} == {Severity.CRITICAL, Severity.WARNING}
    assert all(r.success for r in patients.results)


def _small_db(demo_db, tmp_path, *statements) -> str:
    """patients and admissions copied from the demo, then broken by ``statements``."""
    path = str(tmp_path / "small.duckdb")
    with duckdb.connect(path) as con:
        con.execute(f"ATTACH '{demo_db}' AS demo (READ_ONLY)")
        for name in ("patients", "admissions", "_robustgym_meta"):
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM demo.{name}")
        con.execute("DETACH demo")
        for sql in statements:
            con.execute(sql)
    return path


def _only(results, contract):
    (result,) = [r for r in results if r.contract == contract]
    return result


def test_small_copy_passes(demo_db, tmp_path):
    results = check_source_database(_small_db(demo_db, tmp_path))
    assert [r.contract for r in results] == ["source/patients", "source/admissions"]
    assert all(r.passed for r in results)


def test_a_missing_column_blocks_and_is_named(demo_db, tmp_path):
    db = _small_db(demo_db, tmp_path, "ALTER TABLE patients DROP COLUMN gender")
    result = _only(check_source_database(db), "source/patients")
    assert not result.passed
    missing = [f for f in result.blocking_failures if f.expectation == "expect_column_distinct_values_to_contain_set"]
    assert missing and missing[0].examples == ({"missing": "gender"},)
    # The NOT NULL check on the absent column cannot run, and says so instead of passing.
    assert any(f.column == "nulls__gender" and f.error for f in result.blocking_failures)


def test_a_mistyped_column_blocks_and_is_named(demo_db, tmp_path):
    db = _small_db(demo_db, tmp_path, "ALTER TABLE patients ALTER anchor_age TYPE VARCHAR")
    result = _only(check_source_database(db), "source/patients")
    (failure,) = result.blocking_failures
    assert failure.column == "column, type" and failure.unexpected_count == 1
    assert failure.examples == ({"column": "anchor_age", "type": "VARCHAR"},)


def test_nulls_in_a_not_null_column_block_with_their_count(demo_db, tmp_path):
    db = _small_db(demo_db, tmp_path, "UPDATE admissions SET admission_type = NULL WHERE row_id IN (3, 4)")
    result = _only(check_source_database(db), "source/admissions")
    (failure,) = result.blocking_failures
    assert failure.column == "nulls__admission_type"
    assert failure.examples == ({"table": "admissions", "nulls__admission_type": 2},)


def test_a_repeated_or_negative_row_id_blocks(demo_db, tmp_path):
    db = _small_db(demo_db, tmp_path, "UPDATE patients SET row_id = 0 WHERE row_id = 1",
                   "UPDATE admissions SET row_id = -5 WHERE row_id = 7")
    results = check_source_database(db)
    assert [f.column for f in _only(results, "source/patients").blocking_failures] == ["row_id_duplicates"]
    assert [f.column for f in _only(results, "source/admissions").blocking_failures] == ["row_id_min"]


def test_a_repeated_natural_key_is_a_warning_that_does_not_block(demo_db, tmp_path):
    db = _small_db(demo_db, tmp_path,
                   "INSERT INTO patients SELECT 100000 + row_id, * EXCLUDE (row_id) FROM patients WHERE row_id < 3")
    result = _only(check_source_database(db), "source/patients")
    assert result.passed
    (warning,) = result.failures
    assert warning.severity is Severity.WARNING and warning.column == "key_duplicates"
    assert warning.examples[0]["key_duplicates"] == 3


def test_results_with_failures_are_those_of_a_run_without_the_expectation_memo(demo_db, tmp_path, monkeypatch):
    from contextlib import nullcontext

    from pipeline.contracts import runner

    db = _small_db(demo_db, tmp_path, "ALTER TABLE patients DROP COLUMN gender",
                   "UPDATE admissions SET admission_type = NULL WHERE row_id IN (3, 4)",
                   "INSERT INTO admissions SELECT 100000 + row_id, * EXCLUDE (row_id) FROM admissions WHERE row_id < 3")
    memoized = check_source_database(db)
    assert {f.column for r in memoized for f in r.failures} >= {"nulls__admission_type", "key_duplicates"}
    monkeypatch.setattr(runner, "configurations_built_once", nullcontext)
    assert check_source_database(db) == memoized


def test_checked_table_by_table_beside_the_load_the_results_are_those_of_the_loaded_database(
        demo_dir, demo_chartevents_dir, tmp_path):
    from pipeline.contracts.source_check import TableByTableCheck
    from pipeline.loader import load_mimic

    db = tmp_path / "demo.duckdb"
    with TableByTableCheck() as beside:
        load_mimic([demo_dir, demo_chartevents_dir], db, on_table_loaded=beside.loaded)
    results = beside.results()
    assert len(results) == 31
    # The chartevents reconstruction repeats natural keys: a warning, found beside the load too.
    assert [f.column for r in results for f in r.failures] == ["key_duplicates"]
    assert results == check_source_database(db)


def test_a_failed_load_leaves_no_check_running():
    import threading

    from pipeline.contracts.source_check import TableByTableCheck

    with pytest.raises(RuntimeError, match="the load failed"):
        with TableByTableCheck():
            raise RuntimeError("the load failed")
    assert "source-contract" not in {t.name for t in threading.enumerate()}
