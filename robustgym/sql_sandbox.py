"""The SQL tool's sandbox: one locked DuckDB instance per release, in a worker process; one
connection per episode.

Why this shape (the full argument is in docs/architecture.md, "Environment and sandbox"):

- **Isolation in O(patch).** The worker's in-memory DuckDB instance has the release's base file
  ATTACHed read-only under a private catalog name; its ``main`` schema holds one view per MIMIC-IV
  table (``SELECT * EXCLUDE (row_id)`` from the base), made once. An episode is a new connection
  (``cursor()``) on that instance: its connection-local ``temp`` schema receives one view per table
  the task's patch touches (``pipeline.patching.patched_select``, computed here), which shadows the
  shared view for unqualified names. A reset therefore costs one view per patched table and one
  round trip to the worker; nothing is copied, and no episode sees another's state.
- **No route to the unpatched rows.** Every statement is parsed by DuckDB's own parser before it
  runs and its syntax tree checked against an allowlist (``robustgym.sql_worker.StatementGate``);
  what the parser cannot serialise is refused: the check fails closed.
- **No files, extensions, settings or network.** The instance is locked before any episode exists
  (``enable_external_access = false``, no replacement scans, no spilling, ``lock_configuration``).
- **Hard limits.** DuckDB's ``memory_limit`` and ``interrupt()`` bound scans and joins, but not a
  single huge value built inside one function call (``repeat``, ``lpad``, ``string_agg``, a list from
  ``range``, a regex over a huge string). The worker therefore runs with ``RLIMIT_DATA`` at twice the
  memory limit minus its code (an allocation past it fails, and DuckDB reports it as out of memory),
  and a statement still running at 1.5 times its time limit is stopped by killing the worker, which
  is restarted with the open episodes' views on the next call. Results over ``max_rows`` rows or
  ``max_result_bytes`` bytes are refused inside the worker.
- **Why ``row_id`` is hidden.** It is the row's position in its source file: a gap would reveal a
  hidden row and a negative id an added one, so the noise would be detectable without reasoning.
"""

import io
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pipeline.patching import patched_select
from pipeline.schema import TABLES_BY_NAME, table
from pipeline.task_model import Patch
from robustgym.sql_worker import (  # noqa: F401 - the public names of the tool's errors and the check
    ALLOWED_TABLE_FUNCTIONS,
    BASE_CATALOG,
    DENIED_FUNCTIONS,
    ERRORS,
    QueryFailed,
    QueryResourceLimit,
    QueryTimeout,
    RowLimitExceeded,
    SandboxViolation,
    SqlToolError,
    StatementGate,
)

# A statement that ignores DuckDB's interrupt is stopped by killing the worker at this multiple of
# its time limit (the bound is twice the limit; the rest is margin for the kill).
HARD_STOP_FACTOR = 1.5
# Requests that run no agent statement (opening an episode's views) get this long before the worker
# is presumed stuck.
_HOUSEKEEPING_S = 60.0
# What the worker's own code and libraries take besides DuckDB's data (RssFile ~65 MB measured).
_CODE_RESERVE = 96 << 20
_MIN_DATA_LIMIT = 256 << 20
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


def memory_bytes(text: str) -> int:
    """``'1GB'`` -> 1_000_000_000 (DuckDB's reading: GB = 1000^3, GiB = 1024^3)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B)\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"memory limit {text!r} must be a size like '1GB' or '512MiB'")
    return int(float(m[1]) * _UNITS[m[2].upper()])


@dataclass(frozen=True)
class SqlLimits:
    timeout_s: float = 5.0
    max_rows: int = 1000
    memory_limit: str = "1GB"  # DuckDB's limit; the worker process is held under twice this
    threads: int = 1
    max_result_bytes: int = 16 << 20  # what a result may weigh when handed to the agent's process
    max_sql_chars: int = 100_000

    def __post_init__(self) -> None:
        memory_bytes(self.memory_limit)  # refuse a malformed size here, not in the worker

    @property
    def process_data_limit(self) -> int:
        """``RLIMIT_DATA`` of the worker: its resident size stays under twice ``memory_limit``.
        Tiny limits get a floor, the worker's own footprint (~100 MB) being above them."""
        return max(2 * memory_bytes(self.memory_limit) - _CODE_RESERVE, _MIN_DATA_LIMIT)


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    elapsed_ms: float


class _ResultUnpickler(pickle.Unpickler):
    """Results come from the process that ran the agent's SQL: only plain value types may be built."""

    _ALLOWED = {("datetime", n) for n in ("datetime", "date", "time", "timedelta", "timezone")} | {
        ("decimal", "Decimal"), ("uuid", "UUID")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"the SQL worker sent a {module}.{name}")
        return super().find_class(module, name)


# The worker is started as `python -I -c BOOT <sys.path> <fds> <config>`: isolated mode (no
# PYTHON* variables, no user site), with this process's import path so robustgym is found.
_BOOT = "import json, sys; sys.path[:0] = json.loads(sys.argv[1]); " \
        "from robustgym.sql_worker import main; main(sys.argv[2:])"


class _Worker:
    """One worker process and its two pipes."""

    def __init__(self, base_path: Path, limits: SqlLimits):
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        config = {"base_path": str(base_path), "tables": sorted(TABLES_BY_NAME), "memory_limit": limits.memory_limit,
                  "threads": limits.threads, "timeout_s": limits.timeout_s, "max_rows": limits.max_rows,
                  "max_result_bytes": limits.max_result_bytes, "data_limit_bytes": limits.process_data_limit}
        self.stderr = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, json.dumps(sys.path), str(req_r), str(resp_w), json.dumps(config)],
                pass_fds=(req_r, resp_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.stderr,
                start_new_session=True)  # Ctrl-C reaches the parent, which stops the worker itself
        except BaseException:
            os.close(req_w)
            os.close(resp_r)
            raise
        finally:
            os.close(req_r)
            os.close(resp_w)
        self.requests = Connection(req_w, readable=False)
        self.responses = Connection(resp_r, writable=False)
        self.peak_rss = 0

    def send(self, message: tuple) -> None:
        self.requests.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def receive(self, deadline: float) -> tuple | None:
        """The next response, or None when the deadline passed; raises EOFError if the worker died."""
        if not self.responses.poll(max(0.0, deadline - time.monotonic())):
            return None
        return _ResultUnpickler(io.BytesIO(self.responses.recv_bytes())).load()

    def rss_peak(self) -> int:
        """The worker's peak resident size so far (bytes), while it runs."""
        try:
            with open(f"/proc/{self.process.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.peak_rss = max(self.peak_rss, int(line.split()[1]) * 1024)
        except OSError:
            pass
        return self.peak_rss

    def stop(self) -> None:
        """Kill and reap the worker, keeping its peak resident size as last seen in /proc.

        Not ``wait4``'s ``ru_maxrss``: Linux carries the parent's resident size at fork into the
        child's, so a large parent would make every worker look large."""
        if self.process.returncode is None:
            self.rss_peak()
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        for end in (self.requests, self.responses):
            end.close()
        self.stderr.close()

    def crash_report(self) -> str:
        self.stderr.seek(0)
        text = self.stderr.read().decode("utf-8", "replace").strip()
        return text.splitlines()[-1] if text else ""


class Database:
    """The base database of a release, locked down in a worker process, from which episodes open."""

    def __init__(self, base_path: Path, limits: SqlLimits = SqlLimits()):
        self.base_path = Path(base_path)
        if not self.base_path.is_file():
            raise FileNotFoundError(f"base database not found: {self.base_path}")
        self.limits = limits
        self._lock = threading.RLock()
        self._episodes: dict[int, tuple[tuple[str, str], ...]] = {}  # open episodes' views, remade on restart
        self._next_episode = 0
        self._worker: _Worker | None = None
        self._peak_rss = 0
        self.restarts = 0
        self.tables, self._columns = self._start()

    # ------------------------------------------------------------ the worker's lifecycle

    def _start(self) -> tuple[tuple[str, ...], dict]:
        worker = _Worker(self.base_path, self.limits)
        try:
            reply = worker.receive(time.monotonic() + _HOUSEKEEPING_S)
        except EOFError:
            reply = ("error", "QueryFailed", f"the SQL worker did not start: {worker.crash_report()}", None)
        if reply is None or reply[0] != "ok":
            worker.stop()
            if reply is None:
                raise RuntimeError(f"the SQL worker did not start within {_HOUSEKEEPING_S:g} s")
            _, name, message, _ = reply
            raise (ValueError if name == "ValueError" else RuntimeError)(message)
        self._worker = worker
        tables, columns = reply[1]
        for episode, views in self._episodes.items():  # after a hard stop: the open episodes' state again
            self._call(("open", episode, views), _HOUSEKEEPING_S)
        return tuple(tables), columns

    def _stop_worker(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._peak_rss = max(self._peak_rss, self._worker.peak_rss)
            self._worker = None

    def _call(self, message: tuple, seconds: float) -> Any:
        """Send one request and wait for its answer; stop the worker when it takes too long."""
        with self._lock:
            if self._worker is None:
                self.restarts += 1
                self._start()
            worker = self._worker
            deadline = time.monotonic() + seconds
            try:
                worker.send(message)
                reply = worker.receive(deadline)
            except pickle.UnpicklingError as exc:  # the worker is fine; its answer held a value we refuse
                raise QueryFailed(f"the result holds a value the sandbox does not return ({exc})") from None
            except (EOFError, OSError) as exc:
                crash = worker.crash_report()
                self._stop_worker()
                how = f"signal {-worker.process.returncode}" if (worker.process.returncode or 0) < 0 else \
                    f"{type(exc).__name__} {exc}".strip()
                raise QueryFailed(f"the SQL engine stopped while answering ({how}{'; ' + crash if crash else ''}); "
                                  "the next call restarts it") from None
            if reply is None:
                self._stop_worker()
                raise QueryTimeout(f"the query ran longer than {self.limits.timeout_s:g} s and did not stop when "
                                   "interrupted, so the SQL engine was stopped (the next call restarts it with the "
                                   "episode's data); filter earlier or aggregate")
        if reply[0] == "ok":
            return reply[1]
        _, name, text, problems = reply
        error = ERRORS.get(name, QueryFailed)
        if error is SandboxViolation:
            raise SandboxViolation(list(problems or [text]))
        raise error(text)

    # ------------------------------------------------------------ episodes

    def open_episode(self, patch: Patch) -> "EpisodeDatabase":
        unknown = sorted(patch.tables - set(self.tables))
        if unknown:
            raise ValueError(f"the patch touches tables the base database does not have: {unknown}")
        views = tuple((name, patched_select(table(name), patch, f'{BASE_CATALOG}.main."{name}"'))
                      for name in sorted(patch.tables))
        with self._lock:
            episode = self._next_episode
            self._next_episode += 1
        return EpisodeDatabase(self, episode, views, self.limits)

    def _open_episode(self, episode: int, views: tuple[tuple[str, str], ...]) -> None:
        """Make the episode's connection and lay its views in the worker. ``EpisodeDatabase`` asks at
        its first statement: an agent that answers without a query (the reference floors' agents
        answer every episode so) costs the worker nothing."""
        with self._lock:
            self._call(("open", episode, views), _HOUSEKEEPING_S)
            self._episodes[episode] = views

    def _close_episode(self, episode: int) -> None:
        with self._lock:
            if self._episodes.pop(episode, None) is None or self._worker is None:
                return
            try:
                self._worker.send(("close", episode))  # answered by nothing: ordered before the next request
            except OSError:
                self._stop_worker()

    def columns(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """Table -> ((column, type), ...) as the agent sees them (``row_id`` hidden)."""
        return {t: tuple(tuple(c) for c in cols) for t, cols in self._columns.items()}

    def peak_memory_bytes(self) -> int:
        """The largest resident size any of this database's worker processes reached (VmHWM from
        /proc, read while each runs and when it is stopped; Linux only, 0 elsewhere)."""
        with self._lock:
            current = self._worker.rss_peak() if self._worker is not None else 0
            return max(self._peak_rss, current)

    @property
    def worker_pid(self) -> int | None:
        return self._worker.process.pid if self._worker is not None else None

    def close(self) -> None:
        with self._lock:
            self._stop_worker()  # it holds nothing to save: the base is read-only
            self._episodes.clear()


class EpisodeDatabase:
    """One episode's connection in the worker: its patched views, the statement check, the limits.
    The connection is made when the first statement comes."""

    def __init__(self, database: Database, episode: int, views: tuple[tuple[str, str], ...], limits: SqlLimits):
        self._database = database
        self._episode = episode
        self._views = views
        self._opened = self._closed = False
        self.limits = limits

    def query(self, sql: str) -> QueryResult:
        if not isinstance(sql, str) or not sql.strip():
            raise QueryFailed("the query is empty")
        if len(sql) > self.limits.max_sql_chars:
            raise QueryFailed(f"the query is longer than {self.limits.max_sql_chars:,} characters")
        return self._result(("query", self._episode, sql))

    def _execute_unchecked(self, sql: str) -> QueryResult:
        """Run ``sql`` on this episode's connection WITHOUT the statement check. Trusted callers
        only: tests that show the instance's lockdown holds on its own."""
        return self._result(("unchecked", self._episode, sql))

    def _result(self, request: tuple) -> QueryResult:
        if self._closed:
            raise QueryFailed("the episode's database is closed")
        if not self._opened:
            self._database._open_episode(self._episode, self._views)
            self._opened = True
        columns, rows, elapsed_ms = self._database._call(request, self.limits.timeout_s * HARD_STOP_FACTOR)
        return QueryResult(tuple(columns), tuple(tuple(r) for r in rows), elapsed_ms)

    def close(self) -> None:
        self._closed = True
        self._database._close_episode(self._episode)
