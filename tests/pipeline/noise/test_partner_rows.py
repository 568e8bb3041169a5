"""Rows patched in Python are the rows SQL reads under the patch's views, for every patch the builder
makes: a scope's partner rows (a patch that can change who is whose partner is read by SQL), and rows
by id (any patch)."""

import duckdb

from pipeline.noise.partner_rows import PartnerRows, SourceRows, partner_rows_sql
from pipeline.patching import patched
from pipeline.schema import ROW_ID, TABLES_BY_NAME
from pipeline.task_model import AddedRow, ColumnValue, Patch, RowRef, ValueChange
from pipeline.vocabulary import NoiseLevel


def _by_sql(con, table_name: str, ids: list[int]) -> list[dict]:
    cur = con.execute(partner_rows_sql(table_name, ids))
    cols = [d[0] for d in cur.description]
    return sorted((dict(zip(cols, r)) for r in cur.fetchall()), key=lambda r: r[ROW_ID])


def _scopes(twin) -> dict[str, list[int]]:
    """The twin's evidence rows per event table it patches, and the same with the rows it adds."""
    out = {}
    for table_name in sorted(twin.patch.tables):
        if TABLES_BY_NAME[table_name].dictionary:
            continue
        ids = sorted({int(r.row_id) for r in twin.evidence if r.table == table_name})
        added = sorted(a.row_id for a in twin.patch.add if a.table == table_name)
        if ids:
            out[(table_name, "evidence")] = ids
        if added:
            out[(table_name, "evidence and added")] = ids + added
    return out


def test_partner_rows_patched_in_python_are_those_sql_reads_under_every_built_patch(built):
    db, _, result = built
    twins = [t for t in result.twins if t.noise_level is not NoiseLevel.QUERY and not t.patch.is_empty]
    con = duckdb.connect(str(db), read_only=True)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    partners = PartnerRows(con.cursor())
    compared, with_added = 0, 0
    for twin in twins:
        for (table_name, what), ids in _scopes(twin).items():
            before = partners.patched_in_python
            with patched(con, twin.patch, catalog):
                assert partners.rows(con, table_name, ids, twin.patch) == _by_sql(con, table_name, ids), \
                    (twin.task_id, table_name, what)
            compared += 1
            with_added += partners.patched_in_python > before and what == "evidence and added"
    assert compared >= 50, compared
    assert partners.patched_in_python >= 0.8 * compared, (partners.patched_in_python, compared)
    assert with_added >= 5, with_added  # duplicates added to the scope are placed in Python too
    assert partners.read_by_sql >= 1  # some patches rewrite a link or key, and only SQL can tell


def test_a_patch_rewriting_a_key_or_adding_a_row_unlike_the_scope_is_read_by_sql(demo_full_db):
    con = duckdb.connect(str(demo_full_db), read_only=True)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    (subject,), = con.execute("SELECT subject_id FROM labevents GROUP BY 1 ORDER BY count(*) DESC LIMIT 1").fetchall()
    ids = [r[0] for r in con.execute(f"SELECT row_id FROM labevents WHERE subject_id = {subject} "
                                     f"ORDER BY row_id LIMIT 3").fetchall()]
    # Two chart events sharing their natural key: each is the other's partner.
    twin_a, twin_b = con.execute("SELECT min(row_id), max(row_id) FROM chartevents GROUP BY stay_id, charttime, "
                                 "itemid HAVING count(*) = 2 ORDER BY 1 LIMIT 1").fetchone()
    partners = PartnerRows(con.cursor())
    copy = con.execute(f"SELECT * FROM labevents WHERE row_id = {ids[0]}").fetchone()
    cols = [c.name for c in TABLES_BY_NAME["labevents"].columns]
    unlike = {**dict(zip([d[0] for d in con.description], copy)), "itemid": 1, "charttime": "2000-01-01 00:00:00"}
    cases = {
        "a rewritten time (part of the conflict key)": (
            "labevents", ids, Patch(update=(ValueChange("labevents", ids[0], "charttime", "2000-01-01 00:00:00"),)),
            False),
        "an added row unlike every scope row, in scope": (
            "labevents", ids + [-1],
            Patch(add=(AddedRow("labevents", -1, tuple(ColumnValue(c, None if unlike[c] is None else str(unlike[c]))
                                                         for c in cols)),)), False),
        "a rewritten value and a hidden scope row": (
            "labevents", ids, Patch(update=(ValueChange("labevents", ids[1], "valuenum", "12.5"),),
                                    hide=(RowRef("labevents", ids[2]),)), True),
        "a hidden partner": ("chartevents", [twin_a], Patch(hide=(RowRef("chartevents", twin_b),)), True),
    }
    found = {}
    for what, (table_name, scope, patch, in_python) in cases.items():
        before = partners.patched_in_python
        with patched(con, patch, catalog):
            found[what] = partners.rows(con, table_name, scope, patch)
            assert found[what] == _by_sql(con, table_name, scope), what
        assert (partners.patched_in_python > before) is in_python, what
    rows = found["a rewritten value and a hidden scope row"]
    assert ids[2] not in {r[ROW_ID] for r in rows}
    assert next(r for r in rows if r[ROW_ID] == ids[1])["valuenum"] == 12.5
    assert twin_b in {r[ROW_ID] for r in partners.rows(con, "chartevents", [twin_a], Patch())}
    assert [r[ROW_ID] for r in found["a hidden partner"]] == [twin_a]


def test_rows_by_id_patched_in_python_are_those_sql_reads_under_every_built_patch(built):
    """Hidden, rewritten, added and untouched rows, of every table a twin patches, asked twice (the
    second time from what was kept)."""
    db, _, result = built
    twins = [t for t in result.twins if t.noise_level is not NoiseLevel.QUERY and not t.patch.is_empty]
    con = duckdb.connect(str(db), read_only=True)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    rows = SourceRows(con.cursor())
    seen = {"hidden": 0, "rewritten": 0, "added": 0}
    for twin in twins:
        patch = twin.patch
        for table_name in sorted(patch.tables):
            ids = {r.row_id for r in patch.hide if r.table == table_name} \
                | {u.row_id for u in patch.update if u.table == table_name} \
                | {a.row_id for a in patch.add if a.table == table_name} \
                | {int(r.row_id) for r in twin.evidence if r.table == table_name}
            listed = ", ".join(map(str, sorted(ids)))
            with patched(con, patch, catalog):
                cur = con.execute(f'SELECT * FROM "{table_name}" WHERE row_id IN ({listed})')
                cols = [d[0] for d in cur.description]
                by_sql = sorted((dict(zip(cols, r)) for r in cur.fetchall()), key=lambda r: r[ROW_ID])
            for _ in range(2):
                assert rows.rows(table_name, ids, patch) == by_sql, (twin.task_id, table_name)
            seen["hidden"] += any(r.table == table_name for r in patch.hide)
            seen["rewritten"] += any(u.table == table_name for u in patch.update)
            seen["added"] += any(a.table == table_name for a in patch.add)
    assert min(seen.values()) >= 5, seen
