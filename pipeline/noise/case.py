"""What an injector sees of one clean task: the task, its template, its evidence rows, the database.

``CleanCase`` bundles a clean task with the template that produced it and the evidence rows read
back from the source database (as Python values, keyed by table). ``SourceLookup`` answers the
questions injectors ask of the source database (the largest id of an entity, the values a column
takes, whether a value exists) and caches them, so building thousands of twins queries each fact
once over one connection.
"""

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import duckdb

from pipeline.answers import DEFAULT_DECIMALS
from pipeline.schema import ROW_ID, table
from pipeline.noise.row_roles import copied_keys
from pipeline.task_model import Patch, Task
from pipeline.vocabulary import AnswerType, Intent, Level, SlotKind, Split


class MeasureLike(Protocol):
    table: str
    value_column: str
    unit_column: str | None


class TemplateLike(Protocol):
    """The part of a template the noise stage relies on (docs/architecture.md, "Templates")."""

    id: str
    intent: Intent
    level: Level
    answer_type: AnswerType
    tables: Sequence[str]
    slots: Mapping[str, SlotKind]
    measure: MeasureLike | None
    decimals: int
    names_within: Mapping[str, tuple[str, ...]]  # a slot's fixed list of names, if any (query noise keeps to it)

    def render_question(self, slots: dict[str, str], paraphrase: int) -> str: ...

    def render_sql(self, slots: dict[str, str]) -> str: ...


def measure_of(template: TemplateLike) -> tuple[str, str, str | None] | None:
    """``(table, value_column, unit_column)`` of the value the template's answer rests on, or None."""
    m = template.measure
    return None if m is None else (m.table, m.value_column, m.unit_column)


def sql_text(value: Any) -> str | None:
    """A database value as patch text (None stays None)."""
    if value is None:
        return None
    if isinstance(value, float):
        return repr(value)  # round-trips exactly through CAST(... AS DOUBLE)
    return str(value)


@dataclass
class CleanCase:
    task: Task
    template: TemplateLike
    # table -> evidence rows of that table (column -> value, row_id included), in row_id order
    evidence: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The split the clean task (and so its twins) will be published in, and the build's seed: made-up
    # names and ids are drawn from that split's own pool (pipeline.noise.made_up).
    split: Split = Split.TRAIN
    seed: int = 0

    @cached_property
    def slots(self) -> dict[str, str]:
        return {s.name: s.value for s in self.task.slots}

    @cached_property
    def slot_kinds(self) -> dict[str, SlotKind]:
        return {name: SlotKind(kind) for name, kind in self.template.slots.items()}

    def slots_of(self, *kinds: SlotKind) -> list[str]:
        """Slot names of the given kinds, in the template's order."""
        return [name for name, kind in self.slot_kinds.items() if kind in kinds and name in self.slots]

    @property
    def decimals(self) -> int:
        """The decimals its answers are read to (the template's, else the default)."""
        return int(getattr(self.template, "decimals", DEFAULT_DECIMALS))

    @property
    def evidence_size(self) -> int:
        return sum(len(rows) for rows in self.evidence.values())

    def evidence_rows(self, table_name: str) -> list[dict[str, Any]]:
        return self.evidence.get(table_name, [])


class CleanAnswers:
    """What each clean task's gold SQL gave on the unpatched source: its answer, read by that very SQL on
    this very database when the task was extracted (the templates stage re-executes it in its checks).
    A proof or label check asking the same SQL, read as the same type, of the unpatched database takes
    it from here; an ambiguous name's first reading, for one, is the clean name."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, AnswerType, int], Any] = {}

    def add(self, cases: Sequence[CleanCase]) -> None:
        for case in cases:
            t = case.task
            if t.answer is not None:
                self._answers[(t.gold_sql, AnswerType(t.answer_type), case.decimals)] = t.answer

    def get(self, sql: str, answer_type: AnswerType, decimals: int, patch: Patch):
        """The clean answer of ``sql`` read as ``answer_type`` to ``decimals`` on the database as ``patch``
        leaves it, or None unless the patch is empty and a clean task asked it."""
        return self._answers.get((sql, AnswerType(answer_type), decimals)) if patch.is_empty else None


def read_evidence(con: duckdb.DuckDBPyConnection, tasks: Sequence[Task]) -> dict[str, dict[str, list[dict]]]:
    """Every task's evidence rows, read from the source tables in one scan per table.

    Returns task id -> table -> rows (column -> value, ``row_id`` included) in ``row_id`` order.
    """
    wanted: dict[str, set[int]] = defaultdict(set)
    for task in tasks:
        for ref in task.evidence:
            wanted[ref.table].add(ref.row_id)
    rows_by_table: dict[str, dict[int, dict[str, Any]]] = {}
    for name in sorted(wanted):
        table(name)  # an unknown table in a task's evidence is named in the error
        cur = con.execute(f'SELECT * FROM main."{name}" WHERE {ROW_ID} IN (SELECT unnest(?))', [sorted(wanted[name])])
        cols = [d[0] for d in cur.description]
        rows_by_table[name] = {r[ROW_ID]: r for r in (dict(zip(cols, values)) for values in cur.fetchall())}
    out: dict[str, dict[str, list[dict]]] = {}
    for task in tasks:
        evidence: dict[str, list[dict]] = defaultdict(list)
        for ref in sorted(task.evidence, key=lambda r: (r.table, r.row_id)):
            row = rows_by_table[ref.table].get(ref.row_id)
            if row is None:
                raise ValueError(f"task {task.task_id}: evidence row {ref.row_id} not found in table {ref.table!r} "
                                 "(was the task extracted from another database?)")
            evidence[ref.table].append(row)
        out[task.task_id] = dict(evidence)
    return out


class SourceLookup:
    """Cached facts about the source database that injectors draw values from."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self._cache: dict[tuple, Any] = {}
        self.memo: dict[tuple, Any] = {}  # derived values (sets of names, ...) other modules cache here
        # Patients the tasks at hand name: what is read per patient is read for all of them at once.
        self.expected_subjects: frozenset[int] = frozenset()
        self._expected_rows: dict[str, list[dict]] = {}  # evidence rows of the tasks at hand (``expect_rows``)
        # What is read for all the expected rows together (other modules cache here too): forgotten with them.
        self.expected_memo: dict[tuple, Any] = {}
        self._tables = {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main'").fetchall()}

    def has_table(self, name: str) -> bool:
        return name in self._tables

    def _cached(self, key: tuple, sql: str, params: list | None = None) -> list[tuple]:
        if key not in self._cache:
            self._cache[key] = self.con.execute(sql, params or []).fetchall()
        return self._cache[key]

    def id_range(self, table_name: str, column: str) -> tuple[int, int]:
        (lo, hi), = self._cached(("range", table_name, column),
                                 f'SELECT min("{column}"), max("{column}") FROM main."{table_name}"')
        return int(lo or 0), int(hi or 0)

    def free_id_after(self, table_name: str, column: str, value: int, window: int = 64) -> int:
        """The first id above ``value`` no row of the table holds, within ``window``; past the table's
        largest id when every one of those is taken. A second charting gets an id near the first one's,
        as ids are handed out in time: the table's largest id would mark the made-up row."""
        used = {r[0] for r in self._cached(("ids near", table_name, column, value, window),
                                           f'SELECT "{column}" FROM main."{table_name}" '
                                           f'WHERE "{column}" BETWEEN ? AND ?', [value + 1, value + window])}
        free = next((i for i in range(value + 1, value + window + 1) if i not in used), None)
        return free if free is not None else self.id_range(table_name, column)[1] + 1

    def id_set(self, table_name: str, column: str) -> frozenset[int]:
        """Every value of an id column (entity tables are small: patients, admissions, ICU stays)."""
        key = ("ids", table_name, column)
        if key not in self.memo:
            rows = self.con.execute(f'SELECT DISTINCT "{column}" FROM main."{table_name}"').fetchall()
            self.memo[key] = frozenset(r[0] for r in rows if r[0] is not None)
        return self.memo[key]

    def distinct_values(self, table_name: str, column: str, *, where: str = "", limit: int = 2000) -> list:
        """Distinct non-null values of a column, in sorted order (deterministic), at most ``limit``."""
        cond = f"WHERE \"{column}\" IS NOT NULL{(' AND ' + where) if where else ''}"
        rows = self._cached(("distinct", table_name, column, where, limit),
                            f'SELECT DISTINCT "{column}" FROM main."{table_name}" {cond} '
                            f'ORDER BY 1 LIMIT {int(limit)}')
        return [r[0] for r in rows]

    def distinct_pairs(self, table_name: str, columns: tuple[str, str], within: dict, limit: int = 400) -> list[tuple]:
        """Distinct pairs of ``columns``, both set, among rows whose ``within`` columns hold the given values,
        in sorted order (deterministic), at most ``limit``."""
        conditions = [f'"{c}" IS NOT NULL' for c in columns] + [f'"{c}" = ?' for c in within]
        a, b = columns
        rows = self._cached(("pairs", table_name, columns, tuple(within.items()), limit),
                            f'SELECT DISTINCT "{a}", "{b}" FROM main."{table_name}" WHERE {" AND ".join(conditions)} '
                            f'ORDER BY 1, 2 LIMIT {int(limit)}', list(within.values()))
        return [tuple(r) for r in rows]

    def recorded_also(self, table_name: str, rows: list[dict], about: str | None = None) -> bool:
        """Whether the source records any of ``rows`` a second time, in another table
        (``row_roles.RowRoles.recorded_also_in``: an ICU stay in ``transfers``, a prescription in ``pharmacy``)
        that records column ``about`` of them (None: their events themselves, as any copy shows them)."""
        return bool(self.rows_recorded_also(table_name, rows, about))

    def rows_recorded_also(self, table_name: str, rows: list[dict], about: str | None = None, *,
                           imported: bool = False) -> frozenset[int]:
        """The ``row_id``s of those of ``rows`` the source records a second time (``recorded_also``): read
        with every expected row's (``expect_rows``) where their keys are among those, else one query per
        copying table for all of ``rows``. ``imported``: only copies another system imports
        (``Copy.imported``: a lab result the ICU charts)."""
        found: set[int] = set()
        for copy, sql, params, rows_of in copied_keys(table_name, rows, self._tables, about, imported=imported):
            expected = self._copied_among_expected(table_name, copy)
            if expected is not None and expected[0].issuperset(rows_of):
                copied = expected[1].intersection(rows_of)
            else:
                copied = {tuple(k) for k in self._cached(("copied keys", sql, tuple(map(tuple, params))), sql, params)}
            for key in copied:
                found |= rows_of.get(key, set())
        return frozenset(found)

    def expect_rows(self, rows_by_table: dict[str, list[dict]]) -> None:
        """The evidence rows of the tasks at hand, as the source has them: which of their keys another
        table records a second time is read for all of them together, a query per copying table on the
        table's first lookup (``rows_recorded_also``), not a query per task. Lookups read for rows
        expected before are forgotten."""
        self._expected_rows = dict(rows_by_table)
        self.expected_memo = {}

    def expected_rows(self, table_name: str) -> list[dict]:
        """The expected evidence rows of ``table_name`` (``expect_rows``; none before it is called)."""
        return self._expected_rows.get(table_name, [])

    def _copied_among_expected(self, table_name: str, copy) -> tuple[frozenset, frozenset] | None:
        """(the keys of the expected rows of ``table_name`` that ``copy`` is looked up by, those of them
        that have a copy), or None without expected rows."""
        key = ("copied among expected", table_name, copy)
        if key not in self.expected_memo:
            rows = self._expected_rows.get(table_name)
            lookups = [lk for lk in copied_keys(table_name, rows, self._tables) if lk[0] == copy] if rows else []
            if lookups:
                _, sql, params, rows_of = lookups[0]
                self.expected_memo[key] = (frozenset(rows_of),
                                           frozenset(tuple(k) for k in self.con.execute(sql, params).fetchall()))
            else:
                self.expected_memo[key] = None
        return self.expected_memo[key]

    # An item "every" encounter has: all but a few. At full scale a handful of the 70K ICU stays have
    # no heart rate at all; a stay left without one by a twin is still a record of a kind never seen.
    UNIVERSAL_SHARE = 0.99

    def every_encounter_has(self, table_name: str, scope: str, item: str, value) -> bool:
        """Whether (all but a few) encounters of the source (ICU stays for ``scope`` stay_id, admissions
        for hadm_id) have a row of ``table_name`` whose ``item`` is ``value`` (a heart rate in every stay).
        One grouped scan per table, for all its items."""
        entity = {"stay_id": "icustays", "hadm_id": "admissions"}[scope]
        if not self.has_table(entity):
            return False
        universal = {v for (v,) in self._cached(
            ("universal", table_name, scope, item),
            f'SELECT "{item}" FROM main."{table_name}" GROUP BY "{item}" HAVING count(DISTINCT "{scope}") '
            f'>= {self.UNIVERSAL_SHARE} * (SELECT count(*) FROM main."{entity}")')}
        return value in universal

    def row_count(self, table_name: str, where: dict) -> int:
        """Rows of ``table_name`` whose columns hold the values of ``where``."""
        condition = " AND ".join(f'"{c}" = ?' for c in where)
        (n,), = self._cached(("count", table_name, tuple(where.items())),
                             f'SELECT count(*) FROM main."{table_name}" WHERE {condition}', list(where.values()))
        return n

    def column_min(self, table_name: str, column: str, where: str) -> float | None:
        """The smallest value of ``column`` read as a number (omr keeps numbers as text)."""
        rows = self._cached(("min", table_name, column, where),
                            f'SELECT min(TRY_CAST("{column}" AS DOUBLE)) FROM main."{table_name}" WHERE {where}')
        return rows[0][0]

    def referenced_columns(self, key: str, sql: str) -> tuple[frozenset[str], frozenset[str]]:
        """Column names a query reads, from DuckDB's parser: (in its select list, anywhere, a join's
        ``USING`` columns included).

        Columns in the select list are what the answer is computed from; the others only filter or
        join rows.
        """
        return self._parsed(key, sql)[:2]

    def reads_whole_rows(self, key: str, sql: str) -> bool:
        """Whether the query reads rows whole (``*``, ``alias.*``, a natural join), so it may follow a
        column it never names."""
        return self._parsed(key, sql)[2]

    def _parsed(self, key: str, sql: str) -> tuple[frozenset[str], frozenset[str], bool]:
        if ("columns", key) not in self.memo:
            tree = json.loads(self.con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
            statements = tree.get("statements") or [{}]
            select_list = statements[0].get("node", {}).get("select_list", [])
            self.memo[("columns", key)] = (_column_refs(select_list), _column_refs(tree), _whole_rows(tree))
        return self.memo[("columns", key)]

    def query(self, key: tuple, sql: str, params: list | None = None) -> list[tuple]:
        """Any read-only lookup, cached under ``key``."""
        return self._cached(("query",) + key, sql, params)


def _nodes(tree: Any) -> Iterator[dict]:
    """Every object of a parsed statement's JSON."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _column_refs(tree: Any) -> frozenset[str]:
    found: set[str] = set()
    for node in _nodes(tree):
        if node.get("class") == "COLUMN_REF":
            found.add(node["column_names"][-1])
        found.update(node.get("using_columns") or ())
    return frozenset(found)


def _whole_rows(tree: Any) -> bool:
    return any(node.get("class") == "STAR" or node.get("ref_type") == "NATURAL" for node in _nodes(tree))
