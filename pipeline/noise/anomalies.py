"""What makes a row of an EHR record anomalous, defined once for the audit and the labels.

A real hospital record carries its own errors, and a noisy twin adds one on purpose. Both are
recognised by the same predicates over the database as it is, with no knowledge of how a row got
there:

- ``key_duplicate``: two rows share the table's natural key (``pipeline.schema``);
- ``conflicting_values``: two rows record one fact (same patient, admission or stay, item and event
  time, ``row_roles.conflict_key``) with different values;
- ``dangling_link``: a patient, admission, ICU stay or item id that no row of its table holds;
- ``foreign_link``: a linked admission or stay that belongs to another patient (or stay to another
  admission);
- ``outside_encounter``: an event timed before the start or after the end of the admission or ICU
  stay it is linked to (no tolerance: the demo's own data never needs one for laboratory events);
- ``end_before_start``: an end time (discharge, ICU out time, ...) before its start;
- ``unusual_unit``: a unit other than the one the item is usually recorded in (the most frequent unit
  of that item in the database);
- ``outside_limits``: a value, in the item's usual unit, outside the physiological limits declared in
  ``pipeline.noise.physiology``.

``anomalous_rows_sql(kind, table, scope)`` gives the SQL listing ``(row_id, detail)`` of the
anomalous rows of a table, over the whole table (the source audit) or only over the rows in
``scope`` (a query returning row ids: a task's evidence, for its label). Each kind supports one
status (``STATUS_OF``), which is what the decidability rules read.
"""

import copy
from collections import ChainMap, Counter
from collections.abc import Iterator, Mapping
from datetime import date, datetime
from dataclasses import dataclass
from enum import StrEnum

from pipeline.noise.physiology import ENDS_AFTER, MEASURED_ITEMS
from pipeline.noise.row_roles import conflict_key, roles
from pipeline.schema import ROW_ID, TABLES_BY_NAME, table
from pipeline.vocabulary import Status


class AnomalyKind(StrEnum):
    KEY_DUPLICATE = "key_duplicate"
    CONFLICTING_VALUES = "conflicting_values"
    DANGLING_LINK = "dangling_link"
    FOREIGN_LINK = "foreign_link"
    OUTSIDE_ENCOUNTER = "outside_encounter"
    END_BEFORE_START = "end_before_start"
    UNUSUAL_UNIT = "unusual_unit"
    OUTSIDE_LIMITS = "outside_limits"


STATUS_OF: dict[AnomalyKind, Status] = {
    AnomalyKind.KEY_DUPLICATE: Status.CONFLICTING_EVIDENCE,
    AnomalyKind.CONFLICTING_VALUES: Status.CONFLICTING_EVIDENCE,
    AnomalyKind.DANGLING_LINK: Status.INCONSISTENT_RECORD,
    AnomalyKind.FOREIGN_LINK: Status.INCONSISTENT_RECORD,
    AnomalyKind.OUTSIDE_ENCOUNTER: Status.INCONSISTENT_RECORD,
    AnomalyKind.END_BEFORE_START: Status.IMPLAUSIBLE_VALUE,
    AnomalyKind.UNUSUAL_UNIT: Status.UNIT_INCONSISTENCY,
    AnomalyKind.OUTSIDE_LIMITS: Status.IMPLAUSIBLE_VALUE,
}

DESCRIPTION: dict[AnomalyKind, str] = {
    AnomalyKind.KEY_DUPLICATE: "two rows share the table's natural key",
    AnomalyKind.CONFLICTING_VALUES: "two rows record one fact (patient, admission/stay, item, time) with different values",
    AnomalyKind.DANGLING_LINK: "a patient, admission, ICU stay or item id that does not exist",
    AnomalyKind.FOREIGN_LINK: "a linked admission or ICU stay belongs to another patient or admission",
    AnomalyKind.OUTSIDE_ENCOUNTER: "timed outside the admission or ICU stay it is linked to",
    AnomalyKind.END_BEFORE_START: "an end time before its start time",
    AnomalyKind.UNUSUAL_UNIT: "a unit other than the item's usual unit in the database",
    AnomalyKind.OUTSIDE_LIMITS: "a value outside the item's physiological limits",
}


@dataclass(frozen=True)
class Encounter:
    """What an event row is linked to in time: an admission or an ICU stay."""

    link: str
    table: str
    key: str
    start: str
    end: str


ADMISSION = Encounter("hadm_id", "admissions", "hadm_id", "admittime", "dischtime")
ICU_STAY = Encounter("stay_id", "icustays", "stay_id", "intime", "outtime")

# Event tables that must lie inside their encounter: table -> (event time column, encounter).
ENCOUNTER_OF: dict[str, tuple[str, Encounter]] = {
    "labevents": ("charttime", ADMISSION),
    "microbiologyevents": ("charttime", ADMISSION),
    "prescriptions": ("starttime", ADMISSION),
    "pharmacy": ("starttime", ADMISSION),
    "emar": ("charttime", ADMISSION),
    "procedures_icd": ("chartdate", ADMISSION),
    "hcpcsevents": ("chartdate", ADMISSION),
    "icustays": ("intime", ADMISSION),
    "chartevents": ("charttime", ICU_STAY),
    "datetimeevents": ("charttime", ICU_STAY),
    "inputevents": ("starttime", ICU_STAY),
    "ingredientevents": ("starttime", ICU_STAY),
    "outputevents": ("charttime", ICU_STAY),
    "procedureevents": ("starttime", ICU_STAY),
}

# Where a link column points: entity table and its key.
LINK_TARGETS: dict[str, tuple[str, str]] = {
    "subject_id": ("patients", "subject_id"),
    "hadm_id": ("admissions", "hadm_id"),
    "stay_id": ("icustays", "stay_id"),
}
# Item ids resolved through a dictionary: table -> (column, dictionary, dictionary key).
ITEM_LINKS: dict[str, tuple[str, str, str]] = {
    "labevents": ("itemid", "d_labitems", "itemid"),
    "chartevents": ("itemid", "d_items", "itemid"),
    "datetimeevents": ("itemid", "d_items", "itemid"),
    "inputevents": ("itemid", "d_items", "itemid"),
    "ingredientevents": ("itemid", "d_items", "itemid"),
    "outputevents": ("itemid", "d_items", "itemid"),
    "procedureevents": ("itemid", "d_items", "itemid"),
}

# Tables whose rows carry a unit for an item: table -> (item column, unit column).
UNIT_OF: dict[str, tuple[str, str]] = {
    "labevents": ("itemid", "valueuom"),
    "chartevents": ("itemid", "valueuom"),
    "outputevents": ("itemid", "valueuom"),
    "inputevents": ("itemid", "amountuom"),
    "ingredientevents": ("itemid", "amountuom"),
    "procedureevents": ("itemid", "valueuom"),
}

# Measured values with declared limits: table -> (item column or None, value column, unit column or None).
VALUE_OF: dict[str, tuple[str | None, str, str | None]] = {
    "labevents": ("itemid", "valuenum", "valueuom"),
    "chartevents": ("itemid", "valuenum", "valueuom"),
    "omr": ("result_name", "result_value", None),
    "patients": (None, "anchor_age", None),
    "icustays": (None, "los", None),
}

# The value columns a conflicting pair of rows may disagree on (the fact they record).
def conflict_values(table_name: str) -> tuple[str, ...]:
    r = roles(table_name)
    keys = set(conflict_key(table_name)) | set(r.surrogate)
    mirrors = {text for _, text in r.mirrors}
    return tuple(c for c in r.facts if c not in keys and c not in mirrors)


def _scoped(alias: str, scope: str | None) -> str:
    return f"{alias}.{ROW_ID} IN ({scope})" if scope else "TRUE"


def _q(name: str) -> str:
    return f'"{name}"'


def _key_duplicate(t: str, scope: str | None, src: str | None = None) -> str | None:
    src = src or _q(t)
    key = TABLES_BY_NAME[t].key
    if not key or TABLES_BY_NAME[t].dictionary:
        return None
    cols = ", ".join(_q(k) for k in key)
    pick = f"SELECT DISTINCT {cols} FROM {src} AS s WHERE {_scoped('s', scope)}" if scope else None
    source = f"{src} AS x SEMI JOIN ({pick}) AS s USING ({cols})" if pick else f"{src} AS x"
    detail = " || ', ' || ".join(f"'{k} ' || coalesce(CAST(g.{_q(k)} AS VARCHAR), 'NULL')" for k in key)
    return (f"SELECT g.{ROW_ID}, 'shares ' || {detail} || ' with ' || (g.n - 1) || ' other row(s)' AS detail "
            f"FROM (SELECT x.*, count(*) OVER (PARTITION BY {', '.join('x.' + _q(k) for k in key)}) AS n "
            f"FROM {source} WHERE {' AND '.join(f'x.{_q(k)} IS NOT NULL' for k in key)}) AS g "
            f"WHERE g.n > 1 AND {_scoped('g', scope)}")


def _conflicting_values(t: str, scope: str | None, src: str | None = None) -> str | None:
    src = src or _q(t)
    if TABLES_BY_NAME[t].dictionary or t not in CONFLICT_TABLES:
        return None
    key, values = conflict_key(t), conflict_values(t)
    if not key or not values:
        return None
    cols = ", ".join(_q(k) for k in key)
    fact = "struct_pack(" + ", ".join(f"{_q(v)} := x.{_q(v)}" for v in values) + ")"
    pick = f"SELECT DISTINCT {cols} FROM {src} AS s WHERE {_scoped('s', scope)}" if scope else None
    source = f"{src} AS x SEMI JOIN ({pick}) AS s USING ({cols})" if pick else f"{src} AS x"
    return (f"WITH groups AS (SELECT {', '.join('x.' + _q(k) for k in key)} FROM {source} "
            f"GROUP BY ALL HAVING count(DISTINCT {fact}) > 1) "
            f"SELECT x.{ROW_ID}, 'another row of the same ' || '{'/'.join(key)}' || ' records a different "
            f"{'/'.join(values)}' AS detail FROM {src} AS x SEMI JOIN groups USING ({cols}) "
            f"WHERE {_scoped('x', scope)}")


# Conflicts are looked for where a pair of rows with the same patient, encounter, item and time can
# only be one fact recorded twice. Tables where concurrent rows are routine (several orders of one
# drug at one time, several outpatient readings a day) are left to key_duplicate.
CONFLICT_TABLES = frozenset({"labevents", "chartevents", "outputevents", "datetimeevents", "admissions",
                              "icustays", "patients"})


def _dangling_link(t: str, scope: str | None, src: str | None = None) -> str | None:
    src = src or _q(t)
    spec = TABLES_BY_NAME[t]
    parts = []
    for col, target in spec.links.items():
        entity, key = LINK_TARGETS[col]
        if target != entity or entity == t:
            continue
        parts.append(f"SELECT x.{ROW_ID}, '{col} ' || x.{_q(col)} || ' is not in {entity}' AS detail "
                     f"FROM {src} AS x WHERE x.{_q(col)} IS NOT NULL AND {_scoped('x', scope)} AND NOT EXISTS "
                     f"(SELECT 1 FROM {_q(entity)} AS e WHERE e.{_q(key)} = x.{_q(col)})")
    if t in ITEM_LINKS:
        col, dictionary, key = ITEM_LINKS[t]
        parts.append(f"SELECT x.{ROW_ID}, '{col} ' || x.{_q(col)} || ' is not in {dictionary}' AS detail "
                     f"FROM {src} AS x WHERE x.{_q(col)} IS NOT NULL AND {_scoped('x', scope)} AND NOT EXISTS "
                     f"(SELECT 1 FROM {_q(dictionary)} AS e WHERE e.{_q(key)} = x.{_q(col)})")
    return " UNION ALL ".join(parts) or None


def _foreign_link(t: str, scope: str | None, src: str | None = None) -> str | None:
    src = src or _q(t)
    cols = TABLES_BY_NAME[t].column_names
    parts = []
    if "hadm_id" in cols and "subject_id" in cols and t != "admissions":
        parts.append(f"SELECT x.{ROW_ID}, 'admission ' || x.hadm_id || ' belongs to patient ' || a.subject_id "
                     f"|| ', not ' || x.subject_id AS detail FROM {src} AS x JOIN admissions AS a "
                     f"ON a.hadm_id = x.hadm_id WHERE a.subject_id <> x.subject_id AND {_scoped('x', scope)}")
    if "stay_id" in cols and "hadm_id" in cols and t != "icustays":
        parts.append(f"SELECT x.{ROW_ID}, 'ICU stay ' || x.stay_id || ' belongs to admission ' || s.hadm_id "
                     f"|| ', not ' || x.hadm_id AS detail FROM {src} AS x JOIN icustays AS s "
                     f"ON s.stay_id = x.stay_id WHERE s.hadm_id <> x.hadm_id AND {_scoped('x', scope)}")
    return " UNION ALL ".join(parts) or None


def _outside_encounter(t: str, scope: str | None, src: str | None = None) -> str | None:
    src = src or _q(t)
    if t not in ENCOUNTER_OF:
        return None
    time_col, enc = ENCOUNTER_OF[t]
    is_date = table(t).column(time_col).type.upper() == "DATE"
    start = f"CAST(e.{enc.start} AS DATE)" if is_date else f"e.{enc.start}"
    end = f"CAST(e.{enc.end} AS DATE)" if is_date else f"e.{enc.end}"
    what = "admission" if enc is ADMISSION else "ICU stay"
    return (f"SELECT x.{ROW_ID}, '{time_col} ' || x.{_q(time_col)} || ' outside {what} ' || e.{enc.key} || ' (' "
            f"|| e.{enc.start} || ' to ' || e.{enc.end} || ')' AS detail FROM {src} AS x "
            f"JOIN {_q(enc.table)} AS e ON e.{enc.key} = x.{_q(enc.link)} "
            f"WHERE (x.{_q(time_col)} < {start} OR x.{_q(time_col)} > {end}) AND {_scoped('x', scope)}")


def _end_before_start(t: str, scope: str | None, src: str | None = None) -> str | None:
    src = src or _q(t)
    parts = [f"SELECT x.{ROW_ID}, '{end} ' || x.{_q(end)} || ' before {start} ' || x.{_q(start)} AS detail "
             f"FROM {src} AS x WHERE x.{_q(end)} < x.{_q(start)} AND {_scoped('x', scope)}"
             for (tab, end), start in ENDS_AFTER.items() if tab == t]
    return " UNION ALL ".join(parts) or None


USUAL_UNITS_TABLE = "_rg_usual_units"  # a temporary table of usual_units_sql(), when a caller made one


def usual_unit_sql(t: str, items: str | None = None, *, precomputed: bool = False) -> str:
    """(item, unit, margin): the most frequent non-null unit of each item (ties: the first unit by name)
    and by how many rows it leads the next one. ``precomputed``: read them from ``USUAL_UNITS_TABLE``."""
    item, unit = UNIT_OF[t]
    if precomputed:
        where = f" AND item IN (SELECT CAST(i AS VARCHAR) FROM ({items}) AS _i(i))" if items else ""
        return f"SELECT item, unit, margin FROM temp.{USUAL_UNITS_TABLE} WHERE tbl = '{t}'{where}"
    where = f"{_q(unit)} IS NOT NULL" + (f" AND {_q(item)} IN ({items})" if items else "")
    return (f"SELECT CAST({_q(item)} AS VARCHAR) AS item, arg_max({_q(unit)}, struct_pack(n := n, u := u)) AS unit, "
            f"{_MARGIN} AS margin FROM "
            f"(SELECT {_q(item)}, {_q(unit)}, count(*) AS n, -rank() OVER (PARTITION BY {_q(item)} ORDER BY "
            f"{_q(unit)}) AS u FROM {_q(t)} WHERE {where} GROUP BY {_q(item)}, {_q(unit)}) GROUP BY 1")


_MARGIN = "list_sort(list(n), 'DESC')[1] - coalesce(list_sort(list(n), 'DESC')[2], 0)"


def all_usual_units_sql(tables=None) -> str:
    """Every item's usual unit in every table with units (or in ``tables``): what ``USUAL_UNITS_TABLE`` holds."""
    parts = []
    for t, (item, unit) in UNIT_OF.items():
        if tables is not None and t not in tables:
            continue
        parts.append(
            f"SELECT '{t}' AS tbl, CAST({_q(item)} AS VARCHAR) AS item, "
            f"arg_max({_q(unit)}, struct_pack(n := n, u := u)) AS unit, "
            f"{_MARGIN} AS margin FROM "
            f"(SELECT {_q(item)}, {_q(unit)}, count(*) AS n, -rank() OVER (PARTITION BY {_q(item)} ORDER BY "
            f"{_q(unit)}) AS u FROM {_q(t)} WHERE {_q(unit)} IS NOT NULL GROUP BY {_q(item)}, {_q(unit)}) "
            f"GROUP BY {_q(item)}")
    return " UNION ALL ".join(parts)


def _unusual_unit(t: str, scope: str | None, precomputed: bool = False, src: str | None = None) -> str | None:
    src = src or _q(t)
    if t not in UNIT_OF:
        return None
    item, unit = UNIT_OF[t]
    items = f"SELECT {_q(item)} FROM {src} AS s WHERE {_scoped('s', scope)}" if scope else None
    usual = usual_unit_sql(t, items, precomputed=precomputed)
    return (f"SELECT x.{ROW_ID}, 'unit ' || x.{_q(unit)} || ' where item ' || x.{_q(item)} || ' is usually in ' "
            f"|| u.unit AS detail FROM {src} AS x JOIN ({usual}) AS u ON u.item = CAST(x.{_q(item)} AS VARCHAR) "
            f"WHERE x.{_q(unit)} IS NOT NULL AND x.{_q(unit)} <> u.unit AND {_scoped('x', scope)}")


def usual_of(unit_counts: Mapping[str, int]) -> tuple[str | None, int]:
    """(usual unit, its lead over the next) from an item's rows per non-null unit, as ``usual_unit_sql``
    decides: the most rows, ties to the first unit by name; (None, 0) for an item without units."""
    ranked = sorted(((-n, u) for u, n in unit_counts.items() if n > 0))
    if not ranked:
        return None, 0
    return ranked[0][1], -ranked[0][0] + (ranked[1][0] if len(ranked) > 1 else 0)


def _limits_cases(t: str) -> list[tuple[str | None, float, float]]:
    """(item literal or None, low, high) for each declared item of table ``t``."""
    out = []
    for m in MEASURED_ITEMS:
        for tab, item in m.items:
            if tab == t:
                lo, hi = m.plausible
                out.append((None if item.startswith("column:") else item, lo, hi))
    return out


def _outside_limits(t: str, scope: str | None, precomputed: bool = False, src: str | None = None) -> str | None:
    src = src or _q(t)
    if t not in VALUE_OF:
        return None
    item, value, unit = VALUE_OF[t]
    cases = _limits_cases(t)
    if not cases:
        return None
    number = f"TRY_CAST(x.{_q(value)} AS DOUBLE)"
    if item is None:
        (_, lo, hi), = cases
        cond = f"({number} < {lo} OR {number} > {hi})"
        return (f"SELECT x.{ROW_ID}, '{value} ' || x.{_q(value)} || ' outside [{lo}, {hi}]' AS detail "
                f"FROM {src} AS x WHERE {cond} AND {_scoped('x', scope)}")
    numeric_item = table(t).column(item).type.upper() in ("INTEGER", "BIGINT", "SMALLINT")
    rows = ", ".join(f"({c[0] if numeric_item else repr(c[0])}, {c[1]}, {c[2]})" for c in cases)
    unit_join, unit_cond = "", ""
    if unit is not None and t in UNIT_OF:
        items = f"SELECT {_q(item)} FROM {src} AS s WHERE {_scoped('s', scope)}" if scope else None
        unit_join = (f" LEFT JOIN ({usual_unit_sql(t, items, precomputed=precomputed)}) AS u "
                     f"ON u.item = CAST(x.{_q(item)} AS VARCHAR)")
        # Limits are in the item's usual unit; a row in another unit is an unusual_unit anomaly instead.
        unit_cond = f" AND (x.{_q(unit)} IS NULL OR u.unit IS NULL OR x.{_q(unit)} = u.unit)"
    return (f"SELECT x.{ROW_ID}, '{value} ' || x.{_q(value)} || ' outside [' || lim.lo || ', ' || lim.hi || ']' "
            f"AS detail FROM {src} AS x JOIN (VALUES {rows}) AS lim(item, lo, hi) ON lim.item = x.{_q(item)}"
            f"{unit_join} WHERE ({number} < lim.lo OR {number} > lim.hi){unit_cond} AND {_scoped('x', scope)}")


_BUILDERS = {
    AnomalyKind.KEY_DUPLICATE: _key_duplicate,
    AnomalyKind.CONFLICTING_VALUES: _conflicting_values,
    AnomalyKind.DANGLING_LINK: _dangling_link,
    AnomalyKind.FOREIGN_LINK: _foreign_link,
    AnomalyKind.OUTSIDE_ENCOUNTER: _outside_encounter,
    AnomalyKind.END_BEFORE_START: _end_before_start,
    AnomalyKind.UNUSUAL_UNIT: _unusual_unit,
    AnomalyKind.OUTSIDE_LIMITS: _outside_limits,
}


def anomalous_rows_sql(kind: AnomalyKind, table_name: str, scope: str | None = None, *,
                       precomputed_units: bool = False, rows_from: str | None = None) -> str | None:
    """SQL giving ``(row_id, detail)`` of the rows of ``table_name`` with anomaly ``kind`` (None when the
    kind cannot occur in that table). ``scope``: a query returning the row ids to look at (all rows if
    None); other rows are still read where the predicate needs them (a duplicate's partner, an item's
    usual unit). ``precomputed_units``: items' usual units come from ``USUAL_UNITS_TABLE`` (made once
    per connection) instead of being counted again. ``rows_from``: a relation holding the table's
    rows that matter (the scope and every row sharing a patient with it) to read instead of the table."""
    table(table_name)
    kind = AnomalyKind(kind)
    if kind in (AnomalyKind.UNUSUAL_UNIT, AnomalyKind.OUTSIDE_LIMITS):
        return _BUILDERS[kind](table_name, scope, precomputed_units, src=rows_from)
    return _BUILDERS[kind](table_name, scope, src=rows_from)


def kinds_for(table_name: str) -> Iterator[AnomalyKind]:
    """The anomaly kinds that can occur in ``table_name``."""
    for kind in AnomalyKind:
        if anomalous_rows_sql(kind, table_name) is not None:
            yield kind


def anomalies_sql(table_name: str, scope: str | None = None, kinds=tuple(AnomalyKind), *,
                  precomputed_units: bool = False, rows_from: str | None = None) -> str | None:
    """Every kind's anomalous rows of one table in one query: ``(kind, row_id, detail)``."""
    parts = []
    for kind in kinds:
        sql = anomalous_rows_sql(kind, table_name, scope, precomputed_units=precomputed_units, rows_from=rows_from)
        if sql is not None:
            parts.append(f"SELECT '{AnomalyKind(kind).value}' AS kind, * FROM ({sql})")
    return " UNION ALL ".join(parts) or None


Flagged = dict[str, dict[AnomalyKind, frozenset[int]]]


def flag_rows(con, tables) -> Flagged:
    """The anomalous rows of each of ``tables`` on the database as ``con`` sees it: table -> kind -> row ids."""
    out: Flagged = {}
    for name in sorted(tables):
        if name not in TABLES_BY_NAME or TABLES_BY_NAME[name].dictionary:
            continue
        sql = anomalies_sql(name)
        if sql is None:
            continue
        found: dict[AnomalyKind, set[int]] = {}
        for kind, row_id in con.execute(f"SELECT DISTINCT kind, row_id FROM ({sql})").fetchall():
            found.setdefault(AnomalyKind(kind), set()).add(int(row_id))
        if found:
            out[name] = {k: frozenset(v) for k, v in found.items()}
    return out


# ---------------------------------------------------------------- the same predicates, over rows in Python
#
# Labelling thousands of twins asks these questions of a few rows at a time, each time on another
# patched database; a query per kind costs more than the rows do. ``RowChecker`` answers them over
# rows already fetched, with what the predicates need from the rest of the database read once.
# tests/pipeline/noise/test_anomalies.py holds both forms to the same answers on the demo and the
# synthetic source.


ENTITY_FIELDS = {  # entity table -> (its id, the fields the predicates read, in RowChecker's tuples)
    "patients": ("subject_id", ()),
    "admissions": ("hadm_id", ("subject_id", "admittime", "dischtime")),
    "icustays": ("stay_id", ("hadm_id", "subject_id", "intime", "outtime")),
}
# entity table -> the RowChecker attribute holding its ids
_CHECKER_ATTRIBUTE = {"patients": "patients", "admissions": "admissions", "icustays": "stays"}
_GONE = object()


class _Overlay:
    """A patient set or an admission/stay dict with a few ids changed (``_GONE``: no longer there),
    read as the predicates read the original: ``in`` and ``get``."""

    def __init__(self, base, changed: dict):
        self.base, self.changed = base, changed

    def get(self, k, default=None):
        if k in self.changed:
            v = self.changed[k]
            return default if v is _GONE else v
        if isinstance(self.base, dict):
            return self.base.get(k, default)
        return True if k in self.base else default

    def __contains__(self, k) -> bool:
        return self.get(k, _GONE) is not _GONE


class RowChecker:
    """The anomaly predicates over fetched rows (dicts with ``row_id``), for one database.

    Built from the unpatched source: patients, admissions and stays (ids, owners, times), the
    dictionaries' item ids and every item's usual unit. Valid for a patched database as long as the
    patch leaves dictionaries alone; where it touches patients, admissions or stays, ``under`` gives
    the checker of the patched database (or None: the SQL decides), and where it could move an item's
    usual unit (``units_settled``), ``with_usual`` takes the units counted again.
    """

    def __init__(self, con):
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main'").fetchall()}
        entities = {t: con.execute(f"SELECT {', '.join((key, *fields))} FROM {t}").fetchall() if t in tables else []
                    for t, (key, fields) in ENTITY_FIELDS.items()}
        self.patients = {r[0] for r in entities["patients"]}
        self.admissions = {r[0]: r[1:] for r in entities["admissions"]}
        self.stays = {r[0]: r[1:] for r in entities["icustays"]}
        # Ids more than one row carries: the SQL joins each of their rows, a dict keeps one.
        self._shared_ids = {t: {k for k, n in Counter(r[0] for r in rows).items() if n > 1}
                            for t, rows in entities.items()}
        self.items = {d: {r[0] for r in con.execute(f'SELECT itemid FROM "{d}"').fetchall()}
                      for d in {d for _, d, _ in ITEM_LINKS.values()} if d in tables}
        self.usual: dict[tuple[str, str], tuple[str, int]] = {}
        present = [t for t in UNIT_OF if t in tables]
        if present:
            for t, item, unit, margin in con.execute(all_usual_units_sql(present)).fetchall():
                self.usual[(t, item)] = (unit, margin)
        self.limits: dict[tuple[str, str | None], tuple[float, float]] = {}
        for m in MEASURED_ITEMS:
            for tab, item in m.items:
                self.limits[(tab, None if item.startswith("column:") else item)] = m.plausible

    def under(self, changed: dict[str, tuple[list[dict], list[dict]]]) -> "RowChecker | None":
        """This checker on a database whose patient, admission or stay tables a patch touches: ``changed``
        maps such a table to (the rows the patch touches, as the source has them; those rows as the patch
        leaves them). None where an admission or stay id the patch touches would name more than one row,
        or is NULL: the SQL, which joins every row of an id, decides those (a patient is only looked up,
        so copies of a patient's row change nothing)."""
        under = copy.copy(self)
        for t, (before, after) in changed.items():
            key, fields = ENTITY_FIELDS[t]
            base = self.entity_ids(t)
            touched = {r[key] for r in before} | {r[key] for r in after}
            if None in touched or touched & self._shared_ids[t]:
                return None
            overlay: dict = {}
            for k in touched:
                left_alone = int(k in base) - sum(r[key] == k for r in before)  # its rows the patch leaves be
                now = [tuple(r[f] for f in fields) for r in after if r[key] == k]
                if not fields:  # only looked up (a patient): any row of the id keeps it there
                    overlay[k] = True if left_alone or now else _GONE
                elif left_alone + len(now) > 1:
                    return None
                elif left_alone:
                    overlay[k] = base[k]
                else:
                    overlay[k] = now[0] if now else _GONE
            setattr(under, _CHECKER_ATTRIBUTE[t], _Overlay(base, overlay))
        return under

    def entity_ids(self, t: str):
        """The ids of entity table ``t`` (patients: a set; admissions, stays: id -> the fields read)."""
        return getattr(self, _CHECKER_ATTRIBUTE[t])

    def with_usual(self, units: dict[tuple[str, str], tuple[str | None, int]]) -> "RowChecker":
        """This checker with these items' usual units (``usual_of``'s (unit, margin); (None, 0): the item
        has no unit any more) in place of the source's."""
        under = copy.copy(self)
        under.usual = ChainMap(units, self.usual)
        return under

    def units_settled(self, t: str, items, patched_rows: int) -> bool:
        if t not in UNIT_OF:
            return True
        leads = [self.usual.get((t, str(i)), (None, 0))[1] for i in items]
        return all(lead > 2 * patched_rows for lead in leads)

    def anomalies(self, t: str, rows: list[dict], scope: set[int]) -> list[tuple[AnomalyKind, int, str]]:
        """(kind, row_id, detail) for the rows in ``scope``; ``rows`` must hold every row sharing a
        patient with them (a duplicate's partner is one of those)."""
        out: list[tuple[AnomalyKind, int, str]] = []
        inside = [r for r in rows if r[ROW_ID] in scope]
        spec = TABLES_BY_NAME[t]
        if spec.dictionary:
            return out
        for key_cols, kind in ((spec.key, AnomalyKind.KEY_DUPLICATE),):
            if key_cols:
                groups: dict = {}
                for r in rows:
                    groups.setdefault(tuple(r.get(k) for k in key_cols), []).append(r)
                for r in inside:
                    k = tuple(r.get(c) for c in key_cols)
                    n = len(groups[k]) if None not in k else 1  # an unknown key duplicates nothing
                    if n > 1:
                        out.append((kind, r[ROW_ID], f"shares {', '.join(key_cols)} with {n - 1} other row(s)"))
        if t in CONFLICT_TABLES and conflict_key(t) and conflict_values(t):
            key, values = conflict_key(t), conflict_values(t)
            facts: dict = {}
            for r in rows:
                facts.setdefault(tuple(r.get(k) for k in key), set()).add(tuple(r.get(v) for v in values))
            for r in inside:
                k = tuple(r.get(c) for c in key)
                if None not in k and len(facts[k]) > 1:
                    out.append((AnomalyKind.CONFLICTING_VALUES, r[ROW_ID],
                                f"another row of the same {'/'.join(key)} records a different {'/'.join(values)}"))
        ids_of = {entity: self.entity_ids(entity) for entity in _CHECKER_ATTRIBUTE}  # once, not per row
        for r in inside:
            for col, target in spec.links.items():
                entity, _ = LINK_TARGETS[col]
                if target == entity and entity != t and r.get(col) is not None and r[col] not in ids_of[entity]:
                    out.append((AnomalyKind.DANGLING_LINK, r[ROW_ID], f"{col} {r[col]} is not in {entity}"))
            if t in ITEM_LINKS:
                col, dictionary, _ = ITEM_LINKS[t]
                if r.get(col) is not None and dictionary in self.items and r[col] not in self.items[dictionary]:
                    out.append((AnomalyKind.DANGLING_LINK, r[ROW_ID], f"{col} {r[col]} is not in {dictionary}"))
            cols = spec.column_names
            if "hadm_id" in cols and "subject_id" in cols and t != "admissions":
                owner = self.admissions.get(r.get("hadm_id"))
                if owner is not None and r.get("subject_id") is not None and owner[0] != r["subject_id"]:
                    out.append((AnomalyKind.FOREIGN_LINK, r[ROW_ID],
                                f"admission {r['hadm_id']} belongs to patient {owner[0]}, not {r['subject_id']}"))
            if "stay_id" in cols and "hadm_id" in cols and t != "icustays":
                stay = self.stays.get(r.get("stay_id"))
                if stay is not None and r.get("hadm_id") is not None and stay[0] != r["hadm_id"]:
                    out.append((AnomalyKind.FOREIGN_LINK, r[ROW_ID],
                                f"ICU stay {r['stay_id']} belongs to admission {stay[0]}, not {r['hadm_id']}"))
            if t in ENCOUNTER_OF:
                time_col, enc = ENCOUNTER_OF[t]
                found = (self.admissions if enc is ADMISSION else self.stays).get(r.get(enc.link))
                when = r.get(time_col)
                if found is not None and when is not None:
                    start, end = found[-2], found[-1]
                    if isinstance(when, date) and not isinstance(when, datetime):
                        start, end = (x.date() if isinstance(x, datetime) else x for x in (start, end))
                    if start is not None and end is not None and (when < start or when > end):
                        what = "admission" if enc is ADMISSION else "ICU stay"
                        out.append((AnomalyKind.OUTSIDE_ENCOUNTER, r[ROW_ID],
                                    f"{time_col} {when} outside {what} {r.get(enc.link)} ({start} to {end})"))
            for (tab, end_col), start_col in ENDS_AFTER.items():
                if tab == t and r.get(end_col) is not None and r.get(start_col) is not None \
                        and r[end_col] < r[start_col]:
                    out.append((AnomalyKind.END_BEFORE_START, r[ROW_ID],
                                f"{end_col} {r[end_col]} before {start_col} {r[start_col]}"))
            usual = None
            if t in UNIT_OF:
                item_col, unit_col = UNIT_OF[t]
                usual = self.usual.get((t, str(r.get(item_col))), (None, 0))[0]
                if r.get(unit_col) is not None and usual is not None and r[unit_col] != usual:
                    out.append((AnomalyKind.UNUSUAL_UNIT, r[ROW_ID],
                                f"unit {r[unit_col]} where item {r[item_col]} is usually in {usual}"))
            if t in VALUE_OF:
                item_col, value_col, unit_col = VALUE_OF[t]
                limits = self.limits.get((t, None if item_col is None else str(r.get(item_col))))
                number = _as_double(r.get(value_col))
                in_usual_unit = unit_col is None or t not in UNIT_OF or r.get(unit_col) is None or usual is None \
                    or r[unit_col] == usual
                if limits is not None and number is not None and in_usual_unit and \
                        (number < limits[0] or number > limits[1]):
                    out.append((AnomalyKind.OUTSIDE_LIMITS, r[ROW_ID],
                                f"{value_col} {r[value_col]} outside [{limits[0]}, {limits[1]}]"))
        return out


def _as_double(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
