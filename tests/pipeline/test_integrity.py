"""pipeline.integrity on an open connection: each kind of finding on tables built for it, and the
synthetic generator's output holding none."""

import duckdb
import pytest

from pipeline.integrity import FindingKind, IntegrityReport, check_integrity, read_integrity, write_integrity
from pipeline.schema import TABLES, TABLES_BY_NAME, create_table_sql
from pipeline.source_db import SourceInfo, write_source_info


def tables(con: duckdb.DuckDBPyConnection, rows: dict[str, list[dict]]) -> None:
    """Create the named MIMIC-IV tables and insert rows (row_id = position; unnamed columns NULL)."""
    for name, values in rows.items():
        t = TABLES_BY_NAME[name]
        con.execute(create_table_sql(t))
        for i, row in enumerate(values):
            full = {c.name: row.get(c.name) for c in t.columns}
            for c in t.columns:  # NOT NULL columns the test does not care about
                if full[c.name] is None and not c.nullable:
                    full[c.name] = {"INTEGER": 0, "SMALLINT": 0, "DOUBLE": 0.0}.get(c.type, "x") \
                        if "TIME" not in c.type and c.type != "DATE" else "2100-01-01"
            con.execute(f'INSERT INTO "{name}" VALUES (?, {", ".join("?" for _ in t.columns)})',
                        [i, *full.values()])


@pytest.fixture()
def con():
    with duckdb.connect() as con:
        yield con


def test_an_icu_stay_pointing_to_another_patients_admission_is_a_link_mismatch(con):
    tables(con, {
        "patients": [{"subject_id": 1}, {"subject_id": 2}],
        "admissions": [{"subject_id": 1, "hadm_id": 10}, {"subject_id": 2, "hadm_id": 20}],
        "icustays": [{"subject_id": 1, "hadm_id": 10, "stay_id": 100}, {"subject_id": 1, "hadm_id": 20, "stay_id": 200}],
    })
    (finding,) = check_integrity(con).findings
    assert (finding.table, finding.column, finding.kind, finding.count) == (
        "icustays", "hadm_id", FindingKind.LINK_MISMATCH, 1)
    assert finding.examples == ({"row_id": 1, "hadm_id": 20, "subject_id": 1, "admissions.subject_id": 2},)
    assert "subject_id differs" in finding.describe()


def test_a_composite_reference_needs_both_columns_to_match_and_null_names_nothing(con):
    tables(con, {
        "patients": [{"subject_id": 1}],
        "admissions": [{"subject_id": 1, "hadm_id": 10}],
        "d_icd_diagnoses": [{"icd_code": "I10", "icd_version": 10}, {"icd_code": "4019", "icd_version": 9}],
        "diagnoses_icd": [
            {"subject_id": 1, "hadm_id": 10, "seq_num": 1, "icd_code": "I10", "icd_version": 10},
            {"subject_id": 1, "hadm_id": 10, "seq_num": 2, "icd_code": "I10", "icd_version": 9},  # wrong version
            {"subject_id": 1, "hadm_id": 10, "seq_num": 3, "icd_code": None, "icd_version": None},
        ],
    })
    (finding,) = check_integrity(con).findings
    assert (finding.table, finding.columns, finding.kind, finding.count, finding.distinct) == (
        "diagnoses_icd", ("icd_code", "icd_version"), FindingKind.DANGLING_LINK, 1, 1)
    assert finding.target == "d_icd_diagnoses(icd_code, icd_version)"
    assert finding.examples == ({"row_id": 1, "icd_code": "I10", "icd_version": 9},)


def test_item_ids_unknown_to_the_dictionary_are_dangling_and_counted_by_value(con):
    tables(con, {
        "patients": [{"subject_id": 1}],
        "admissions": [{"subject_id": 1, "hadm_id": 10}],
        "d_labitems": [{"itemid": 50971}],
        "labevents": [{"labevent_id": i, "subject_id": 1, "hadm_id": 10, "itemid": item}
                      for i, item in enumerate([50971, 1, 1, 2])],
    })
    (finding,) = [f for f in check_integrity(con).findings if f.column == "itemid"]
    assert (finding.count, finding.distinct, finding.target) == (3, 2, "d_labitems(itemid)")
    assert [e["row_id"] for e in finding.examples] == [1, 2, 3]


def test_a_reference_to_an_absent_table_is_skipped_and_said_so(con):
    tables(con, {"patients": [{"subject_id": 1}], "admissions": [{"subject_id": 1, "hadm_id": 10}]})
    report = check_integrity(con)
    assert not report.findings
    assert {"table": "admissions", "column": "admit_provider_id", "target": "provider(provider_id)",
            "reason": "provider is not loaded"} in report.skipped
    assert report.checked == 3  # two keys and admissions.subject_id


def test_duplicate_keys_count_rows_beyond_the_first_and_list_their_row_ids(con):
    tables(con, {"patients": [{"subject_id": s} for s in (1, 2, 2, 3, 3, 3)]})
    (finding,) = check_integrity(con).findings
    assert (finding.count, finding.distinct) == (3, 2)
    assert finding.examples == ({"subject_id": 2, "rows": 2, "row_ids": [1, 2]},
                                {"subject_id": 3, "rows": 3, "row_ids": [3, 4, 5]})


def test_the_report_round_trips_through_the_source_metadata(con):
    tables(con, {"patients": [{"subject_id": 1}, {"subject_id": 1}],
                 "admissions": [{"subject_id": 9, "hadm_id": 10}]})
    report = check_integrity(con)
    write_source_info(con, SourceInfo("mimic_iv", "f" * 64, {}))
    assert read_integrity(con) is None
    write_integrity(con, report)
    assert read_integrity(con) == report
    assert IntegrityReport.from_json(report.to_json()) == report
    assert {k.value for k in FindingKind} >= {f["kind"] for f in report.to_json()["findings"]}


def test_the_synthetic_generator_writes_a_database_without_findings(synthetic_db):
    with duckdb.connect(str(synthetic_db), read_only=True) as con:
        report = check_integrity(con)
    assert report.findings == () and report.skipped == ()
    assert report.checked == sum(bool(t.key) + len(t.all_references) for t in TABLES)


def test_every_declared_reference_names_columns_that_exist():
    for t in TABLES:
        for r in t.all_references:
            target = TABLES_BY_NAME[r.table]
            assert len(r.columns) == len(r.target_columns), f"{t.name}: {r}"
            for c in r.columns:
                t.column(c)
            for c in r.target_columns:
                target.column(c)
            assert set(r.target_columns) == set(target.key), f"{t.name}: {r} must name the target's natural key"
