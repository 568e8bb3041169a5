"""The source's own anomalies, profiled: what real (or reconstructed) data brings before any noise.

Real MIMIC-IV carries its own errors, and so does any lossy copy of it. A clean task resting on them
would be published as clean while its record already shows a duplicate, a row outside its stay or
a value no patient can have. ``audit_source`` runs the anomaly predicates of
``pipeline.noise.anomalies`` (the same ones that label noisy twins) over every table of the source,
and reports per table and kind how many rows are flagged, with examples. The flagged rows go to the
templates stage, which rejects a filling whose evidence touches one (``rests_on_source_anomaly``),
and to the noise stage's label check. The audit also names inputs known to be lossy or
reconstructed (``LOSSY_INPUTS``, recognised by checksum), so the manifest and the dataset card can
say so.

Loader integrity findings (``pipeline.integrity``, stored in the source's metadata) are carried
along when present: they cover references (orders, caregivers, codes) the anomaly predicates do not.
"""

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.noise.anomalies import DESCRIPTION, STATUS_OF, AnomalyKind, Flagged, anomalies_sql
from pipeline.schema import TABLES_BY_NAME
from pipeline.source_db import SourceInfo, read_source_info

EXAMPLES_PER_KIND = 3


@dataclass(frozen=True)
class LossyInput:
    path: str  # relative to its folder, as the loader fingerprints it
    sha256: str
    what: str


# Inputs known not to be the official data, by checksum. The demo's chartevents is missing from
# PhysioNet's open demo; the reconstruction tests use is lossy, and a release built on it must say so.
LOSSY_INPUTS: tuple[LossyInput, ...] = (
    LossyInput(
        "icu/chartevents.csv.gz", "c35b58be0b39a3af73e580e437d8366bbc933c4fbd43c3f1f5dd714331654332",
        "a LOSSY reconstruction of the MIMIC-IV demo 2.2 chartevents from its MEDS conversion (ODbL), not the "
        "official table: text values of non-numeric items, caregiver_id, storetime and warning are lost, "
        "numeric values were stored as float32, and hadm_id/stay_id were re-derived from icustays (2,991 rows "
        "fall outside every ICU stay and were given the nearest one)"),
)


@dataclass(frozen=True)
class AnomalyCount:
    table: str
    kind: str
    rows: int
    examples: tuple[tuple[int, str], ...]  # (row_id, what is wrong)

    @property
    def status(self) -> str:
        return STATUS_OF[AnomalyKind(self.kind)].value


@dataclass
class SourceAudit:
    fingerprint: str
    counts: list[AnomalyCount]
    rows_checked: dict[str, int]
    lossy_inputs: list[LossyInput] = field(default_factory=list)
    integrity: list[dict] = field(default_factory=list)  # the loader's findings, when it stored them

    @property
    def rows_flagged(self) -> int:
        return sum(c.rows for c in self.counts)

    def by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.counts:
            out[c.kind] = out.get(c.kind, 0) + c.rows
        return dict(sorted(out.items()))

    def to_dict(self) -> dict:
        return {"fingerprint": self.fingerprint, "rows_flagged": self.rows_flagged, "by_kind": self.by_kind(),
                "counts": [{**asdict(c), "status": c.status} for c in self.counts], "rows_checked": self.rows_checked,
                "lossy_inputs": [asdict(i) for i in self.lossy_inputs], "integrity": self.integrity}

    @classmethod
    def from_dict(cls, d: Mapping) -> "SourceAudit":
        return cls(d["fingerprint"],
                   [AnomalyCount(c["table"], c["kind"], c["rows"], tuple(tuple(e) for e in c["examples"]))
                    for c in d["counts"]],
                   dict(d["rows_checked"]), [LossyInput(**i) for i in d.get("lossy_inputs", [])],
                   list(d.get("integrity", [])))

    def markdown(self) -> str:
        if not self.counts:
            return "No anomalies: every table passes every check."
        lines = ["| table | anomaly | rows | status it supports | example |", "| --- | --- | ---: | --- | --- |"]
        for c in self.counts:
            example = f"row {c.examples[0][0]}: {c.examples[0][1]}" if c.examples else ""
            lines.append(f"| {c.table} | {c.kind} | {c.rows:,} | {c.status} | {example.replace('|', '/')} |")
        return "\n".join(lines)


def lossy_inputs(info: SourceInfo) -> list[LossyInput]:
    """The known lossy or reconstructed inputs among the files the source was loaded from."""
    files = {(f.get("path"), f.get("sha256")) for f in info.details.get("files", [])}
    return [i for i in LOSSY_INPUTS if (i.path, i.sha256) in files]


def audit_source(con: duckdb.DuckDBPyConnection, *, examples: int = EXAMPLES_PER_KIND) -> tuple[SourceAudit, Flagged]:
    """Profile the source's anomalies: the audit, and the flagged rows (table -> kind -> row ids)."""
    info = read_source_info(con)
    present = {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main'").fetchall()}
    counts, flagged, checked = [], {}, {}
    for name in sorted(present & set(TABLES_BY_NAME)):
        if TABLES_BY_NAME[name].dictionary:
            continue
        checked[name] = con.execute(f'SELECT count(*) FROM main."{name}"').fetchone()[0]
        sql = anomalies_sql(name)
        if sql is None:
            continue
        rows = con.execute(f"SELECT kind, row_id, detail FROM ({sql}) ORDER BY kind, row_id").fetchall()
        by_kind: dict[str, list[tuple[int, str]]] = {}
        for kind, row_id, detail in rows:
            by_kind.setdefault(kind, []).append((int(row_id), detail))
        for kind in AnomalyKind:
            found = by_kind.get(kind.value)
            if not found:
                continue
            ids = frozenset(r for r, _ in found)
            flagged.setdefault(name, {})[kind] = ids
            counts.append(AnomalyCount(name, kind.value, len(ids), tuple(found[:examples])))
    from pipeline.integrity import read_integrity

    stored = read_integrity(con)
    integrity = [f.to_json() for f in stored.findings] if stored else []
    return SourceAudit(info.fingerprint, counts, checked, lossy_inputs(info), integrity), flagged


FLAGGED_SCHEMA = pa.schema([("table", pa.string()), ("kind", pa.string()), ("row_id", pa.int64())])


def write_audit(audit: SourceAudit, flagged: Flagged, json_path: Path, rows_path: Path) -> None:
    """The audit as JSON and the flagged rows as Parquet (table, kind, row_id), each written atomically."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = json_path.with_name(json_path.name + ".tmp")
    tmp.write_text(json.dumps(audit.to_dict(), indent=2, default=str) + "\n")
    tmp.replace(json_path)
    tables, kinds, ids = [], [], []
    for t in sorted(flagged):
        for kind in sorted(flagged[t]):
            for r in sorted(flagged[t][kind]):
                tables.append(t)
                kinds.append(kind.value)
                ids.append(r)
    tmp = rows_path.with_name(rows_path.name + ".tmp")
    pq.write_table(pa.table([tables, kinds, ids], schema=FLAGGED_SCHEMA), str(tmp))
    tmp.replace(rows_path)


def read_audit(json_path: Path) -> SourceAudit:
    return SourceAudit.from_dict(json.loads(Path(json_path).read_text()))


def read_flagged(rows_path: Path) -> Flagged:
    table = pq.read_table(str(rows_path))
    out: dict[str, dict[AnomalyKind, set[int]]] = {}
    for t, kind, row_id in zip(*(table.column(c).to_pylist() for c in ("table", "kind", "row_id"))):
        out.setdefault(t, {}).setdefault(AnomalyKind(kind), set()).add(row_id)
    return {t: {k: frozenset(v) for k, v in kinds.items()} for t, kinds in out.items()}


def flagged_row_set(flagged: Flagged) -> dict[str, frozenset[int]]:
    """table -> every flagged row id, whatever the kind."""
    return {t: frozenset().union(*kinds.values()) for t, kinds in flagged.items()}


def audit_chart(audit: SourceAudit, path: Path) -> Path:
    """A bar chart of flagged rows per table and kind (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{c.table} · {c.kind}" for c in audit.counts] or ["(none)"]
    values = [c.rows for c in audit.counts] or [0]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(labels) + 1.2))
    ax.barh(labels[::-1], values[::-1], color="#b5523b")
    ax.set_xscale("symlog")
    ax.set_xlabel("rows flagged (log scale)")
    ax.set_title(f"Source anomalies: {audit.rows_flagged:,} rows flagged")
    for i, v in enumerate(values[::-1]):
        ax.text(v, i, f" {v:,}", va="center", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(str(path), dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


DESCRIPTIONS = {k.value: v for k, v in DESCRIPTION.items()}
