"""The rows a scope's anomalies are judged against: the scope rows and their possible partners.

A row's partners are the rows that could be its duplicate or its conflicting copy: rows sharing its
natural key or its conflict key (patient, encounter, item, time). The label check asks for them once
per candidate twin, each time on another patched database, and a query under the patch's views costs
5-10 ms on the demo's event tables. Most patches cannot change who is whose partner: they rewrite a
value or a unit, hide a row, or add a copy of a row in scope with that row's keys. For those,
``PartnerRows`` reads the partners on the unpatched source once per scope and lays the patch over
them in Python; any other patch (a rewritten key, patient or link, an added row it cannot place)
is read by SQL under the patch, as before.

``SourceRows`` gives rows by id as a patch leaves them (the rows a patch writes, the source's own
detached rows a question could reach): read once on the unpatched source and patched in Python,
which is exact for any patch, since a row's content under a patch depends only on the row and the patch.
"""

import math
import re
from collections import OrderedDict

import duckdb

from pipeline.noise.anomalies import conflict_values
from pipeline.noise.row_roles import conflict_key
from pipeline.schema import ROW_ID, TABLES_BY_NAME
from pipeline.task_model import Patch

Row = dict[str, object]


def partner_keys(table_name: str) -> list[tuple[str, ...]]:
    """The column groups a partner shares with a scope row: the natural key, and the conflict key
    where the table records conflicting values."""
    spec = TABLES_BY_NAME[table_name]
    keys = [tuple(spec.key)] if spec.key else []
    if conflict_key(table_name) and conflict_values(table_name):
        keys.append(tuple(conflict_key(table_name)))
    return keys


def partner_rows_sql(table_name: str, ids: list[int]) -> str:
    """The scope rows and every row that could be their duplicate or conflicting copy, on the database
    the statement runs on. Partners are looked for among the scope's patients' rows (a duplicate of a
    patient's row is that patient's), which a table stored by patient reads in a few row groups; the
    scope rows are read once, and the table scanned once more for all the keys together."""
    listed = ", ".join(map(str, ids))
    shares = [f"x.row_id IN ({listed})"]
    for key in partner_keys(table_name):
        shares.append(f"({', '.join(f'x.{_q(k)}' for k in key)}) IN "
                      f"(SELECT ({', '.join(_q(k) for k in key)}) FROM s)")
    scope = f'WITH s AS MATERIALIZED (SELECT * FROM "{table_name}" WHERE row_id IN ({listed})) '
    if "subject_id" not in TABLES_BY_NAME[table_name].column_names:
        return scope + f'SELECT x.* FROM "{table_name}" AS x WHERE {" OR ".join(shares)}'
    return (scope + f'SELECT x.* FROM "{table_name}" AS x WHERE x.subject_id IN (SELECT subject_id FROM s) '
            f'AND ({" OR ".join(shares)}) UNION ALL SELECT * FROM s WHERE subject_id IS NULL')


class Casts:
    """Text as the patch's views type it: DuckDB's own cast of the text to the column's type, each
    (text, type) cast once."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self._typed: dict[tuple[str, str], object] = {}

    def one(self, value: str | None, type_: str) -> object:
        return self.typed([(value, type_)])[0]

    def typed(self, values: list[tuple[str | None, str]]) -> list[object]:
        """Each (text, type) typed; the ones not seen before cast in one statement (text, and numbers
        written plainly, in Python: the same value DuckDB's cast gives, without a statement each)."""
        new = []
        for v in sorted({v for v in values if v[0] is not None and v not in self._typed}):
            plain = _plain_cast(*v)
            if plain is None:
                new.append(v)
            else:
                self._typed[v] = plain
        if new:
            casts = ", ".join(f"CAST(${i + 1} AS {type_})" for i, (_, type_) in enumerate(new))
            found = self.con.execute(f"SELECT {casts}", [text for text, _ in new]).fetchone()
            self._typed.update(zip(new, found))
        return [None if v[0] is None else self._typed[v] for v in values]


_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_INTEGER_RANGE = {"INTEGER": 2 ** 31, "SMALLINT": 2 ** 15, "BIGINT": 2 ** 63}


def _plain_cast(text: str, type_: str) -> object | None:
    """``CAST(text AS type_)`` where Python gives the same value surely (None: ask DuckDB). A decimal
    read as a DOUBLE is correctly rounded by both; REAL, times and anything else go to DuckDB."""
    if type_ == "VARCHAR":
        return text
    if type_ in _INTEGER_RANGE and _INTEGER.fullmatch(text):
        value = int(text)
        return value if -_INTEGER_RANGE[type_] <= value < _INTEGER_RANGE[type_] else None
    if type_ == "DOUBLE" and _DECIMAL.fullmatch(text):
        value = float(text)
        return value if math.isfinite(value) else None
    return None


class TablePatch:
    """One table's share of a patch, laid over rows fetched from the unpatched source as the patch's
    views lay it: hidden rows dropped, rewritten values swapped in (in source rows only: the views
    rewrite no added row), added rows built from their text."""

    def __init__(self, table_name: str, patch: Patch, casts: Casts):
        self.spec = TABLES_BY_NAME[table_name]
        self.casts = casts
        self.hidden = {r.row_id for r in patch.hide if r.table == table_name}
        self.added = {a.row_id: a for a in patch.add if a.table == table_name}
        self.updates = [u for u in patch.update if u.table == table_name]
        self._updates_of: dict[int, list] = {}
        for u in self.updates:
            self._updates_of.setdefault(u.row_id, []).append(u)

    def over(self, source_rows) -> list[Row]:
        """Copies of the source rows the patch keeps, with its rewrites."""
        out = []
        for source_row in source_rows:
            if source_row[ROW_ID] in self.hidden:
                continue
            row = dict(source_row)
            for u in self._updates_of.get(row[ROW_ID], ()):
                row[u.column] = self.casts.one(u.value, self.spec.column(u.column).type)
            out.append(row)
        return out

    def added_row(self, row_id: int) -> Row:
        given = {cv.column: cv.value for cv in self.added[row_id].values}
        typed = self.casts.typed([(given.get(c.name), c.type) for c in self.spec.columns])
        return {ROW_ID: row_id, **dict(zip(self.spec.column_names, typed))}


class PartnerRows:
    """Partner rows of scopes on one source database, patched in Python where the patch allows.

    ``source`` must see the unpatched tables (a cursor of its own: the views a patch lays on another
    connection do not reach it). The unpatched rows of recent scopes are kept, up to ``max_rows``
    rows in all: a clean task's scope is read once for the several candidate twins made from it.
    """

    def __init__(self, source: duckdb.DuckDBPyConnection, casts: Casts | None = None, max_rows: int = 500_000):
        self.source = source
        self.casts = casts or Casts(source)
        self.max_rows = max_rows
        self._scopes: OrderedDict[tuple[str, tuple[int, ...]], list[Row]] = OrderedDict()
        self._held = 0
        self.patched_in_python = self.read_by_sql = 0
        self._expected: dict[str, frozenset[int]] = {}
        self._read_together: dict[str, _PartnerIndex] = {}

    def expect(self, ids_by_table: dict[str, set[int]]) -> None:
        """The scope rows the coming reads will mostly ask about (the clean tasks' evidence). The first
        scope of a table within them reads their partners all at once (up to ``max_rows`` ids in all);
        every scope within them is then found among those rows, as its own query would find it."""
        self._expected, self._read_together = {}, {}
        room = self.max_rows
        for name in sorted(ids_by_table):
            ids = ids_by_table[name]
            if name in TABLES_BY_NAME and "subject_id" in TABLES_BY_NAME[name].column_names and ids \
                    and len(ids) <= room:
                self._expected[name] = frozenset(ids)
                room -= len(ids)

    def rows(self, con: duckdb.DuckDBPyConnection, table_name: str, ids: list[int], patch: Patch) -> list[Row]:
        """The scope rows ``ids`` of ``table_name`` and their partners on the database as ``patch`` leaves
        it (``con`` reads that database: ``patched_on_demand``'s object), sorted by row id."""
        found = self._patched_in_python(table_name, ids, patch)
        if found is None:
            self.read_by_sql += 1
            found = _fetch(con, partner_rows_sql(table_name, ids))
        else:
            self.patched_in_python += 1
        return sorted(found, key=lambda r: r[ROW_ID])

    def _patched_in_python(self, table_name: str, ids: list[int], patch: Patch) -> list[Row] | None:
        table = TablePatch(table_name, patch, self.casts)
        keys = partner_keys(table_name)
        # Columns that decide who is whose partner (or which patient's rows are searched): a patch
        # rewriting one of them can make or break partnerships the unpatched rows do not show.
        deciding = {c for key in keys for c in key} | {"subject_id", ROW_ID}
        if any(u.column in deciding for u in table.updates):
            return None
        in_source = tuple(i for i in ids if i not in table.hidden and i not in table.added)
        rows = table.over(self._unpatched(table_name, in_source))
        scope_ids = set(in_source)
        scope = [r for r in rows if r[ROW_ID] in scope_ids]
        for row_id in table.added:
            row = table.added_row(row_id)
            if any(row[c] is None for c in deciding if c in row):
                return None  # SQL and Python disagree on what a NULL key matches; let SQL decide
            if row_id in ids:
                # An added scope row brings its own partners; those are already here only when a
                # source scope row shares its patient and every key with it (a copy of that row).
                if not any(all(row[c] == s[c] for c in deciding - {ROW_ID} if c in row) for s in scope):
                    return None
                rows.append(row)
            elif _is_partner(row, scope, keys, "subject_id" in table.spec.column_names):
                rows.append(row)
        return rows

    def _unpatched(self, table_name: str, ids: tuple[int, ...]) -> list[Row]:
        key = (table_name, ids)
        if key in self._scopes:
            self._scopes.move_to_end(key)
            return self._scopes[key]
        found = self._among_expected(table_name, ids)
        if found is None:
            found = _fetch(self.source, partner_rows_sql(table_name, list(ids))) if ids else []
        self._scopes[key] = found
        self._held += len(found)
        while self._held > self.max_rows and len(self._scopes) > 1:
            _, dropped = self._scopes.popitem(last=False)
            self._held -= len(dropped)
        return found

    def _among_expected(self, table_name: str, ids: tuple[int, ...]) -> list[Row] | None:
        expected = self._expected.get(table_name)
        if not ids or expected is None or not expected.issuperset(ids):
            return None
        if table_name not in self._read_together:
            rows = _fetch(self.source, partner_rows_sql(table_name, sorted(expected)))
            self._read_together[table_name] = _PartnerIndex(rows, partner_keys(table_name))
        return self._read_together[table_name].partners(ids)


class _PartnerIndex:
    """The partner rows of a set of scope rows, indexed to give any subset's partners as
    ``partner_rows_sql`` over that subset would (a subset's partners are among its superset's):
    rows of the scope's patients (a NULL patient matches none) that are scope rows or share a key
    with one. A key of several columns compares as a row, where NULLs match; a key of one column
    compares as a value, where a NULL matches nothing. Scope rows without a patient come as they are."""

    def __init__(self, rows: list[Row], keys: list[tuple[str, ...]]):
        self.rows = {r[ROW_ID]: r for r in rows}
        self.keys = keys
        self.by_key: list[dict[tuple, list[Row]]] = []
        for key in keys:
            index: dict[tuple, list[Row]] = {}
            for r in rows:
                value = tuple(r[c] for c in key)
                if len(key) > 1 or value[0] is not None:
                    index.setdefault(value, []).append(r)
            self.by_key.append(index)

    def partners(self, ids) -> list[Row]:
        scope = [self.rows[i] for i in ids if i in self.rows]
        subjects = {s["subject_id"] for s in scope if s["subject_id"] is not None}
        found = {s[ROW_ID]: s for s in scope}
        for key, index in zip(self.keys, self.by_key):
            for s in scope:
                for r in index.get(tuple(s[c] for c in key), ()):
                    if r["subject_id"] in subjects:
                        found[r[ROW_ID]] = r
        return list(found.values())


class SourceRows:
    """Rows of the source by row id as a patch leaves them, for any patch: each row read once on the
    unpatched source (``source``: a cursor no patch view reaches) and kept, up to ``max_rows``, the
    patch laid over them in Python (``TablePatch``)."""

    def __init__(self, source: duckdb.DuckDBPyConnection, casts: Casts | None = None, max_rows: int = 200_000):
        self.source = source
        self.casts = casts or Casts(source)
        self.max_rows = max_rows
        self._rows: dict[str, dict[int, Row | None]] = {}
        self._held = 0

    def rows(self, table_name: str, ids, patch: Patch) -> list[Row]:
        """The rows of ``table_name`` with these ids on the patched database, sorted by row id."""
        table = TablePatch(table_name, patch, self.casts)
        wanted = sorted({int(i) for i in ids})
        from_source = [i for i in wanted if i not in table.added]
        known = self._read(table_name, from_source)
        rows = table.over(known[i] for i in from_source if known[i] is not None)
        rows += [table.added_row(i) for i in wanted if i in table.added]
        return sorted(rows, key=lambda r: r[ROW_ID])

    def keep(self, table_name: str, rows: list[Row]) -> None:
        """Rows already read from the unpatched source (``SELECT *``, with ``row_id``), kept as if read
        here, while there is room."""
        known = self._rows.setdefault(table_name, {})
        for row in rows:
            if self._held >= self.max_rows:
                return
            if row[ROW_ID] not in known:
                known[row[ROW_ID]] = row
                self._held += 1

    def _read(self, table_name: str, ids: list[int]) -> dict[int, Row | None]:
        """The table's kept rows, with ``ids`` among them (None: not in the source)."""
        known = self._rows.setdefault(table_name, {})
        missing = [i for i in ids if i not in known]
        if not missing:
            return known
        if self._held + len(missing) > self.max_rows:
            self._rows, self._held = {table_name: {}}, 0
            known = self._rows[table_name]
        for row in _fetch(self.source, f'SELECT * FROM "{table_name}" WHERE row_id IN ({", ".join(map(str, missing))})'):
            known[row[ROW_ID]] = row
        for i in missing:
            known.setdefault(i, None)  # not in the source: only a patch can add it
        self._held += len(missing)
        return known


def _is_partner(row: Row, scope: list[Row], keys: list[tuple[str, ...]], by_patient: bool) -> bool:
    if by_patient and row["subject_id"] not in {s["subject_id"] for s in scope}:
        return False
    return any(tuple(row[c] for c in key) == tuple(s[c] for c in key) for key in keys for s in scope)


def _fetch(con: duckdb.DuckDBPyConnection, sql: str) -> list[Row]:
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _q(column: str) -> str:
    return f'"{column}"'
