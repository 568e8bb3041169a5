"""Event tables are stored clustered by subject_id (and itemid), while row_id stays the source position;
dictionary titles that questions name things by are indexed."""

import csv
import gzip

import duckdb

from pipeline.source_db import LOOKUP_INDEXES, storage_order


def _physical(db, table: str, columns: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"SELECT {columns} FROM {table}").fetchall()  # no ORDER BY: storage order


def test_loaded_labevents_are_stored_by_subject_then_item_with_row_id_the_file_line(demo_db, demo_dir):
    stored = _physical(demo_db, "labevents", "subject_id, itemid, row_id, labevent_id")
    assert stored == sorted(stored, key=lambda r: (r[0], r[1], r[2]))
    assert [r[2] for r in stored] != sorted(r[2] for r in stored), "the demo file is not already in this order"
    with gzip.open(demo_dir / "hosp" / "labevents.csv.gz", "rt", newline="") as f:
        file_ids = [int(row["labevent_id"]) for row in csv.DictReader(f)]
    assert {r[2]: r[3] for r in stored} == dict(enumerate(file_ids))


def test_synthetic_event_tables_are_stored_by_subject(synthetic_db):
    for table in ("chartevents", "labevents", "admissions"):
        keys = _physical(synthetic_db, table, "subject_id")
        assert keys == sorted(keys), table


def test_each_table_is_ordered_by_the_keys_it_has_and_tables_with_none_keep_source_order():
    assert storage_order(["row_id", "itemid", "label"]) == '"itemid", "row_id"'
    assert storage_order(["row_id", "caregiver_id"]) is None


def _plan(db, sql: str) -> str:
    """The plan as run: DuckDB picks an index scan when it executes, not when it explains."""
    with duckdb.connect(str(db), read_only=True) as con:
        return "\n".join(r[1] for r in con.execute(f"EXPLAIN ANALYZE {sql}").fetchall())


def test_loaded_and_synthetic_dictionaries_answer_a_title_lookup_from_an_index(demo_db, synthetic_db):
    for db in (demo_db, synthetic_db):
        with duckdb.connect(str(db), read_only=True) as con:
            indexed = {(t, sql.split("(")[-1].strip(' ");')) for t, sql in con.execute(
                "SELECT table_name, sql FROM duckdb_indexes()").fetchall()}
            (title,), = con.execute("SELECT long_title FROM d_icd_diagnoses ORDER BY row_id LIMIT 1").fetchall()
        assert indexed == set(LOOKUP_INDEXES), db
        quoted = title.replace("'", "''")
        assert "Index Scan" in _plan(db, f"SELECT icd_code FROM d_icd_diagnoses WHERE long_title = '{quoted}'")
