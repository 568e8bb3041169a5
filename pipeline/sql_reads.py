"""Which columns a SELECT reads, from DuckDB's own parse tree.

A patch that only rewrites values (no row hidden or added) cannot change the result of a statement
that reads none of the rewritten columns: the statement sees the same rows with the same values it
looks at. ``columns_read`` says which columns those are, or None when the statement may read whole
rows (a ``*`` or ``COLUMNS(...)``, a row named by its table or alias, a ``NATURAL`` join), so that a
caller can skip re-running it under such a patch. Names are compared without their table: a column
of that name in any table counts as read, which only ever errs towards re-running.
"""

import json

import duckdb

from pipeline.task_model import Patch


def columns_read(con: duckdb.DuckDBPyConnection, sql: str) -> frozenset[str] | None:
    """The lower-case names of every column ``sql`` reads, or None when it may read whole rows (or
    does not parse as one SELECT)."""
    tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    if tree.get("error") or len(tree.get("statements", ())) != 1:
        return None
    walk = _Walk()
    walk.visit(tree["statements"][0])
    if walk.whole_rows or walk.single_names & walk.relations:
        return None
    return frozenset(walk.names)


class _Walk:
    def __init__(self):
        self.names: set[str] = set()
        self.single_names: set[str] = set()  # unqualified references: a column, or a whole row by name
        self.relations: set[str] = set()  # tables, aliases and CTEs a reference could name as a row
        self.whole_rows = False

    def visit(self, node) -> None:
        if isinstance(node, list):
            for item in node:
                self.visit(item)
            return
        if not isinstance(node, dict):
            return
        kind = node.get("class")
        if kind == "STAR":
            self.whole_rows = True
        elif kind == "COLUMN_REF":
            parts = [str(p).lower() for p in node.get("column_names", ())]
            # Every part: in ``s.field.x`` the column is not the last part.
            self.names.update(parts)
            if len(parts) == 1:
                self.single_names.add(parts[0])
        if node.get("type") == "BASE_TABLE" and node.get("table_name"):
            self.relations.add(str(node["table_name"]).lower())
        if node.get("alias") and "class" not in node:  # a table reference's alias, not an expression's
            self.relations.add(str(node["alias"]).lower())
        if node.get("ref_type") == "NATURAL":
            self.whole_rows = True
        self.names.update(str(c).lower() for c in node.get("using_columns") or ())
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            self.relations.update(str(entry["key"]).lower() for entry in cte_map.get("map") or ())
        for value in node.values():
            if isinstance(value, (dict, list)):
                self.visit(value)


class ReadColumns:
    """``columns_read`` of each template's statements, asked once per template on one connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self._known: dict[tuple[str, str], frozenset[str] | None] = {}

    def unread_by(self, key: tuple[str, str], sql: str, patch: Patch) -> bool:
        """Whether ``patch`` only rewrites values in columns ``sql`` never reads, so that ``sql`` gives
        under it what it gives on the unpatched database. ``key`` names the statement's shape (a
        template's id and which of its statements): slots are literals, so every filling reads the
        same columns."""
        if patch.hide or patch.add or not patch.update:
            return False
        if key not in self._known:
            self._known[key] = columns_read(self.con, sql)
        read = self._known[key]
        return read is not None and not {u.column.lower() for u in patch.update} & read
