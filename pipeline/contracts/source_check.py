"""Validate the source database against the generated source-table contracts.

The frames are computed by DuckDB in one aggregate query per table (see ``source_suites``), so the
check reads each table once and never materialises its rows in Python.

``check_source_database`` checks a database already built. ``TableByTableCheck`` checks each table
as a load makes it: the loader reads the table's frames right after loading it, and Great
Expectations (Python) validates them on a thread of its own while DuckDB loads the next tables.
Nothing a load does after a table is made changes the table, so the results are the same.
"""

import queue
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.background import BackgroundCall
from pipeline.contracts.results import ContractResult
from pipeline.contracts.runner import prepare, validate_frames
from pipeline.contracts.source_suites import null_count_column, source_contract_name
from pipeline.duckdb_memory import open_read_only
from pipeline.schema import ROW_ID, TABLES, TABLES_BY_NAME, Table


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def present_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main'").fetchall()}


def columns_frame(con: duckdb.DuckDBPyConnection, t: Table) -> pa.Table:
    rows = con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = ? ORDER BY column_index", [t.name]).fetchall()
    return pa.table({"column": [r[0] for r in rows], "type": [r[1] for r in rows]})


def stats_frame(con: duckdb.DuckDBPyConnection, t: Table) -> pa.Table:
    present = {r[0] for r in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = ?", [t.name]).fetchall()}
    exprs = ["count(*) AS rows"]
    if ROW_ID in present:
        exprs += [f"count(*) - count({ROW_ID}) AS row_id_nulls", f"min({ROW_ID}) AS row_id_min"]
    # A column missing from the table is reported by the `columns` frame; its statistics are left
    # out here, which makes their expectations fail with "column not found" instead of crashing.
    for c in t.columns:
        if not c.nullable and c.name in present:
            exprs.append(f"count(*) - count({_q(c.name)}) AS {_q(null_count_column(c.name))}")
    sql = f"SELECT {', '.join(exprs)} FROM {_q(t.name)}"
    stats = con.sql(sql).to_arrow_table()
    if ROW_ID in present:
        stats = stats.append_column("row_id_duplicates", pa.array(
            [_duplicates(con, t.name, _q(ROW_ID), f"{_q(ROW_ID)} IS NOT NULL")], pa.int64()))
    if t.key and set(t.key) <= present:
        key = ", ".join(_q(k) for k in t.key)
        stats = stats.append_column("key_duplicates", pa.array([_duplicates(con, t.name, key)], pa.int64()))
    return stats.append_column("table", pa.array([t.name]))


def _duplicates(con: duckdb.DuckDBPyConnection, table_name: str, key: str, where: str = "TRUE") -> int:
    """Rows beyond the first of each ``key`` value (NULLs group together). A grouped aggregate, not
    ``count(DISTINCT ...)``: DuckDB spills a GROUP BY to disk under its memory limit, while a distinct
    count over a whole table of hundreds of millions of rows has to fit in memory."""
    return con.execute(f"SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM {_q(table_name)} "
                       f"WHERE {where} GROUP BY {key} HAVING count(*) > 1)").fetchone()[0]


def source_frames(con: duckdb.DuckDBPyConnection, t: Table) -> dict[str, pa.Table]:
    return {"columns": columns_frame(con, t), "stats": stats_frame(con, t)}


def check_source_database(db_path: Path, tables: list[str] | None = None) -> list[ContractResult]:
    """One contract result per MIMIC-IV table present in the database (absent tables are the
    loader's concern: it refuses them unless missing tables were explicitly allowed)."""
    results = []
    with open_read_only(db_path) as con:
        present = present_tables(con)
        for t in TABLES:
            if t.name not in present or (tables is not None and t.name not in tables):
                continue
            results.append(validate_frames(source_contract_name(t.name), source_frames(con, t)))
    return results


class TableByTableCheck:
    """The source contract of each table as it is loaded (``loaded``), validated beside the load.

    Use as a context manager around the load: leaving the block ends the validating thread, whether
    the load succeeded or not. ``results()`` then gives what ``check_source_database`` would give on
    the loaded database: one result per table announced, in the order announced (the load's order,
    which is the schema's). Importing Great Expectations, about 2.5 s, happens first on that thread,
    also while the load runs.
    """

    _DONE = None

    def __init__(self):
        self._frames: queue.SimpleQueue = queue.SimpleQueue()
        self._call = BackgroundCall(self._validate, name="source-contract")

    def loaded(self, con: duckdb.DuckDBPyConnection, table_name: str) -> None:
        """``table_name`` is loaded on ``con`` (the loader's connection, in the loader's thread)."""
        t = TABLES_BY_NAME[table_name]
        self._frames.put((t, source_frames(con, t)))

    def _validate(self) -> list[ContractResult]:
        prepare()
        results = []
        while (item := self._frames.get()) is not self._DONE:
            t, frames = item
            results.append(validate_frames(source_contract_name(t.name), frames))
        return results

    def results(self) -> list[ContractResult]:
        return self._call.result()

    def __enter__(self) -> "TableByTableCheck":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self._frames.put(self._DONE)
        self._call.__exit__(exc_type, exc, traceback)
