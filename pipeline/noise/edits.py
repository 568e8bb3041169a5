"""Building blocks of patches: change a value (and its text twin), copy a row.

Injectors compose these; each returns patch parts addressed by ``(table, row_id)`` of the source
database, with values as text (docs/architecture.md, "Patch format").
"""

import math
from random import Random
from typing import Any

from pipeline.noise.case import CleanCase, sql_text
from pipeline.noise.row_roles import ENTITY_OF_SLOT, roles
from pipeline.schema import ROW_ID, table
from pipeline.task_model import AddedRow, ColumnValue, RowRef, ValueChange

NUMERIC_TYPES = ("DOUBLE", "REAL", "INTEGER", "SMALLINT", "BIGINT")


def entity_tables(case: CleanCase) -> set[str]:
    """Tables whose row *is* an entity the question names (the patient, admission or stay)."""
    return {ENTITY_OF_SLOT[kind][0] for kind in case.slot_kinds.values() if kind in ENTITY_OF_SLOT}


def fact_tables(case: CleanCase) -> list[str]:
    """Evidence tables holding facts about the named entities (not dictionaries, not the entities)."""
    skip = entity_tables(case)
    return [name for name in sorted(case.evidence)
            if not table(name).dictionary and name not in skip]


def is_numeric(table_name: str, column: str) -> bool:
    return table(table_name).column(column).type.upper() in NUMERIC_TYPES


def as_number(value: Any) -> float | None:
    """A stored value as a finite float (omr keeps numbers as text), else None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def row_ref(table_name: str, row: dict) -> RowRef:
    return RowRef(table_name, int(row[ROW_ID]))


def set_value(table_name: str, row: dict, column: str, text: str | None, *,
              other_unit: bool = False) -> tuple[ValueChange, ...]:
    """Change ``column`` of ``row`` and keep its text rendering (labevents.value, ...) in step;
    ``other_unit``: the new value is the reading in another unit (``mirror_text``)."""
    rid = int(row[ROW_ID])
    changes = [ValueChange(table_name, rid, column, text)]
    mirror = roles(table_name).mirror_of(column)
    if mirror is not None:
        rendered = mirror_text(text, row.get(mirror), other_unit=other_unit)
        if rendered != row.get(mirror):
            changes.append(ValueChange(table_name, rid, mirror, rendered))
    return tuple(changes)


def mirror_text(text: str | None, original: Any, *, other_unit: bool = False) -> str | None:
    """A new value ``text`` as the row's text column renders its value: with the decimals the original
    text shows (chartevents writes 91.0, labevents 135: a duplicate heart rate of "100" among "NN.0"
    texts gave itself away), and a text that is not a number (a redacted "___") left as it is.

    A reading in ``other_unit`` has the digits of that unit, not the original's: a white cell count of
    "4.10" K/uL is 4100 #/uL, never "4100.00". Only a whole number's ".0" (how the table writes whole
    numbers) carries over."""
    if text is None or original is None:
        return text
    original = str(original)
    if as_number(original) is None:
        return original
    shown = len(original.partition(".")[2])
    if other_unit:
        shown = 1 if original.endswith(".0") and shown == 1 else 0
    number = as_number(text)
    if number is not None and len(text.partition(".")[2]) < shown:
        return f"{number:.{shown}f}"
    return text


def copy_row(table_name: str, row: dict, new_row_id: int, changes: dict[str, str | None]) -> AddedRow:
    """A new row (negative ``row_id``) with ``row``'s values except ``changes``."""
    t = table(table_name)
    values = tuple(ColumnValue(c, changes[c] if c in changes else sql_text(row.get(c))) for c in t.column_names)
    return AddedRow(table_name, new_row_id, values)


def pick(rows: list, k: int, rng: Random) -> list:
    """Up to ``k`` of ``rows`` in a seeded order (cost O(k), not O(len(rows)))."""
    rows = list(rows)
    return rng.sample(rows, min(k, len(rows)))
