"""What the injectors look up on the source, asked for many rows at once, is what it is row by row."""

from datetime import timedelta

import duckdb

from pipeline.noise.case import SourceLookup
from pipeline.noise.row_roles import ROW_ROLES, copies_of


def _sample_rows(con, name: str, seed: int) -> list[dict]:
    cur = con.execute(f'SELECT * FROM "{name}" USING SAMPLE 300 ROWS (reservoir, {seed}) ORDER BY row_id')
    columns = [d[0] for d in cur.description]
    return [dict(zip(columns, r)) for r in cur.fetchall()]


def test_the_rows_recorded_a_second_time_read_together_are_those_found_one_row_at_a_time(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        lookup = SourceLookup(con)
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        compared = {}
        for name, roles in sorted(ROW_ROLES.items()):
            if not roles.recorded_also_in or not lookup.has_table(name):
                continue
            rows = _sample_rows(con, name, 7)
            for about in (None, *roles.facts[:2]):
                together = lookup.rows_recorded_also(name, rows, about=about)
                # Row by row, with the queries that count a row's copies (what the label check asks).
                one_by_one = {r["row_id"] for r in rows if any(
                    con.execute(sql, params).fetchone()[0] for sql, params in copies_of(name, [r], tables, about))}
                assert together == one_by_one, (name, about)
                compared[name] = compared.get(name, 0) + len(one_by_one)
        # Tables with copies in the demo, and copies found in them.
        assert {"labevents", "prescriptions", "icustays", "procedureevents"} <= set(compared), compared
        assert all(compared[t] for t in ("labevents", "prescriptions", "icustays")), compared


def test_rows_expected_ahead_are_looked_up_together_and_others_as_before(demo_full_db):
    """The evidence rows of the tasks at hand (``expect_rows``) are read in one query per copying table;
    their lookups ask nothing more and find what a lookup of their own finds. Rows outside them (a
    row less the columns a twin rewrites) are still looked up on their own."""
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        expected = {name: _sample_rows(con, name, 11) for name, roles in sorted(ROW_ROLES.items())
                    if roles.recorded_also_in and SourceLookup(con).has_table(name)}
        ahead, alone = SourceLookup(con), SourceLookup(con)
        ahead.expect_rows(expected)
        found = 0
        for name, rows in expected.items():
            for about in (None, *ROW_ROLES[name].facts[:2]):
                for part in (rows, rows[:5], rows[-1:]):
                    got = ahead.rows_recorded_also(name, part, about=about)
                    assert got == alone.rows_recorded_also(name, part, about=about), (name, about)
                    found += len(got)
        assert found, "no expected row has a copy in the demo: nothing was compared"
        assert not [k for k in ahead._cache if k[0] == "copied keys"], "an expected row was looked up on its own"
        # Rows that are not among them as the source has them (a time moved, a time left out): their
        # own lookup, the same answer.
        name = "labevents"
        rows = expected[name][:20]
        other = [{**r, "charttime": r["charttime"] + timedelta(minutes=1)} for r in rows] + \
            [{c: v for c, v in r.items() if c != "charttime"} for r in rows] + rows
        assert ahead.rows_recorded_also(name, other) == alone.rows_recorded_also(name, other)
        assert [k for k in ahead._cache if k[0] == "copied keys"]


def test_rows_expected_anew_are_read_together_anew(demo_full_db):
    """A second ``expect_rows`` (another level's tasks on the same lookup) forgets what was read for the
    first rows: the new rows are read together too, and found as a lookup of their own finds them."""
    from pipeline.noise.given_in_emar import given_in_emar

    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        first = {name: _sample_rows(con, name, 11) for name in ("labevents", "inputevents")}
        then = {name: _sample_rows(con, name, 13) for name in ("labevents", "inputevents")}
        lookup, alone = SourceLookup(con), SourceLookup(con)
        lookup.expect_rows(first)
        for name, rows in first.items():
            lookup.rows_recorded_also(name, rows)
        given_in_emar(lookup, "inputevents", first["inputevents"])
        lookup.expect_rows(then)
        assert lookup.rows_recorded_also("labevents", then["labevents"]) == \
            alone.rows_recorded_also("labevents", then["labevents"])
        given = given_in_emar(lookup, "inputevents", then["inputevents"])
        assert given == given_in_emar(alone, "inputevents", then["inputevents"]) and given
        assert not [k for k in lookup._cache if k[0] in ("copied keys", "given in emar")], \
            "a row expected anew was looked up on its own"
