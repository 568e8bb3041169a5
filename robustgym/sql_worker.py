"""The SQL sandbox's engine, run in a process of its own: the locked DuckDB instance, the statement
check, and the limits that DuckDB enforces itself.

``robustgym.sql_sandbox.Database`` starts one worker per environment and talks to it over two pipes.
The worker holds the instance (the base file ATTACHed read-only, one view per MIMIC-IV table, the
configuration locked) and one connection per open episode. Why a separate process: DuckDB's
``memory_limit`` governs its buffer manager, not every allocation, and ``interrupt()`` is only seen
between vectors. A single huge value (``repeat('x', 3000000000)``, ``lpad``, a regex over a
gigabyte string) is built inside one function call that neither bounds nor stops. In its own
process such a statement meets ``RLIMIT_DATA`` (the allocation fails and DuckDB reports it as out of
memory) and, when it ignores the interrupt, a parent that kills the whole process at 1.5 times the
time limit. The agent's process never holds more than ``max_result_bytes`` of a result.

This module imports only DuckDB and the standard library: a worker starts in a fraction of a second
(at each ``Env`` and after each hard stop), and tests build an ``Engine`` in-process to run
statements that skip the check.
"""

import json
import os
import pickle
import resource
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from datetime import time as clock_time
from decimal import Decimal
from multiprocessing.connection import Connection
from typing import Any, NoReturn
from uuid import UUID

import duckdb

BASE_CATALOG = "rg_base"
ROW_ID = "row_id"

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


# ---------------------------------------------------------------- errors (the same classes on both sides)


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


class QueryResourceLimit(SqlToolError):
    """The statement needed more memory than allowed, or its result is too large to hand over."""

    kind = "resource_limit"


class QueryFailed(SqlToolError):
    """DuckDB raised while parsing or running an allowed statement (syntax, binder, ...)."""

    kind = "sql_error"


ERRORS: dict[str, type[SqlToolError]] = {c.__name__: c for c in (
    SqlToolError, SandboxViolation, QueryTimeout, RowLimitExceeded, QueryResourceLimit, QueryFailed)}


# ---------------------------------------------------------------- the statement check


@dataclass
class StatementGate:
    """Decides from DuckDB's syntax tree whether a statement may run. Fails closed."""

    tables: frozenset[str]  # lower-case names the agent may read
    reserved: frozenset[str]  # lower-case names of every other relation the catalog resolves
    problems: list[str] = field(default_factory=list)

    def check(self, con: duckdb.DuckDBPyConnection, sql: str) -> None:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
        if tree.get("error") or len(tree["statements"]) != 1:
            # Only SELECTs serialize. Anything else (several statements, another kind, a syntax error)
            # is parsed again to say what was sent; one SELECT, the usual case, is parsed once here.
            self._refuse(con, sql, tree)
        self.problems = []
        self._walk(tree["statements"][0]["node"], frozenset())
        if self.problems:
            raise SandboxViolation(sorted(set(self.problems)))

    @staticmethod
    def _refuse(con: duckdb.DuckDBPyConnection, sql: str, tree: dict) -> NoReturn:
        try:
            statements = con.extract_statements(sql)
        except duckdb.Error as exc:
            raise QueryFailed(str(exc).strip()) from None
        if len(statements) != 1:
            raise SandboxViolation([f"exactly one statement per call, got {len(statements)}"])
        kind = statements[0].type
        if kind != duckdb.StatementType.SELECT:
            raise SandboxViolation([f"only SELECT statements are allowed, got {kind.name}"])
        if tree.get("error"):
            raise SandboxViolation([f"statement not supported by the sandbox ({tree.get('error_message', '')})"])
        raise SandboxViolation(["exactly one statement per call"])

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
        for value in node.values():
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


# ---------------------------------------------------------------- the engine


@dataclass(frozen=True)
class EngineConfig:
    base_path: str
    tables: tuple[str, ...]  # the MIMIC-IV table names the agent may see, where the base has them
    memory_limit: str
    threads: int
    timeout_s: float
    max_rows: int
    max_result_bytes: int


class StatementDeadline:
    """Interrupts the statement running on a connection once its time is up. One thread for the
    worker's life, not a timer thread per statement (a thread's start costs about 0.1-0.3 ms, a
    simple statement a few): the worker runs one statement at a time."""

    def __init__(self):
        self._changed = threading.Condition()
        self._running: tuple[duckdb.DuckDBPyConnection, float] | None = None
        self._closed = False
        self._watcher = threading.Thread(target=self._watch, name="statement-deadline", daemon=True)
        self._watcher.start()

    def start(self, con: duckdb.DuckDBPyConnection, seconds: float) -> None:
        with self._changed:
            self._running = (con, time.monotonic() + seconds)
            self._changed.notify()

    def finish(self) -> None:
        """The statement ended: from here on it is never interrupted (checked under the same lock)."""
        with self._changed:
            self._running = None

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify()
        self._watcher.join()

    def _watch(self) -> None:
        with self._changed:
            while not self._closed:
                if self._running is None:
                    self._changed.wait()
                    continue
                con, deadline = self._running
                left = deadline - time.monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue
                con.interrupt()
                self._running = None


@dataclass(frozen=True)
class Result:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    elapsed_ms: float


class Engine:
    """The locked instance and its episode connections. In the worker process; in-process in tests."""

    def __init__(self, config: EngineConfig):
        self.config = config
        self._host = duckdb.connect(":memory:", config={"threads": config.threads})
        self._episodes: dict[int, duckdb.DuckDBPyConnection] = {}
        self._deadline = StatementDeadline()
        try:
            path = os.path.abspath(config.base_path).replace("'", "''")
            self._host.execute(f"ATTACH '{path}' AS {BASE_CATALOG} (READ_ONLY)")
            present = {r[0] for r in self._host.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main'",
                [BASE_CATALOG]).fetchall()}
            self.tables = tuple(sorted(t for t in present if t in set(config.tables)))
            if not self.tables:
                raise ValueError(f"{config.base_path} holds no MIMIC-IV table")
            for name in self.tables:
                self._host.execute(f'CREATE VIEW main."{name}" AS '
                                   f'SELECT * EXCLUDE ({ROW_ID}) FROM {BASE_CATALOG}.main."{name}"')
            reserved = {r[0].lower() for r in self._host.execute(
                "SELECT view_name FROM duckdb_views() UNION SELECT table_name FROM duckdb_tables()").fetchall()}
            self._gate_tables = frozenset(self.tables)
            self._reserved = frozenset(reserved - self._gate_tables)
            self._lock()
        except BaseException:
            self._deadline.close()
            self._host.close()
            raise

    def _lock(self) -> None:
        # The order matters: each SET must come before the setting that forbids it.
        for statement in (
            "SET temp_directory = ''",  # no spilling to disk: the memory limit is the limit
            f"SET memory_limit = '{self.config.memory_limit.replace(chr(39), '')}'",
            "SET python_enable_replacements = false",
            "SET autoload_known_extensions = false",
            "SET autoinstall_known_extensions = false",
            "SET enable_external_access = false",
            "SET lock_configuration = true",
        ):
            self._host.execute(statement)

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

    def open(self, episode: int, views: tuple[tuple[str, str], ...]) -> None:
        """A connection whose TEMP views (one per patched table) shadow the shared ones."""
        con = self._host.cursor()
        try:
            for name, select in views:
                con.execute(f'CREATE TEMP VIEW "{name}" AS SELECT * EXCLUDE ({ROW_ID}) FROM ({select})')
        except BaseException:
            con.close()
            raise
        self._episodes[episode] = con

    def close(self, episode: int) -> None:
        con = self._episodes.pop(episode, None)
        if con is not None:
            con.close()

    def _episode(self, episode: int) -> duckdb.DuckDBPyConnection:
        try:
            return self._episodes[episode]
        except KeyError:
            raise QueryFailed("the episode's database is closed") from None

    def query(self, episode: int, sql: str) -> Result:
        con = self._episode(episode)
        started = time.perf_counter()
        StatementGate(self._gate_tables, self._reserved).check(con, sql)
        return self._run(con, sql, started)

    def unchecked(self, episode: int, sql: str) -> Result:
        """Run without the statement check: for tests showing the lockdown holds on its own."""
        return self._run(self._episode(episode), sql, time.perf_counter())

    def _run(self, con: duckdb.DuckDBPyConnection, sql: str, started: float) -> Result:
        c = self.config
        self._deadline.start(con, c.timeout_s)
        try:
            cursor = con.execute(sql)
            columns = tuple(d[0] for d in cursor.description or ())
            rows = cursor.fetchmany(c.max_rows + 1)
        except duckdb.InterruptException:
            raise QueryTimeout(f"the query ran longer than {c.timeout_s:g} s and was stopped; "
                               f"filter earlier or aggregate") from None
        except (duckdb.OutOfMemoryException, MemoryError):
            raise QueryResourceLimit(f"the query needed more than the {c.memory_limit} memory limit; "
                                     f"filter earlier or aggregate") from None
        except duckdb.Error as exc:
            raise QueryFailed(str(exc).strip()) from None
        finally:
            self._deadline.finish()
        if len(rows) > c.max_rows:
            raise RowLimitExceeded(f"the query returns more than {c.max_rows} rows; aggregate, filter or add LIMIT")
        return Result(columns, tuple(tuple(_plain(v) for v in r) for r in rows),
                      (time.perf_counter() - started) * 1000)

    def close_all(self) -> None:
        for episode in list(self._episodes):
            self.close(episode)
        self._deadline.close()
        self._host.close()


# Values handed to the parent are these types only (the parent unpickles nothing else).
_SCALARS = (type(None), bool, int, float, str, bytes, Decimal, datetime, date, clock_time, timedelta, UUID)


def _plain(value: Any) -> Any:
    if isinstance(value, (datetime, clock_time)) and value.tzinfo is not None:
        offset = value.utcoffset()  # a named zone becomes its fixed offset: plain to pickle
        return value.replace(tzinfo=timezone(offset)) if offset is not None else value.replace(tzinfo=None)
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


# ---------------------------------------------------------------- the worker's loop


def _reply(responses: Connection, message: tuple, limit: int) -> None:
    try:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        data = None
    if data is None or len(data) > limit:
        data = pickle.dumps(("error", "QueryResourceLimit",
                             f"the result is larger than the {limit >> 20} MiB the sandbox hands over; "
                             "select fewer or shorter values", None))
    responses.send_bytes(data)


def _statement(run):
    def handle(engine: Engine, episode: int, sql: str) -> tuple:
        r = run(engine, episode, sql)
        return r.columns, r.rows, r.elapsed_ms  # plain values only cross the pipe
    return handle


# What the parent may ask; "close" is answered by nothing, "exit" ends the loop.
_HANDLERS = {
    "open": Engine.open,
    "close": Engine.close,
    "query": _statement(Engine.query),
    "unchecked": _statement(Engine.unchecked),
}


def serve(requests: Connection, responses: Connection, engine: Engine) -> None:
    """Answer requests until the parent says exit or goes away. One request at a time."""
    limit = engine.config.max_result_bytes
    while True:
        try:
            request = pickle.loads(requests.recv_bytes())  # the parent is trusted
        except (EOFError, OSError):
            return
        op, args = request[0], request[1:]
        if op == "exit":
            return
        reply = _handle(engine, op, args)
        if op != "close":  # the parent does not wait for this one: nothing may answer it
            _reply(responses, reply, limit)


def _handle(engine: Engine, op: str, args: tuple) -> tuple:
    try:
        handler = _HANDLERS.get(op)
        if handler is None:
            raise QueryFailed(f"unknown request {op!r}")
        return "ok", handler(engine, *args)
    except SqlToolError as exc:
        return "error", type(exc).__name__, str(exc), getattr(exc, "problems", None)
    except MemoryError:
        return ("error", "QueryResourceLimit", "the query needed more memory than the sandbox allows; filter "
                "earlier or aggregate", None)
    except Exception as exc:  # noqa: BLE001 - the parent turns it into a tool error
        return "error", "QueryFailed", f"{type(exc).__name__}: {exc}", None


def main(argv: list[str]) -> None:
    requests = Connection(int(argv[0]), writable=False)
    responses = Connection(int(argv[1]), readable=False)
    settings = json.loads(argv[2])
    data_limit = settings.pop("data_limit_bytes")
    try:
        engine = Engine(EngineConfig(**{**settings, "tables": tuple(settings["tables"])}))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
        responses.send_bytes(pickle.dumps(("error", type(exc).__name__, str(exc), None)))
        return
    # From here on, every allocation counts against the limit: the instance is built and locked.
    if data_limit:
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        soft = data_limit if hard == resource.RLIM_INFINITY else min(data_limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (soft, soft))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    responses.send_bytes(pickle.dumps(("ok", (engine.tables, engine.columns()))))
    serve(requests, responses, engine)
    engine.close_all()


if __name__ == "__main__":
    main(sys.argv[1:])
