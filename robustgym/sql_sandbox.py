"""The SQL tool's sandbox: one locked DuckDB instance per release, one connection per episode.

Why this shape (the full argument is in docs/architecture.md, "Environment and sandbox"):

- **Isolation in O(patch).** A ``Database`` is an in-memory DuckDB instance with the release's base
  file ATTACHed read-only under a private catalog name. Its ``main`` schema holds one view per
  MIMIC-IV table (``SELECT * EXCLUDE (row_id)`` from the base), made once. An episode is a new
  connection (``cursor()``) on that instance: its connection-local ``temp`` schema receives one view
  per table the task's patch touches (``pipeline.patching.patched_select``), which shadows the shared
  view for unqualified names. A reset therefore costs one view per patched table; nothing is copied,
  and closing the connection drops the episode's views, so no episode sees another's state.
- **No route to the unpatched rows.** The base catalog is attached, so a qualified name could reach
  it; DuckDB has no per-catalog privileges. Every statement is therefore parsed by DuckDB's own
  parser (``extract_statements`` then ``json_serialize_sql``) before it runs, and the syntax tree is
  checked against an allowlist: exactly one SELECT; every table reference unqualified and either a
  MIMIC-IV table of the release or a CTE in scope whose name shadows no catalog object; no table
  function except ``range``/``generate_series``/``unnest``; no function qualified by a catalog or
  schema and none from a short denylist of introspection functions. What the parser cannot
  serialise (PIVOT, EXPLAIN, any non-SELECT) is refused: the check fails closed.
- **No files, extensions, settings or network.** Before any episode exists the instance is locked:
  ``enable_external_access = false`` (no file reads or writes, ATTACH, COPY, INSTALL/LOAD, HTTP),
  ``python_enable_replacements = false`` (no scans of Python variables), no spilling to a temp
  directory, ``memory_limit`` and ``threads`` set, then ``lock_configuration = true``. These hold
  even if a statement got past the syntax check.
- **Bounded calls.** A timer interrupts a statement after the time limit; results are streamed and
  more than ``max_rows`` rows is an error, so a runaway result is never materialised.
- **Why ``row_id`` is hidden.** It is the row's position in its source file: a gap would reveal a
  hidden row and a negative id an added one, so the noise would be detectable without reasoning.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from pipeline.patching import patched_select
from pipeline.schema import ROW_ID, TABLES_BY_NAME, table
from pipeline.task_model import Patch

BASE_CATALOG = "rg_base"

# Table functions that only generate values: they read no catalog object and no file.
ALLOWED_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
# Scalar functions that describe the instance (catalog names, settings, variables). They reach no
# rows, but the agent has no use for them and they would tell it how the sandbox is built.
DENIED_FUNCTIONS = frozenset({"current_setting", "current_database", "current_catalog", "current_schema",
                              "current_schemas", "getvariable", "getenv", "json_execute_serialized_sql"})
DENIED_FUNCTION_PREFIXES = ("duckdb_", "pragma_", "read_", "parquet_", "sniff_")
# Table references that carry no name of their own; their children are checked like any other node.
_STRUCTURAL_REFS = frozenset({"JOIN", "SUBQUERY", "EXPRESSION_LIST", "EMPTY"})
_SHOW_TYPES = frozenset({"DESCRIBE", "SUMMARY"})


@dataclass(frozen=True)
class SqlLimits:
    timeout_s: float = 5.0
    max_rows: int = 1000
    memory_limit: str = "1GB"  # the instance's limit; every statement runs under it
    threads: int = 1


class SqlToolError(Exception):
    """Base of what the SQL tool raises; ``kind`` names the error for the agent and the logs."""

    kind = "sql_error"


class SandboxViolation(SqlToolError):
    """The statement was refused before it ran; ``problems`` lists every reason found."""

    kind = "sandbox_violation"

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("statement refused by the sandbox: " + "; ".join(problems))


class QueryTimeout(SqlToolError):
    kind = "timeout"


class RowLimitExceeded(SqlToolError):
    kind = "row_limit"


class QueryFailed(SqlToolError):
    """DuckDB raised while parsing or running an allowed statement (syntax, binder, out of memory)."""

    kind = "sql_error"


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    elapsed_ms: float


# ---------------------------------------------------------------- the statement check


@dataclass
class StatementGate:
    """Decides from DuckDB's syntax tree whether a statement may run. Fails closed."""

    tables: frozenset[str]  # lower-case names the agent may read
    reserved: frozenset[str]  # lower-case names of every other relation the catalog resolves
    problems: list[str] = field(default_factory=list)

    def check(self, con: duckdb.DuckDBPyConnection, sql: str) -> None:
        try:
            statements = con.extract_statements(sql)
        except duckdb.Error as exc:
            raise QueryFailed(str(exc).strip()) from None
        if len(statements) != 1:
            raise SandboxViolation([f"exactly one statement per call, got {len(statements)}"])
        kind = statements[0].type
        if kind != duckdb.StatementType.SELECT:
            raise SandboxViolation([f"only SELECT statements are allowed, got {kind.name}"])
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
        if tree.get("error"):
            raise SandboxViolation([f"statement not supported by the sandbox ({tree.get('error_message', '')})"])
        if len(tree["statements"]) != 1:
            raise SandboxViolation(["exactly one statement per call"])
        self.problems = []
        self._walk(tree["statements"][0]["node"], frozenset())
        if self.problems:
            raise SandboxViolation(sorted(set(self.problems)))

    def _walk(self, node: Any, ctes: frozenset[str]) -> None:
        if isinstance(node, list):
            for item in node:
                self._walk(item, ctes)
            return
        if not isinstance(node, dict):
            return
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict) and cte_map.get("map"):
            names = {entry["key"].lower() for entry in cte_map["map"]}
            shadowing = names & self.reserved
            if shadowing:
                self.problems.append(f"a CTE may not be named like a system relation: {sorted(shadowing)}")
            ctes = ctes | (names - self.reserved)
        if "class" in node:
            self._expression(node)
        elif "sample" in node and "type" in node and "modifiers" not in node:  # query nodes have modifiers
            self._table_ref(node, ctes)
        for key, value in node.items():
            if isinstance(value, (dict, list)):
                self._walk(value, ctes)

    def _table_ref(self, node: dict, ctes: frozenset[str]) -> None:
        ref = node["type"]
        if ref == "BASE_TABLE":
            name = node.get("table_name", "")
            path = (node.get("qualified_name") or {}).get("path") or [name]
            if node.get("catalog_name") or node.get("schema_name") or len(path) != 1:
                self.problems.append(f"qualified table names are not allowed: {'.'.join(path)}")
            elif node.get("at_clause"):
                self.problems.append(f"time travel (AT ...) is not allowed: {name}")
            elif name.lower() not in self.tables and name.lower() not in ctes:
                self.problems.append(f"unknown table {name!r}; the tables are the MIMIC-IV tables listed "
                                     f"in the task")
        elif ref == "TABLE_FUNCTION":
            function = node.get("function") or {}
            name = str(function.get("function_name", "")).lower()
            if name not in ALLOWED_TABLE_FUNCTIONS or function.get("catalog") or function.get("schema"):
                self.problems.append(f"table function {name}() is not allowed "
                                     f"(allowed: {', '.join(sorted(ALLOWED_TABLE_FUNCTIONS))})")
        elif ref == "SHOW_REF":
            if node.get("show_type") not in _SHOW_TYPES or node.get("table_name") or not node.get("query"):
                self.problems.append("SHOW is not allowed; DESCRIBE or SUMMARIZE a table instead")
        elif ref not in _STRUCTURAL_REFS:
            self.problems.append(f"{ref} is not allowed in the sandbox")

    def _expression(self, node: dict) -> None:
        if node.get("class") != "FUNCTION":
            return
        name = str(node.get("function_name", "")).lower()
        if node.get("catalog") or node.get("schema"):
            self.problems.append(f"qualified function names are not allowed: {name}")
        elif name in DENIED_FUNCTIONS or name.startswith(DENIED_FUNCTION_PREFIXES):
            self.problems.append(f"function {name}() is not allowed")


# ---------------------------------------------------------------- the instance and its episodes


class Database:
    """The base database of a release, locked down, from which episode connections are opened."""

    def __init__(self, base_path: Path, limits: SqlLimits = SqlLimits()):
        self.base_path = Path(base_path)
        if not self.base_path.is_file():
            raise FileNotFoundError(f"base database not found: {self.base_path}")
        self.limits = limits
        self._host = duckdb.connect(":memory:", config={"threads": limits.threads})
        try:
            self._host.execute(f"ATTACH '{_quote(str(self.base_path.resolve()))}' AS {BASE_CATALOG} (READ_ONLY)")
            present = {r[0] for r in self._host.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main'",
                [BASE_CATALOG]).fetchall()}
            self.tables = tuple(sorted(t for t in present if t in TABLES_BY_NAME))
            if not self.tables:
                raise ValueError(f"{self.base_path} holds no MIMIC-IV table")
            for name in self.tables:
                self._host.execute(f'CREATE VIEW main."{name}" AS '
                                   f'SELECT * EXCLUDE ({ROW_ID}) FROM {BASE_CATALOG}.main."{name}"')
            reserved = {r[0].lower() for r in self._host.execute(
                "SELECT view_name FROM duckdb_views() UNION SELECT table_name FROM duckdb_tables()").fetchall()}
            self._gate_tables = frozenset(self.tables)
            self._reserved = frozenset(reserved - self._gate_tables)
            self._lock()
        except BaseException:
            self._host.close()
            raise

    def _lock(self) -> None:
        # The order matters: each SET must come before the setting that forbids it.
        for statement in (
            "SET temp_directory = ''",  # no spilling to disk: the memory limit is the limit
            f"SET memory_limit = '{_quote(self.limits.memory_limit)}'",
            "SET python_enable_replacements = false",
            "SET autoload_known_extensions = false",
            "SET autoinstall_known_extensions = false",
            "SET enable_external_access = false",
            "SET lock_configuration = true",
        ):
            self._host.execute(statement)

    def open_episode(self, patch: Patch) -> "EpisodeDatabase":
        unknown = sorted(patch.tables - set(self.tables))
        if unknown:
            raise ValueError(f"the patch touches tables the base database does not have: {unknown}")
        con = self._host.cursor()
        try:
            for name in sorted(patch.tables):
                source = patched_select(table(name), patch, f'{BASE_CATALOG}.main."{name}"')
                con.execute(f'CREATE TEMP VIEW "{name}" AS SELECT * EXCLUDE ({ROW_ID}) FROM ({source})')
        except BaseException:
            con.close()
            raise
        return EpisodeDatabase(con, StatementGate(self._gate_tables, self._reserved), self.limits)

    def columns(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """Table -> ((column, type), ...) as the agent sees them (``row_id`` hidden)."""
        out: dict[str, list[tuple[str, str]]] = {t: [] for t in self.tables}
        for t, c, ty in self._host.execute(
                "SELECT table_name, column_name, data_type FROM duckdb_columns() "
                "WHERE database_name = current_database() AND schema_name = 'main' ORDER BY table_name, column_index"
        ).fetchall():
            if t in out:
                out[t].append((c, ty))
        return {t: tuple(cols) for t, cols in out.items()}

    def close(self) -> None:
        self._host.close()


class EpisodeDatabase:
    """One episode's connection: its patched views, the statement gate, the limits."""

    def __init__(self, con: duckdb.DuckDBPyConnection, gate: StatementGate, limits: SqlLimits):
        self._con = con
        self._gate = gate
        self.limits = limits
        self._lock = threading.Lock()  # one statement at a time per episode (the Python tool calls back)

    def query(self, sql: str) -> QueryResult:
        if not isinstance(sql, str) or not sql.strip():
            raise QueryFailed("the query is empty")
        with self._lock:
            started = time.perf_counter()
            self._gate.check(self._con, sql)
            return self._run(sql, started)

    def _run(self, sql: str, started: float) -> QueryResult:
        limit = self.limits
        timer = threading.Timer(limit.timeout_s, self._con.interrupt)
        timer.daemon = True
        timer.start()
        try:
            cursor = self._con.execute(sql)
            columns = tuple(d[0] for d in cursor.description or ())
            rows = cursor.fetchmany(limit.max_rows + 1)
        except duckdb.InterruptException:
            raise QueryTimeout(f"the query ran longer than {limit.timeout_s:g} s and was stopped; "
                               f"filter earlier or aggregate") from None
        except duckdb.OutOfMemoryException:
            raise QueryFailed(f"the query needed more than the {limit.memory_limit} memory limit; "
                              f"filter earlier or aggregate") from None
        except duckdb.Error as exc:
            raise QueryFailed(str(exc).strip()) from None
        finally:
            timer.cancel()
        elapsed = time.perf_counter() - started
        if len(rows) > limit.max_rows:
            raise RowLimitExceeded(f"the query returns more than {limit.max_rows} rows; aggregate, filter "
                                   f"or add LIMIT")
        return QueryResult(columns, tuple(tuple(r) for r in rows), elapsed * 1000)

    def close(self) -> None:
        self._con.close()


def _quote(text: str) -> str:
    return text.replace("'", "''")

