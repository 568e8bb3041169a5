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


def test_partners_of_scopes_within_the_expected_evidence_are_those_each_scopes_sql_reads(built):
    """The builder names the clean tasks' evidence before any twin is read: the partners of all of it
    are read together once per table, and each scope within it (a task's evidence, the same less a
    hidden row, two tasks' evidence together) gets the rows its own query reads, NULL keys included."""
    from pipeline.noise.build import _rows_by_table
    from pipeline.noise.case import read_evidence
    from pipeline.noise.partner_rows import partner_keys

    db, clean, result = built
    con = duckdb.connect(str(db), read_only=True)
    evidence = read_evidence(con, clean)
    partners = PartnerRows(con.cursor())
    partners.expect({name: {r[ROW_ID] for r in rows} for name, rows in _rows_by_table(evidence.values()).items()})
    scopes = []
    for task_id in sorted({t.clean_task_id for t in result.twins})[:150]:
        for name, rows in evidence[task_id].items():
            ids = [r[ROW_ID] for r in rows]
            scopes += [(name, ids), (name, ids[1:])]
    by_table: dict = {}
    for name, ids in scopes:
        by_table.setdefault(name, []).append(ids)
    scopes += [(name, sorted(set(a) | set(b))) for name, lists in by_table.items() for a, b in zip(lists, lists[2:])]
    compared = with_null_key = 0
    for name, ids in scopes:
        if not ids or "subject_id" not in TABLES_BY_NAME[name].column_names:
            continue
        found = sorted(partners._unpatched(name, tuple(ids)), key=lambda r: r[ROW_ID])
        expected = _by_sql(con, name, ids)
        assert found == expected, (name, ids[:5])
        compared += 1
        with_null_key += any(r[c] is None for r in expected for key in partner_keys(name) for c in key)
    assert partners._read_together, "no scope was read from the partners read together"
    nulls_in_source = any(r[c] is None for rows in evidence.values() for name, table_rows in rows.items()
                          if "subject_id" in TABLES_BY_NAME[name].column_names
                          for r in table_rows for key in partner_keys(name) for c in key)
    assert compared >= 100, compared
    assert with_null_key >= 10 or not nulls_in_source, with_null_key  # the demo has them (labs outside a stay)


def test_partners_read_together_match_null_keys_as_sql_does(demo_full_db):
    """A NULL in a key of one column matches nothing; a NULL within a key of several columns matches a
    NULL there (DuckDB compares rows so). Orders without an id and copies without an admission, made in
    a scratch copy of a patient's procedure events, found together as each scope's query finds them."""
    from pipeline.noise.partner_rows import partner_keys

    assert ("orderid",) in partner_keys("procedureevents")
    con = duckdb.connect()
    con.execute(f"ATTACH '{demo_full_db}' AS demo (READ_ONLY)")
    (subject,), = con.execute("SELECT subject_id FROM demo.procedureevents GROUP BY 1 HAVING count(*) >= 6 "
                              "ORDER BY 1 LIMIT 1").fetchall()
    con.execute(f"CREATE TABLE procedureevents AS SELECT * FROM demo.procedureevents WHERE subject_id = {subject}")
    ids = [r for (r,) in con.execute("SELECT row_id FROM procedureevents ORDER BY row_id LIMIT 6").fetchall()]
    con.execute(f"UPDATE procedureevents SET orderid = NULL WHERE row_id IN ({ids[0]}, {ids[1]})")
    con.execute(f"UPDATE procedureevents SET hadm_id = NULL WHERE row_id = {ids[2]}")
    con.execute(f"INSERT INTO procedureevents SELECT * REPLACE (-row_id AS row_id) FROM procedureevents "
                f"WHERE row_id IN ({ids[0]}, {ids[2]})")  # a copy of each, NULLs and all
    partners = PartnerRows(con.cursor())
    partners.expect({"procedureevents": set(ids)})
    for scope in ([ids[0]], [ids[1]], [ids[2]], ids[:3], ids):
        found = sorted(partners._unpatched("procedureevents", tuple(scope)), key=lambda r: r[ROW_ID])
        assert found == _by_sql(con, "procedureevents", scope), scope
    by_id = {r[ROW_ID] for r in partners._unpatched("procedureevents", (ids[2],))}
    assert -ids[2] in by_id  # the copy shares the NULL admission: a partner
    assert partners._read_together


def test_text_cast_in_python_is_the_value_duckdbs_cast_gives():
    """Plain numbers and text are typed in Python, anything else by DuckDB: the same values either way,
    and a text Python would read differently (rounding, a sign, a huge exponent) is left to DuckDB."""
    from pipeline.noise.partner_rows import Casts, _plain_cast

    texts = ["0", "-0", "7", "-12", "32767", "32768", "-32768", "2147483647", "2147483648", "0.1", "1.5e3",
             "2.5E-7", "-0.000001", "123456789012345678901234567890", "1e308", "1e309", "+5", " 5", "5.",
             ".5", "1_000", "nan", "inf", "12.50", "4.35", "98.6", "mg/dL", "", "2180-07-23 14:15:00"]
    types = ["DOUBLE", "INTEGER", "SMALLINT", "VARCHAR", "REAL", "TIMESTAMP", "DATE"]
    con = duckdb.connect()
    in_python = 0
    for type_ in types:
        for text in texts:
            try:
                (expected,), = con.execute(f"SELECT CAST($1 AS {type_})", [text]).fetchall()
            except duckdb.Error:
                expected = "error"
            plain = _plain_cast(text, type_)
            if plain is not None:
                in_python += 1
                assert plain == expected and type(plain) is type(expected), (text, type_, plain, expected)
            got = Casts(con).one(text, type_) if expected != "error" else "error"
            assert got == expected or (got != got and expected != expected), (text, type_)
    assert in_python >= 40, in_python
