"""How much memory the pipeline's DuckDB connections may hold, and where they spill.

DuckDB's default ``memory_limit`` is 80% of the machine's RAM per database instance: its buffer
pool keeps the blocks it has read, and a sort or a hash aggregate grows to that limit before it
spills. Two workers are two processes, each allowed 80%; and at 365K synthetic patients the base
database's content digest (an ``ORDER BY row_id`` over 243M rows) alone reached 10.9 GiB. So every
connection the pipeline opens on a source database is held to ``memory_limit`` (default 4GB,
``ROBUSTGYM_DUCKDB_MEMORY_LIMIT`` changes it, e.g. ``8GB``) and spills into a folder of its own
process under the system's temporary folder: DuckDB's default for a file database is a folder next
to the file, which for a release's base database would be inside the release being written.

A limit changes how DuckDB plans and spills, never a query's result: outputs are the same bytes.

Threads are DuckDB's default (the core count), except for a reader whose work is thousands of
statements of a millisecond or two (a noise level's builder, label check and re-check:
``small_statement_reader``). Such a statement is mostly planning and optimizing, which a second
thread cannot share out: on the demo, the record level's statements took about a third more CPU,
and more wall time too, on two threads than on one (``SMALL_STATEMENT_THREADS``). Threads, like the
memory limit, are a setting of DuckDB's instance of a file, which every connection of one process to
that file shares while any is open: while a small-statement reader is open, the process's other
readers of the file run on its one thread too (a noise level's step opens its readers one at a
time), and the reader resets the setting when it closes.
"""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

MEMORY_LIMIT_ENV = "ROBUSTGYM_DUCKDB_MEMORY_LIMIT"
DEFAULT_MEMORY_LIMIT = "4GB"
# Measured on the demo (benchmarks/README.md, twenty-fifth session): the record level's 6,200 patched
# statements, replayed, took 10.4-12.0 s of CPU (and of wall) on one thread against 14.5-16.3 s of CPU
# (13.5-15.2 s of wall) on two.
SMALL_STATEMENT_THREADS = 1


def memory_limit() -> str:
    """The configured limit: ``ROBUSTGYM_DUCKDB_MEMORY_LIMIT`` or the default."""
    return os.environ.get(MEMORY_LIMIT_ENV, "").strip() or DEFAULT_MEMORY_LIMIT


def spill_directory() -> Path:
    """This process's folder for DuckDB's spilled pages (DuckDB creates it on first spill)."""
    return Path(tempfile.gettempdir()) / f"robustgym-duckdb-{os.getpid()}"


def bound(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` with the pipeline's memory limit and spill folder, and no progress bar on stderr."""
    limit = memory_limit()
    try:
        con.execute(f"SET memory_limit = '{limit.replace(chr(39), '')}'")
    except duckdb.Error as exc:
        raise ValueError(f"{MEMORY_LIMIT_ENV}={limit!r} is not a DuckDB memory size (e.g. 2GB, 512MB): "
                         f"{str(exc).splitlines()[0]}") from None
    spill = str(spill_directory())
    # DuckDB refuses to move a temp folder already in use: another connection of this process to the
    # same database instance may have set it (to the same folder) and spilled there.
    if con.execute("SELECT current_setting('temp_directory')").fetchone()[0] != spill:
        con.execute(f"SET temp_directory = '{spill.replace(chr(39), chr(39) * 2)}'")
    con.execute("SET enable_progress_bar = false")
    return con


def open_read_only(path: Path | str) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the database at ``path``, bounded (``bound``)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return bound(con)
    except BaseException:
        con.close()
        raise


@contextmanager
def small_statement_reader(path: Path | str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the database at ``path`` (``open_read_only``) on
    ``SMALL_STATEMENT_THREADS`` threads, for thousands of millisecond statements; closed on exit, with
    the instance's threads reset for any other reader of the file this process still has open."""
    con = open_read_only(path)
    try:
        con.execute(f"SET threads = {SMALL_STATEMENT_THREADS}")
        yield con
    finally:
        try:
            con.execute("RESET threads")
        finally:
            con.close()
