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

Threads are DuckDB's default (the core count) unless a reader asks for fewer: one whose work is
thousands of statements of a millisecond or two (a noise level's proofs and label checks) spends
about a quarter more CPU on them with a second thread than with one, and gains no wall time, since
such a statement has too little to share out (``SMALL_STATEMENT_THREADS``). Like the memory limit,
threads are a setting of the database instance, which every connection of one process to the same
file shares while any is open: a reader that asks for fewer opens its connection when no other
reader of the file is open in its process (a noise level's step opens one at a time).
"""

import os
import tempfile
from pathlib import Path

import duckdb

MEMORY_LIMIT_ENV = "ROBUSTGYM_DUCKDB_MEMORY_LIMIT"
DEFAULT_MEMORY_LIMIT = "4GB"
# Measured on the demo (benchmarks/README.md, twenty-fifth session): the record level's 6,200 patched
# statements took 10.4-12.0 s of CPU on one thread against 14.5-16.3 s on two.
SMALL_STATEMENT_THREADS = 1


def memory_limit() -> str:
    """The configured limit: ``ROBUSTGYM_DUCKDB_MEMORY_LIMIT`` or the default."""
    return os.environ.get(MEMORY_LIMIT_ENV, "").strip() or DEFAULT_MEMORY_LIMIT


def spill_directory() -> Path:
    """This process's folder for DuckDB's spilled pages (DuckDB creates it on first spill)."""
    return Path(tempfile.gettempdir()) / f"robustgym-duckdb-{os.getpid()}"


def bound(con: duckdb.DuckDBPyConnection, *, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """``con`` with the pipeline's memory limit and spill folder, and no progress bar on stderr;
    ``threads``, if given, caps DuckDB's threads (default: the core count)."""
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        con.execute(f"SET threads = {int(threads)}")
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


def open_read_only(path: Path | str, *, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the database at ``path``, bounded (``bound``)."""
    return bound(duckdb.connect(str(path), read_only=True), threads=threads)
