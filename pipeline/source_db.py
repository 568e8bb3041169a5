"""The source database file: atomic writes, recorded provenance, row counts.

Both the MIMIC-IV loader and the synthetic generator write their database through
``atomic_database``: the tables go into a temporary file next to the target, which replaces the
target only once everything is written and checked. A failed build never leaves a half-written
database and never replaces a good one.

Provenance lives in the table ``_robustgym_meta`` (key, value): the source kind, the input
fingerprint, the schema and builder versions. Tables whose names start with ``_robustgym`` are
bookkeeping, never MIMIC-IV data.
"""

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.schema import TABLES

META_TABLE = "_robustgym_meta"


@dataclass(frozen=True)
class SourceInfo:
    kind: str  # a vocabulary.SourceKind value
    fingerprint: str  # sha256 over the inputs (files or generator parameters) and versions
    details: dict  # what went into the fingerprint, for humans and manifests


@contextmanager
def atomic_database(target: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """Yield a connection to a fresh temporary database that becomes ``target`` on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    for stale in (tmp, tmp.with_name(tmp.name + ".wal")):
        stale.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        yield con
        con.execute("CHECKPOINT")
        con.close()
        os.replace(tmp, target)
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)
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
