"""Apply a twin's patch on top of the shared source database, in O(patch) time.

A patch never copies or rewrites a table. For each table it touches, a view with the table's own
name is laid over the source table: hidden rows are filtered out by ``row_id``, changed values are
swapped in with a ``CASE`` on ``row_id``, added rows are appended from a ``VALUES`` list. Queries
written against the unqualified MIMIC-IV names (gold SQL, an agent's SQL) then see the noisy state.
Building the views costs time proportional to the patch, not to the tables.

One statement can carry its patch instead (``patched_statement``): the same SELECTs as common table
expressions named like the tables, which shadow them for that statement alone. Laying and dropping
views costs about 1.3 ms a patch, a millisecond query's worth, so a proof that asks one question of
a patched database asks it this way.
"""

import re
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import duckdb

from pipeline.schema import ROW_ID, Table, table
from pipeline.task_model import AddedRow, Patch


def _literal(value: str | None, type_: str) -> str:
    if value is None:
        return f"CAST(NULL AS {type_})"
    return "CAST('" + value.replace("'", "''") + f"' AS {type_})"


def patched_select(t: Table, patch: Patch, source: str) -> str:
    """A SELECT giving ``t`` as the patch leaves it, reading the unpatched rows from ``source``."""
    hidden = sorted({r.row_id for r in patch.hide if r.table == t.name})
    changes: dict[str, list[tuple[int, str | None]]] = defaultdict(list)
    for ch in patch.update:
        if ch.table == t.name:
            t.column(ch.column)  # raises with the table and column named
            changes[ch.column].append((ch.row_id, ch.value))
    replaced = []
    for col, pairs in sorted(changes.items()):
        type_ = t.column(col).type
        whens = " ".join(f"WHEN {rid} THEN {_literal(v, type_)}" for rid, v in sorted(pairs))
        replaced.append(f'CASE {ROW_ID} {whens} ELSE "{col}" END AS "{col}"')
    select = f"SELECT * REPLACE ({', '.join(replaced)})" if replaced else "SELECT *"
    sql = f"{select} FROM {source}"
    if hidden:
        sql += f" WHERE {ROW_ID} NOT IN ({', '.join(map(str, hidden))})"
    for row in patch.add:
        if row.table == t.name:
            sql += " UNION ALL SELECT " + ", ".join(added_row_columns(t, row))
    return sql


def added_row_columns(t: Table, row: AddedRow) -> list[str]:
    """The select list of one added row of ``t``: its ``row_id``, then every column cast to its type."""
    given = {cv.column: cv.value for cv in row.values}
    unknown = set(given) - set(t.column_names)
    if unknown:
        raise ValueError(f"patch adds a row to {t.name!r} with unknown columns {sorted(unknown)}")
    return [f"CAST({row.row_id} AS BIGINT) AS {ROW_ID}"] + [
        f'{_literal(given.get(c.name), c.type)} AS "{c.name}"' for c in t.columns
    ]


@contextmanager
def patched(con: duckdb.DuckDBPyConnection, patch: Patch, catalog: str | None = None) -> Iterator[None]:
    """Within the block, unqualified table names on ``con`` see the patched database.

    Temporary views shadow the source tables (read from ``catalog``, by default the connection's
    own database) and are dropped on exit, which restores the clean state exactly.
    """
    catalog = catalog or con.execute("SELECT current_database()").fetchone()[0]
    try:
        _lay(con, patch, catalog)
        yield
    finally:
        _drop(con, patch)


def _lay(con: duckdb.DuckDBPyConnection, patch: Patch, catalog: str) -> None:
    for name in sorted(patch.tables):
        sql = patched_select(table(name), patch, _source_table(catalog, name))
        con.execute(f'CREATE OR REPLACE TEMP VIEW "{name}" AS {sql}')


def _drop(con: duckdb.DuckDBPyConnection, patch: Patch) -> None:
    for name in sorted(patch.tables):
        con.execute(f'DROP VIEW IF EXISTS temp.main."{name}"')


class PatchedOnDemand:
    """``con`` as ``patch`` leaves it, for a reader that asks a few statements (often none).

    A query (``SELECT`` or ``WITH``) carries the patch in the statement (``patched_statement``); the
    views of ``patched`` are laid only for any other statement (a ``CREATE TABLE ... AS``), and from
    then on every statement reads through them. Laying and dropping the views costs about a
    millisecond, as much as the statements most readers ask. Use it where the connection would be,
    inside ``patched_on_demand``."""

    def __init__(self, con: duckdb.DuckDBPyConnection, patch: Patch, catalog: str):
        self._con, self._patch, self._catalog = con, patch, catalog
        self.laid = False
        self.statements = 0  # run under the patch, either way

    def execute(self, sql: str, *args, **kwargs) -> duckdb.DuckDBPyConnection:
        self.statements += 1
        if not self.laid:
            if _QUERY.match(sql):
                return self._con.execute(patched_statement(sql, self._patch, self._catalog), *args, **kwargs)
            self.laid = True  # set first: a failed laying is still dropped on close
            _lay(self._con, self._patch, self._catalog)
        return self._con.execute(sql, *args, **kwargs)

    def close(self) -> None:
        if self.laid:
            _drop(self._con, self._patch)
            self.laid = False


@contextmanager
def patched_on_demand(con: duckdb.DuckDBPyConnection, patch: Patch, catalog: str) -> Iterator[PatchedOnDemand]:
    """Within the block, statements run through the yielded object see the patched database, as under
    ``patched``; views are laid only if a statement other than a query runs."""
    on_demand = PatchedOnDemand(con, patch, catalog)
    try:
        yield on_demand
    finally:
        on_demand.close()


_LEADING_WITH = re.compile(r"\s*WITH(\s+RECURSIVE)?\s", re.IGNORECASE)
_QUERY = re.compile(r"\s*(SELECT|WITH)\s", re.IGNORECASE)


def patched_statement(sql: str, patch: Patch, catalog: str) -> str:
    """``sql`` (one SELECT, optionally with its own WITH list) reading the database as ``patch`` leaves it:
    each patched table is a CTE of its own name over ``catalog``'s table, inlined (``NOT MATERIALIZED``)
    like the view ``patched`` would lay. (A CTE of ``sql`` named like a patched table is a DuckDB error.)"""
    if patch.is_empty:
        return sql
    ctes = ", ".join(
        f"{_q(name)} AS NOT MATERIALIZED ({patched_select(table(name), patch, _source_table(catalog, name))})"
        for name in sorted(patch.tables))
    lead = _LEADING_WITH.match(sql)
    if lead is None:
        return f"WITH {ctes} {sql}"
    return f"WITH{lead.group(1) or ''} {ctes}, {sql[lead.end():]}"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _source_table(catalog: str, name: str) -> str:
    """The source's own table, past any view or CTE that shadows its name."""
    return f"{_q(catalog)}.main.{_q(name)}"


class RowsMemo:
    """The rows of the last few (patch, SQL) pairs run on one connection.

    A twin's proof and its label check both ask the gold SQL of the same patched database; the second
    asking reads the rows the first one got instead of running the query again. The key is the patch
    and the exact SQL text, so only the same question of the same database is ever answered from here.
    """

    def __init__(self, size: int = 8):
        self.size = size
        self._rows: OrderedDict[tuple[Patch, str], list[tuple]] = OrderedDict()
        self.hits = 0

    def rows(self, patch: Patch, sql: str, run: Callable[[], list[tuple]]) -> list[tuple]:
        """The rows of ``sql`` under ``patch``: remembered, or ``run()`` (with the patch already laid)."""
        key = (patch, sql)
        if key in self._rows:
            self._rows.move_to_end(key)
            self.hits += 1
            return self._rows[key]
        found = run()
        self._rows[key] = found
        if len(self._rows) > self.size:
            self._rows.popitem(last=False)
        return found
