"""What the injectors look up on the source, asked for many rows at once, is what it is row by row."""

import duckdb

from pipeline.noise.case import SourceLookup
from pipeline.noise.row_roles import ROW_ROLES, copies_of


def test_the_rows_recorded_a_second_time_read_together_are_those_found_one_row_at_a_time(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        lookup = SourceLookup(con)
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        compared = {}
        for name, roles in sorted(ROW_ROLES.items()):
            if not roles.recorded_also_in or not lookup.has_table(name):
                continue
            cur = con.execute(f'SELECT * FROM "{name}" USING SAMPLE 300 ROWS (reservoir, 7) ORDER BY row_id')
            columns = [d[0] for d in cur.description]
            rows = [dict(zip(columns, r)) for r in cur.fetchall()]
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
