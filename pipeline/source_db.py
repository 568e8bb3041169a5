"""The source database file: atomic writes, recorded provenance, row counts.

Both the MIMIC-IV loader and the synthetic generator write their database through
``atomic_database``: the tables go into a temporary file next to the target, which replaces the
target only once everything is written and checked. A failed build never leaves a half-written
database and never replaces a good one; a target that cannot be written (a folder, no permission, a
full disk) is a ``DatabaseWriteError`` naming it.

``content_digest`` identifies a database by its tables, not its bytes: DuckDB writes a random
identifier into every file header, so identical builds give different files with identical digests.

Provenance lives in the table ``_robustgym_meta`` (key, value): the source kind, the input
fingerprint, the schema and builder versions. Tables whose names start with ``_robustgym`` are
bookkeeping, never MIMIC-IV data.
"""

import errno
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.duckdb_memory import open_read_only
from pipeline.schema import ROW_ID, TABLES

META_TABLE = "_robustgym_meta"


@dataclass(frozen=True)
class SourceInfo:
    kind: str  # a vocabulary.SourceKind value
    fingerprint: str  # sha256 over the inputs (files or generator parameters) and versions
    details: dict  # what went into the fingerprint, for humans and manifests


class DatabaseWriteError(OSError):
    """The database could not be written to its target (a folder there, no permission, disk full);
    the message names the target and says that nothing there was replaced."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


# Why a write failed, by errno and as DuckDB words it, with what the user can do about it.
_WRITE_ERRNOS = {errno.ENOSPC: "No space left on device", errno.EFBIG: "File too large",
                 errno.EDQUOT: "Disk quota exceeded", errno.EROFS: "Read-only file system",
                 errno.EACCES: "Permission denied", errno.EPERM: "Operation not permitted"}
_WRITE_HINTS = {"No space left on device": "the disk is full",
                "File too large": "the disk is full or a file-size limit was reached",
                "Disk quota exceeded": "the disk quota is exhausted",
                "Permission denied": "check the permissions of the folder",
                "Operation not permitted": "check the permissions of the folder"}


def check_target(target: Path) -> None:
    """Refuse a target that can never be replaced by a file, before any work is done."""
    if target.is_dir():
        raise DatabaseWriteError(errno.EISDIR, f"cannot write the database to {target}: it is a directory; "
                                               "name a file (e.g. source.duckdb) instead")


def _write_failure(target: Path, exc: BaseException, about: Path | None = None) -> DatabaseWriteError | None:
    """A clear error for a failed write to ``target``, or None if ``exc`` is not one. With ``about``,
    only an error naming that file counts (the body may fail on other files for other reasons)."""
    if isinstance(exc, DatabaseWriteError):
        return None
    if about is not None and about.name not in f"{exc} {getattr(exc, 'filename', '')} {getattr(exc, 'filename2', '')}":
        return None
    cause = None
    if isinstance(exc, OSError) and exc.errno in _WRITE_ERRNOS:
        cause = _WRITE_ERRNOS[exc.errno]
    elif isinstance(exc, duckdb.Error):
        cause = next((c for c in _WRITE_ERRNOS.values() if c in str(exc)), None)
        if cause is None and "Could not write file" in str(exc):
            cause = str(exc).strip().splitlines()[0]
    if cause is None:
        return None
    reason = cause + (f" ({_WRITE_HINTS[cause]})" if cause in _WRITE_HINTS else "")
    code = exc.errno if isinstance(exc, OSError) and exc.errno else errno.EIO
    return DatabaseWriteError(code, f"could not write the database {target}: {reason}; "
                                    "nothing was replaced")


@contextmanager
def atomic_database(target: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """Yield a connection to a fresh temporary database that becomes ``target`` on success.

    On any failure or interrupt the temporary file is removed and ``target`` keeps its bytes; a
    failure to write (a folder at the target, no permission, a full disk) is a ``DatabaseWriteError``
    naming the target.
    """
    target = Path(target)
    check_target(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for stale in (tmp, tmp.with_name(tmp.name + ".wal")):
            stale.unlink(missing_ok=True)
        con = duckdb.connect(str(tmp))
    except (OSError, duckdb.Error) as exc:
        failure = _write_failure(target, exc)
        if failure is None:
            raise
        raise failure from None  # the message says it all; tools that show the root cause show this
    try:
        yield con
        con.execute("CHECKPOINT")
        con.close()
        check_target(target)  # a folder may have appeared meanwhile: never rename over it
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            con.close()
        except duckdb.Error:
            pass  # an invalidated database cannot close cleanly; its file is removed below
        tmp.unlink(missing_ok=True)
        tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)
        failure = _write_failure(target, exc, about=tmp)
        if failure is not None:
            raise failure from None
        raise


def write_source_info(con: duckdb.DuckDBPyConnection, info: SourceInfo) -> None:
    con.execute(f"CREATE OR REPLACE TABLE {META_TABLE} (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
    rows = [("kind", info.kind), ("fingerprint", info.fingerprint),
            ("details", json.dumps(info.details, sort_keys=True))]
    con.executemany(f"INSERT INTO {META_TABLE} VALUES (?, ?)", rows)


def read_source_info(con: duckdb.DuckDBPyConnection) -> SourceInfo:
    try:
        meta = dict(con.execute(f"SELECT key, value FROM {META_TABLE}").fetchall())
    except duckdb.CatalogException:
        raise ValueError(f"database has no {META_TABLE} table: it was not built by robustgym") from None
    return SourceInfo(meta["kind"], meta["fingerprint"], json.loads(meta["details"]))


def row_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row count of every MIMIC-IV table present, in schema order."""
    present = {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall()}
    return {t.name: con.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0]
            for t in TABLES if t.name in present}


# ---------------------------------------------------------------- identity by content

DIGEST_METHOD = "rows-v1"
_DIGEST_BATCH = 1 << 16


# Tables are stored sorted by these columns, those of them a table has, then by row_id: a scan
# filtered on a patient (or on an item, which templates filter chart and lab events on) then touches
# few row groups, since each row group's min/max zone map covers a narrow range. row_id is not
# changed by the sort: it stays the row's position in its source file, which patches address.
STORAGE_ORDER = ("subject_id", "itemid")


def storage_order(column_names) -> str | None:
    """The ORDER BY a table's rows are stored in (quoted columns), or None to keep source order."""
    keys = [k for k in STORAGE_ORDER if k in column_names]
    return ", ".join(f'"{k}"' for k in [*keys, ROW_ID]) if keys else None


# Dictionary columns that questions name things by. Templates, proofs and the label check look a
# title up by equality thousands of times, and a dictionary is as large in the demo as in the full
# MIMIC-IV (d_icd_diagnoses: 110K titles in one row group, which a zone map cannot skip): an ART index
# answers such a lookup without reading every title. An index is not content, so the content digest
# and the fingerprint do not see it.
LOOKUP_INDEXES = (("d_icd_diagnoses", "long_title"), ("d_icd_procedures", "long_title"),
                  ("d_items", "label"), ("d_labitems", "label"))


def index_lookups(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create the ``LOOKUP_INDEXES`` of the tables present; returns the indexes made (``table.column``)."""
    present = {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()}
    made = []
    for name, column in LOOKUP_INDEXES:
        if name in present:
            con.execute(f'CREATE INDEX IF NOT EXISTS "{name}_{column}" ON "{name}" ("{column}")')
            made.append(f"{name}.{column}")
    return made


def content_digest(db_path: Path) -> dict:
    """The database's identity by content: ``{"method", "sha256", "tables", "rows"}``.

    Every table of the ``main`` schema in name order contributes its name, its (column, type) list
    and, in ``row_id`` order (bookkeeping tables without one: all columns), the md5 of each row's
    JSON rendering. Streams the rows; memory does not grow with the database.
    """
    digest = hashlib.sha256(DIGEST_METHOD.encode())
    rows = 0
    with open_read_only(db_path) as con:
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' ORDER BY table_name").fetchall()]
        for name in tables:
            columns = con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
                "AND schema_name = 'main' AND table_name = ? ORDER BY column_index", [name]).fetchall()
            digest.update(f"\n{name}\n{columns!r}\n".encode())
            quoted = '"' + name.replace('"', '""') + '"'
            order = ROW_ID if any(c == ROW_ID for c, _ in columns) else "ALL"
            reader = con.sql(f"SELECT md5(CAST(to_json(t) AS VARCHAR)) FROM {quoted} AS t "
                             f"ORDER BY {order}").to_arrow_reader(_DIGEST_BATCH)
            for batch in reader:
                hashes = batch.column(0).to_pylist()
                digest.update("".join(hashes).encode())
                rows += len(hashes)
    return {"method": DIGEST_METHOD, "sha256": digest.hexdigest(), "tables": len(tables), "rows": rows}


def content_problem(db_path: Path, expected: dict | None) -> str | None:
    """Why ``db_path``'s content is not the one ``expected`` (a ``content_digest``) records; None when
    it is, or when nothing is recorded."""
    if not expected:
        return None
    if expected.get("method") != DIGEST_METHOD:
        return (f"the digest was computed with method {expected.get('method')!r}; this version computes "
                f"{DIGEST_METHOD!r}")
    try:
        got = content_digest(db_path)
    except (duckdb.Error, OSError) as exc:
        return f"{db_path} cannot be read as a DuckDB database: {exc}"
    if got["sha256"] == expected.get("sha256"):
        return None
    return (f"{db_path}: its tables differ from the release's base database (content digest "
            f"{got['sha256'][:12]}…, {got['tables']} tables, {got['rows']:,} rows; expected "
            f"{str(expected.get('sha256'))[:12]}…, {expected.get('tables')} tables, {expected.get('rows', 0):,} rows)")
