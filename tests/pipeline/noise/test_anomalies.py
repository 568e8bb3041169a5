"""The anomaly predicates are one definition in two forms: SQL over whole tables (the source audit)
and Python over fetched rows (labelling thousands of twins). Both must flag exactly the same rows;
and the audit must find what the sources really carry."""

import duckdb
import pytest

from pipeline.noise.anomalies import AnomalyKind, RowChecker, anomalies_sql
from pipeline.schema import ROW_ID, TABLES_BY_NAME
from pipeline.source_audit import audit_source

PATIENTS_SAMPLED = 12


@pytest.fixture(scope="module", params=["demo_full_db", "synthetic_db"])
def source(request):
    with duckdb.connect(str(request.getfixturevalue(request.param)), read_only=True) as con:
        yield con


def _tables(con):
    return sorted(r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()
        if r[0] in TABLES_BY_NAME and not TABLES_BY_NAME[r[0]].dictionary)


def test_the_python_predicates_flag_exactly_the_rows_the_sql_flags(source):
    checker = RowChecker(source)
    for table in _tables(source):
        sql = anomalies_sql(table)
        if sql is None:
            continue
        cols = TABLES_BY_NAME[table].column_names
        # Whole patients (a duplicate's partner is the same patient's row), a dozen of them.
        where = (f"subject_id IN (SELECT DISTINCT subject_id FROM \"{table}\" ORDER BY 1 LIMIT {PATIENTS_SAMPLED}) "
                 f"OR row_id IN (SELECT row_id FROM ({sql}) LIMIT 50)") if "subject_id" in cols else "TRUE"
        if "subject_id" in cols:  # the flagged rows' patients too, so every kind that occurs is compared
            where = (f"subject_id IN (SELECT DISTINCT subject_id FROM \"{table}\" WHERE row_id IN "
                     f"(SELECT row_id FROM ({sql}) LIMIT 50)) OR " + where)
        cur = source.execute(f'SELECT * FROM "{table}" WHERE {where}')
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
        ids = {r[ROW_ID] for r in rows}
        by_python = {(k.value, rid) for k, rid, _ in checker.anomalies(table, rows, ids)}
        by_sql = {(k, rid) for k, rid, _ in source.execute(f"SELECT kind, row_id, detail FROM ({sql})").fetchall()
                  if rid in ids}
        assert by_python == by_sql, (table, sorted(by_python ^ by_sql)[:5])


def test_the_demo_reconstruction_is_named_and_its_anomalies_found(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        audit, flagged = audit_source(con)
    assert [i.path for i in audit.lossy_inputs] == ["icu/chartevents.csv.gz"]
    kinds = {(c.table, c.kind): c.rows for c in audit.counts}
    # What the reconstruction's README says it did: rows outside every stay got the nearest stay.
    assert kinds[("chartevents", AnomalyKind.OUTSIDE_ENCOUNTER.value)] == 2991
    assert kinds[("chartevents", AnomalyKind.KEY_DUPLICATE.value)] > 0
    assert flagged["chartevents"][AnomalyKind.OUTSIDE_ENCOUNTER]
    for c in audit.counts:
        assert c.examples and c.rows >= len(c.examples)


def test_the_official_demo_alone_names_no_lossy_input(demo_db):
    with duckdb.connect(str(demo_db), read_only=True) as con:
        audit, _ = audit_source(con)
    assert audit.lossy_inputs == []


def test_every_declared_items_unit_is_the_unit_the_demo_records_it_in(demo_full_db):
    """Limits are in the declared unit and are applied to rows in the item's usual unit: they must agree."""
    from pipeline.noise.anomalies import all_usual_units_sql
    from pipeline.noise.physiology import MEASURED_ITEMS

    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        usual = {(t, i): u for t, i, u, _ in con.execute(all_usual_units_sql()).fetchall()}
    compared = 0
    for m in MEASURED_ITEMS:
        for key in m.items:
            if key in usual:
                compared += 1
                assert (m.unit or "").casefold() == usual[key].casefold(), (m.name, key, m.unit, usual[key])
    assert compared > 30
