"""Integrity of a source database: repeated natural keys and references that name no row.

MIMIC-IV enforces neither its natural keys nor its foreign keys, and the real data carries some of
both kinds of defect (the demo's emar names orders its poe table lacks). Loading therefore reports
them rather than refusing them; ``strict`` callers turn the report into an error. Everything checked
is declared in ``pipeline/schema.py``: each table's ``key`` and its ``all_references`` (the
subject/admission/stay ``links`` plus item ids, ICD codes, orders, providers and caregivers).

Finding kinds (``FindingKind``):

- ``key_duplicate``: rows whose natural key an earlier row already has. ``count`` = rows minus
  distinct keys (what the source contract counts); ``groups`` = keys held by more than one row.
- ``dangling_link``: rows whose non-NULL reference names no row of the target table (an admission
  of a patient ``patients`` lacks). ``distinct`` = how many different values do so.
- ``link_mismatch``: the referenced row exists but disagrees with the row on a link both carry (a
  chart row's ``stay_id`` belongs to another admission than its ``hadm_id``).

A reference whose target table is absent (a load with missing tables) cannot be checked and is
listed under ``skipped``. Findings are stored in the database's ``_robustgym_meta`` under the key
``integrity`` as JSON (``IntegrityReport.to_json``), where the natural-noise audit reads them.

``check_integrity`` runs one query per key and per reference over an open connection: plain
functions, no Dagster, usable on any source database (the loader's, a synthetic one).
"""

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from enum import StrEnum
from typing import Any

import duckdb

from pipeline.schema import ROW_ID, TABLES, TABLES_BY_NAME, Reference, Table

META_KEY = "integrity"
FORMAT_VERSION = 1
EXAMPLES = 5  # per finding: enough to look one up, few enough to read


class FindingKind(StrEnum):
    KEY_DUPLICATE = "key_duplicate"
    DANGLING_LINK = "dangling_link"
    LINK_MISMATCH = "link_mismatch"


@dataclass(frozen=True)
class Finding:
    table: str
    columns: tuple[str, ...]  # the key, or the referencing column(s)
    kind: FindingKind
    count: int  # rows affected (for keys: rows beyond the first of their key)
    examples: tuple[dict, ...]  # the first rows by row_id, JSON-safe values
    target: str | None = None  # "patients(subject_id)" for references
    distinct: int | None = None  # dangling: distinct values naming nothing; duplicates: keys repeated
    detail: str = ""  # link_mismatch: which link disagrees

    @property
    def column(self) -> str:
        return ", ".join(self.columns)

    @property
    def where(self) -> str:
        return f"{self.table} ({self.column})" if self.kind is FindingKind.KEY_DUPLICATE else \
            f"{self.table}.{self.column}"

    def what(self) -> str:
        """What was found, without where: how many rows, and the first example."""
        n = f"{self.count:,} row{'s' if self.count != 1 else ''}"
        example = f"; e.g. {_show(self.examples[0])}" if self.examples else ""
        if self.kind is FindingKind.KEY_DUPLICATE:
            keys = f" ({self.distinct:,} key{'s' if self.distinct != 1 else ''} repeated)" if self.distinct else ""
            return f"{n} repeat the natural key of an earlier row{keys}{example}"
        if self.kind is FindingKind.DANGLING_LINK:
            values = f" ({self.distinct:,} distinct value{'s' if self.distinct != 1 else ''})" if self.distinct else ""
            return f"{n} name no row of {self.target}{values}{example}"
        return f"{n} point to a {self.target} row whose {self.detail}{example}"

    def describe(self) -> str:
        """One line for a person: where, what, how many, and the first example."""
        return f"{self.where}: {self.what()}"

    def to_json(self) -> dict:
        out = {"table": self.table, "column": self.column, "columns": list(self.columns), "kind": self.kind.value,
               "count": self.count, "examples": list(self.examples)}
        if self.target is not None:
            out["target"] = self.target
        if self.distinct is not None:
            out["distinct"] = self.distinct
        if self.detail:
            out["detail"] = self.detail
        return out

    @classmethod
    def from_json(cls, data: dict) -> "Finding":
        return cls(data["table"], tuple(data["columns"]), FindingKind(data["kind"]), int(data["count"]),
                   tuple(data.get("examples") or ()), data.get("target"), data.get("distinct"),
                   data.get("detail", ""))


@dataclass(frozen=True)
class IntegrityReport:
    findings: tuple[Finding, ...]
    checked: int  # keys and references checked
    skipped: tuple[dict, ...] = field(default=())  # references whose target table is absent

    def __bool__(self) -> bool:  # truthy when something was found
        return bool(self.findings)

    def to_json(self) -> dict:
        return {"version": FORMAT_VERSION, "checked": self.checked,
                "findings": [f.to_json() for f in self.findings], "skipped": list(self.skipped)}

    @classmethod
    def from_json(cls, data: dict) -> "IntegrityReport":
        return cls(tuple(Finding.from_json(f) for f in data.get("findings") or ()), int(data.get("checked", 0)),
                   tuple(data.get("skipped") or ()))

    def by_kind(self) -> dict[FindingKind, int]:
        """Rows affected per kind (all kinds present, zero included)."""
        return {k: sum(f.count for f in self.findings if f.kind is k) for k in FindingKind}


# ---------------------------------------------------------------- the checks


def check_integrity(con: duckdb.DuckDBPyConnection, tables: Iterable[str] | None = None, *,
                    progress: Callable[[str], None] | None = None) -> IntegrityReport:
    """Check every natural key and reference of the MIMIC-IV tables present (or of ``tables``)."""
    present = _present(con)
    wanted = present if tables is None else present & set(tables)
    findings: list[Finding] = []
    skipped: list[dict] = []
    checked = 0
    for t in TABLES:
        if t.name not in wanted:
            continue
        if t.key:
            checked += 1
            findings += _key_duplicates(con, t)
        for r in t.all_references:
            if r.table not in present:
                skipped.append({"table": t.name, "column": ", ".join(r.columns), "target": _target(r),
                                "reason": f"{r.table} is not loaded"})
                continue
            checked += 1
            findings += _dangling(con, t, r)
            findings += _mismatches(con, t, r)
        if progress:
            progress(f"integrity: {t.name} checked")
    return IntegrityReport(tuple(findings), checked, tuple(skipped))


def _present(con: duckdb.DuckDBPyConnection) -> set[str]:
    names = {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main'").fetchall()}
    return names & TABLES_BY_NAME.keys()


def _key_duplicates(con: duckdb.DuckDBPyConnection, t: Table) -> list[Finding]:
    key = ", ".join(_q(c) for c in t.key)
    # GROUP BY treats NULLs as equal, like the source contract's DISTINCT does.
    groups = f"SELECT {key}, count(*) AS n, min({ROW_ID}) AS first FROM {_q(t.name)} GROUP BY ALL"
    extra, repeated = con.execute(f"SELECT coalesce(sum(n - 1), 0), count(*) FILTER (WHERE n > 1) "
                                  f"FROM ({groups})").fetchone()
    if not extra:
        return []
    rows = con.execute(f"SELECT * FROM ({groups}) WHERE n > 1 ORDER BY first LIMIT {EXAMPLES}").fetchall()
    examples = []
    for row in rows:
        values = dict(zip(t.key, (_json(v) for v in row[:len(t.key)])))
        match = " AND ".join(f"{_q(c)} IS NOT DISTINCT FROM ?" for c in t.key)
        ids = [r[0] for r in con.execute(f"SELECT {ROW_ID} FROM {_q(t.name)} WHERE {match} ORDER BY {ROW_ID} "
                                         f"LIMIT {EXAMPLES}", list(row[:len(t.key)])).fetchall()]
        examples.append({**values, "rows": int(row[len(t.key)]), "row_ids": ids})
    return [Finding(t.name, t.key, FindingKind.KEY_DUPLICATE, int(extra), tuple(examples), distinct=int(repeated))]


def _dangling(con: duckdb.DuckDBPyConnection, t: Table, r: Reference) -> list[Finding]:
    cols = [f"x.{_q(c)}" for c in r.columns]
    bad = (f"SELECT x.{ROW_ID}, {', '.join(cols)} FROM {_q(t.name)} x "
           f"WHERE {' AND '.join(f'{c} IS NOT NULL' for c in cols)} AND NOT EXISTS (SELECT 1 FROM {_q(r.table)} y "
           f"WHERE {' AND '.join(f'y.{_q(tc)} = x.{_q(c)}' for c, tc in zip(r.columns, r.target_columns))})")
    count, distinct = con.execute(f"SELECT count(*), count(DISTINCT ({', '.join(_q(c) for c in r.columns)})) "
                                  f"FROM ({bad})").fetchone()
    if not count:
        return []
    rows = con.execute(f"SELECT * FROM ({bad}) ORDER BY {ROW_ID} LIMIT {EXAMPLES}").fetchall()
    examples = tuple({ROW_ID: row[0], **dict(zip(r.columns, (_json(v) for v in row[1:])))} for row in rows)
    return [Finding(t.name, r.columns, FindingKind.DANGLING_LINK, int(count), examples, _target(r), int(distinct))]


def _mismatches(con: duckdb.DuckDBPyConnection, t: Table, r: Reference) -> list[Finding]:
    """The referenced row's own links (its subject, its admission) must agree with the row's."""
    target = TABLES_BY_NAME[r.table]
    shared = [c for c, linked in target.links.items()
              if linked != r.table and c not in r.columns and t.links.get(c) == linked]
    out = []
    on = " AND ".join(f"y.{_q(tc)} = x.{_q(c)}" for c, tc in zip(r.columns, r.target_columns))
    for c in shared:
        # A row without the link (NULL) cannot disagree; a referenced row without it can.
        bad = (f"SELECT x.{ROW_ID}, {', '.join(f'x.{_q(k)}' for k in r.columns)}, x.{_q(c)}, y.{_q(c)} AS theirs "
               f"FROM {_q(t.name)} x JOIN {_q(r.table)} y ON {on} "
               f"WHERE x.{_q(c)} IS NOT NULL AND x.{_q(c)} IS DISTINCT FROM y.{_q(c)}")
        count = con.execute(f"SELECT count(DISTINCT {ROW_ID}) FROM ({bad})").fetchone()[0]
        if not count:
            continue
        rows = con.execute(f"SELECT * FROM ({bad}) ORDER BY {ROW_ID} LIMIT {EXAMPLES}").fetchall()
        examples = tuple({ROW_ID: row[0], **dict(zip(r.columns, (_json(v) for v in row[1:-2]))),
                          c: _json(row[-2]), f"{r.table}.{c}": _json(row[-1])} for row in rows)
        out.append(Finding(t.name, r.columns, FindingKind.LINK_MISMATCH, int(count), examples, _target(r),
                           detail=f"{c} differs from the row's own {c}"))
    return out


# ---------------------------------------------------------------- stored in the source database


def write_integrity(con: duckdb.DuckDBPyConnection, report: IntegrityReport) -> None:
    """Store the report in ``_robustgym_meta`` (the table must exist: ``source_db.write_source_info``)."""
    from pipeline.source_db import META_TABLE

    con.execute(f"DELETE FROM {META_TABLE} WHERE key = ?", [META_KEY])
    con.execute(f"INSERT INTO {META_TABLE} VALUES (?, ?)", [META_KEY, json.dumps(report.to_json(), sort_keys=True)])


def read_integrity(con: duckdb.DuckDBPyConnection) -> IntegrityReport | None:
    """The stored report, or None for a database built without one (older loads, synthetic sources)."""
    from pipeline.source_db import META_TABLE

    try:
        row = con.execute(f"SELECT value FROM {META_TABLE} WHERE key = ?", [META_KEY]).fetchone()
    except duckdb.CatalogException:
        return None
    return IntegrityReport.from_json(json.loads(row[0])) if row else None


# ---------------------------------------------------------------- helpers


def _target(r: Reference) -> str:
    return f"{r.table}({', '.join(r.target_columns)})"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _json(value: Any) -> Any:
    if isinstance(value, (datetime, date, time)):
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


def _show(example: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in example.items())
