"""Value-level noise: rows stay, the measured value an answer rests on changes.

Both injectors need the template's ``measure`` (table, value column, unit column) and work on the
evidence rows of that table, one row per twin.

- ``implausible_value`` writes a physiologically impossible value (``physiology.MEASURED_ITEMS``;
  for unlisted items never recorded below zero, a negative value). Accepted: ``implausible_value``,
  or the answer recomputed without the row (the gold SQL re-run with the row hidden), or
  ``no_evidence`` when nothing is left once the row is set aside.
- ``unit_mismatch`` rewrites the value in another unit and relabels the unit column (for ``omr``,
  which has no unit column, the value no longer fits the unit in the item's name). Accepted:
  ``unit_inconsistency``, or the clean answer, which converting back restores (the twin's recorded
  value converts back to the clean value within 1e-6, far inside any task's tolerance).
"""

from collections.abc import Iterator
from random import Random

from pipeline.noise.case import CleanCase, SourceLookup, measure_of, sql_text
from pipeline.noise.edits import as_number, pick, set_value
from pipeline.noise.physiology import conversions_for, format_value, measured_item
from pipeline.noise.registry import AnswerUnder, Applicability, Draft, Effect, Injector, register
from pipeline.noise.row_roles import roles
from pipeline.schema import ROW_ID
from pipeline.task_model import NamedValue, Outcome, Patch, RowRef
from pipeline.vocabulary import NoiseType, Status

ROWS_TRIED = 3  # evidence rows a value twin may target, in seeded order


def _item_of(table_name: str, row: dict):
    item = roles(table_name).item
    return row.get(item[0]) if item else None


def _measured_rows(case: CleanCase, rng: Random) -> list[tuple[str, str, str | None, dict, float]]:
    table_name, value_col, unit_col = measure_of(case.template)
    rows = [(table_name, value_col, unit_col, r, as_number(r.get(value_col)))
            for r in case.evidence_rows(table_name)]
    return pick([r for r in rows if r[4] is not None], ROWS_TRIED, rng)


def _params(**kw) -> tuple[NamedValue, ...]:
    return tuple(NamedValue(k, str(v)) for k, v in kw.items())


@register
class ImplausibleValue(Injector):
    noise_type = NoiseType.IMPLAUSIBLE_VALUE
    status = Status.IMPLAUSIBLE_VALUE
    applies = Applicability(needs_measure=True,
                            note="needs the measured value the answer rests on (template.measure)")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        for table_name, value_col, _unit_col, row, value in _measured_rows(case, rng):
            item = _item_of(table_name, row)
            described = measured_item(table_name, item)
            if described is not None:
                values, rule = list(described.impossible), f"outside {described.name} range {described.plausible}"
                rng.shuffle(values)
            else:
                item_col = roles(table_name).item
                where = f"\"{item_col[0]}\" = {item!r}" if item_col and item is not None else "TRUE"
                lowest = lookup.column_min(table_name, value_col, where)
                if lowest is None or lowest < 0:
                    continue  # an unlisted item that can be negative: nothing is surely impossible
                values, rule = [-(abs(value) or 1.0) * 10], "negative value of an item never recorded below zero"
            for new in values[:1]:
                text = format_value(new)
                yield Draft(_params(table=table_name, row_id=row[ROW_ID], column=value_col, item=item,
                                    original=sql_text(row[value_col]), implausible=text, rule=rule),
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
            item = _item_of(table_name, row)
            described = measured_item(table_name, item)
            unit = row.get(unit_col) if unit_col else (described.unit if described else None)
            conversions = list(conversions_for(table_name, item, unit))
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
