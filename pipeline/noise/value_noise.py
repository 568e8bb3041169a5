"""Value-level noise: rows stay, the measured value an answer rests on changes.

Both injectors need the template's ``measure`` (table, value column, unit column) and work on the
evidence rows of that table, one row per twin.

- ``implausible_value`` writes a physiologically impossible value (``physiology.MEASURED_ITEMS``;
  for unlisted items never recorded below zero, a negative value; for an end time such as a
  discharge, a time before its start, ``physiology.ENDS_AFTER``). Accepted: ``implausible_value``,
  or the answer recomputed without the row (the gold SQL re-run with the row hidden), or
  ``no_evidence`` when nothing is left once the row is set aside.
- ``unit_mismatch`` rewrites the value in another unit and relabels the unit column (where there is
  none, as in ``omr``, ``patients.anchor_age`` or ``icustays.los``, the value no longer fits the unit
  of the item's name or the column: a weight in kg under "Weight (Lbs)", an age in months). Accepted:
  ``unit_inconsistency``, or the clean answer, which converting back restores (the twin's recorded
  value converts back to the clean value within 1e-6, far inside any task's tolerance).
"""

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from random import Random

from pipeline.noise.case import CleanCase, SourceLookup, measure_of, sql_text
from pipeline.noise.edits import as_number, pick, set_value
from pipeline.noise.physiology import ENDS_AFTER, conversions_for, format_value, measured_item
from pipeline.noise.proof import literal
from pipeline.noise.registry import AnswerUnder, Applicability, Draft, Effect, Injector, register
from pipeline.noise.row_roles import roles
from pipeline.schema import ROW_ID
from pipeline.task_model import NamedValue, Outcome, Patch, RowRef
from pipeline.vocabulary import NoiseType, Status

ROWS_TRIED = 3  # evidence rows a value twin may target, in seeded order


def _item_of(table_name: str, row: dict):
    item = roles(table_name).item
    return row.get(item[0]) if item else None


def _measured_rows(case: CleanCase, rng: Random) -> list[tuple[str, str, str | None, dict, object]]:
    """Up to ``ROWS_TRIED`` evidence rows of the measure's table with a value (a number, or a time)."""
    table_name, value_col, unit_col = measure_of(case.template)
    rows = []
    for r in case.evidence_rows(table_name):
        value = r.get(value_col)
        value = value if isinstance(value, (datetime, date)) else as_number(value)
        if value is not None:
            rows.append((table_name, value_col, unit_col, r, value))
    return pick(rows, ROWS_TRIED, rng)


def _params(**kw) -> tuple[NamedValue, ...]:
    return tuple(NamedValue(k, str(v)) for k, v in kw.items())


def _impossible(lookup: SourceLookup, table_name: str, value_col: str, row: dict, value,
                rng: Random) -> tuple[str, str] | None:
    """(value text, the rule that makes it impossible) for one measured value, or None."""
    if isinstance(value, (datetime, date)):
        start_col = ENDS_AFTER.get((table_name, value_col))
        start = row.get(start_col) if start_col else None
        if not isinstance(start, (datetime, date)):
            return None
        return sql_text(start - timedelta(days=rng.randint(1, 3), hours=rng.randint(1, 12))), \
            f"{value_col} before {start_col}: it ends before it starts"
    item = _item_of(table_name, row)
    described = measured_item(table_name, item, value_col)
    if described is not None:
        return format_value(rng.choice(described.impossible)), \
            f"outside {described.name} range {described.plausible}"
    item_col = roles(table_name).item
    where = f'"{item_col[0]}" = {literal(item)}' if item_col and item is not None else "TRUE"
    lowest = lookup.column_min(table_name, value_col, where)
    if lowest is None or lowest < 0:
        return None  # an unlisted item that can be negative: nothing is surely impossible
    return format_value(-(abs(value) or 1.0) * 10), "negative value of an item never recorded below zero"


@register
class ImplausibleValue(Injector):
    noise_type = NoiseType.IMPLAUSIBLE_VALUE
    status = Status.IMPLAUSIBLE_VALUE
    applies = Applicability(needs_measure=True,
                            note="needs the measured value the answer rests on (template.measure)")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        for table_name, value_col, _unit_col, row, value in _measured_rows(case, rng):
            found = _impossible(lookup, table_name, value_col, row, value, rng)
            if found is None:
                continue
            text, rule = found
            yield Draft(_params(table=table_name, row_id=row[ROW_ID], column=value_col,
                                item=_item_of(table_name, row), original=sql_text(row[value_col]),
                                implausible=text, rule=rule),
                        self.status, patch=Patch(update=set_value(table_name, row, value_col, text)))

    def accepted(self, case, draft, effect: Effect, answer_under: AnswerUnder):
        (changed,) = {(c.table, c.row_id) for c in draft.patch.update}
        outcomes = [Outcome(Status.IMPLAUSIBLE_VALUE)]
        recomputed = answer_under(Patch(hide=(RowRef(*changed),)))
        outcomes.append(Outcome(Status.ANSWERED, recomputed) if recomputed is not None
                        else Outcome(Status.NO_EVIDENCE))
        return tuple(outcomes)


@register
class UnitMismatch(Injector):
    noise_type = NoiseType.UNIT_MISMATCH
    status = Status.UNIT_INCONSISTENCY
    applies = Applicability(needs_measure=True,
                            note="needs the measured value the answer rests on and a known conversion of its unit")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        for table_name, value_col, unit_col, row, value in _measured_rows(case, rng):
            if not isinstance(value, float):
                continue  # a time has no unit to get wrong
            item = _item_of(table_name, row)
            described = measured_item(table_name, item, value_col)
            unit = row.get(unit_col) if unit_col else (described.unit if described else None)
            conversions = list(conversions_for(table_name, item, unit, value_col))
            rng.shuffle(conversions)
            for conv in conversions[:1]:
                text = format_value(conv.apply(value))
                if as_number(text) == value:
                    continue  # a zero that converts to zero would change nothing
                updates = set_value(table_name, row, value_col, text)
                if unit_col:
                    updates += set_value(table_name, row, unit_col, conv.unit)
                yield Draft(_params(table=table_name, row_id=row[ROW_ID], column=value_col, item=item,
                                    original=sql_text(row[value_col]), original_unit=unit, converted=text,
                                    converted_unit=conv.unit, factor=conv.factor, offset=conv.offset),
                            self.status, patch=Patch(update=updates))

    def accepted(self, case, draft, effect: Effect, answer_under: AnswerUnder):
        outcomes = [Outcome(Status.UNIT_INCONSISTENCY)]
        if _round_trips(draft):
            # Converting the value back gives the clean value to within 1e-6 of it, far inside any
            # tolerance, so an agent that converts answers what the clean task answers.
            outcomes.append(Outcome(Status.ANSWERED, case.task.answer))
        return tuple(outcomes)


def _round_trips(draft: Draft) -> bool:
    p = {n.name: n.value for n in draft.params}
    back = (float(p["converted"]) - float(p["offset"])) / float(p["factor"])
    original = float(p["original"])
    return abs(back - original) <= 1e-6 * max(1.0, abs(original))
