"""Value-level noise: rows stay, the measured value an answer rests on changes.

Both injectors need the template's ``measure`` (table, value column, unit column) and work on the
evidence rows of that table, one row per twin. A lab result the ICU chart imports holds its value in
both tables (``row_roles.Copy.imported``), and a reader may answer from the chart's copy: such a row
gets no implausible value (a charting error would be in both), and a unit twin only where its value,
converted back, is the reading again (26.9 kPa gives 201.77 mmHg, not the chart's 202).

- ``implausible_value`` writes the value a real charting error would have produced
  (``pipeline.noise.value_errors``: a decimal shift, a lost decimal point, a value in another unit
  charted unconverted, transposed or doubled digits, a sign slip, a placeholder, an end time typed
  wrong), kept only when it lies outside the item's physiological limits
  (``physiology.MEASURED_ITEMS``; items without declared limits get no implausible twin). The
  mechanism is recorded in ``noise_params``; what the source derives from the value moves with it
  (``row_consistency``: a lab's flag, an ICU stay's length and end time, so the true length cannot be
  read off the times); mechanisms are taken least-used first so none dominates,
  and a replacement value is used once per item, so no value can be memorised. Accepted:
  ``implausible_value``, or the answer recomputed without the row, or ``no_evidence`` when nothing
  is left once the row is set aside; ``implausible_value`` alone where another table records the row
  a second time (``row_roles.RowRoles.recorded_also_in``: an ICU stay's end in ``transfers``, an
  admission's discharge as its discharge transfer), since the copy, not the rest, answers there
  (noise parameter ``recorded_also``).
- ``unit_mismatch`` rewrites the value in another unit, with the significant digits the reading was
  charted with, at least three (``physiology.charted_in_other_unit``: 98.8 °F becomes 37.1 °C, 69 kg
  152 lb), and relabels the row's unit column (only where the table has one: a unit an agent can see
  is not the item's usual one); a lab's reference range moves to the new unit with it, as a
  laboratory reporting in that unit gives it, and its flag stays in step. Only units someone charts
  the item in (no potassium in mg/dL, no blood pressure in cmH2O) and no value below
  ``SMALLEST_CHARTED`` (0.0005 g). The conversion's family (SI vs conventional, temperature scale,
  ...) is the mechanism.
  Accepted: ``unit_inconsistency``, or the answer the record gives once the value is converted back
  to the usual unit, as the label check converts it: the clean answer when the charted digits
  restore the reading exactly (438 mL charted 0.438 L), else the answer over the value they restore
  (69 kg charted 152 lb converts back to 68.95).
"""

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, datetime
from random import Random

from pipeline.noise.anomalies import UNIT_OF
from pipeline.noise.case import CleanCase, SourceLookup, measure_of, sql_text
from pipeline.noise.derived_results import recomputable
from pipeline.noise.edits import as_number, pick, set_value
from pipeline.noise.physiology import (ENDS_AFTER, Conversion, charted_in_other_unit, conversion_family, conversions_for,
                                       format_value, measured_item, recorded_digits, written_back)
from pipeline.noise.registry import AnswerUnder, Applicability, Draft, DropReason, Effect, Injector, register
from pipeline.noise.row_consistency import range_bounds, with_derived
from pipeline.noise.row_roles import roles
from pipeline.noise.stored_digits import clinical_value
from pipeline.noise.value_errors import ANALYSER_REPORTED, MECHANISMS, Mechanism, outside
from pipeline.schema import ROW_ID, table
from pipeline.task_model import NamedValue, Outcome, Patch, RowRef, ValueChange
from pipeline.vocabulary import NoiseType, Status

ROWS_TRIED = 3  # evidence rows a value twin may target, in seeded order
# Erroneous values tried per row (different mechanisms). Three: a whole number's decimal point slips
# one place only, so a row has fewer errors outside its limits than it had when two places were tried.
VALUES_PER_ROW = 3


def _item_of(table_name: str, row: dict):
    item = roles(table_name).item
    return row.get(item[0]) if item else None


def _measured_rows(case: CleanCase, lookup: SourceLookup, rng: Random, *,
                   imported: bool) -> list[tuple[str, str, str | None, dict, object, bool]]:
    """Up to ``ROWS_TRIED`` evidence rows of the measure's table with a value (a number, or a time), and
    whether another system imports the row's copy (``Copy.imported``: the ICU chart imports the
    laboratory's results). ``imported=False``: none such rows."""
    table_name, value_col, unit_col = measure_of(case.template)
    rows = []
    for r in case.evidence_rows(table_name):
        value = r.get(value_col)
        value = value if isinstance(value, (datetime, date)) else as_number(value)
        if value is not None:
            rows.append((table_name, value_col, unit_col, r, value))
    copied = lookup.rows_recorded_also(table_name, [r for _, _, _, r, _ in rows], about=value_col,
                                       imported=True) if rows else frozenset()
    rows = [(*row, row[3].get(ROW_ID) in copied) for row in rows if imported or row[3].get(ROW_ID) not in copied]
    return pick(rows, ROWS_TRIED, rng)


def _params(**kw) -> tuple[NamedValue, ...]:
    return tuple(NamedValue(k, str(v)) for k, v in kw.items())


_INTEGER_RANGE = {"SMALLINT": 2 ** 15, "INTEGER": 2 ** 31, "BIGINT": 2 ** 63}


def _text(table_name: str, column: str, value: float) -> str | None:
    """The value as the column stores it, or None when the column cannot hold it."""
    if not math.isfinite(value):
        return None
    kind = table(table_name).column(column).type.upper()
    if kind in _INTEGER_RANGE:
        whole = int(round(value))
        return str(whole) if -_INTEGER_RANGE[kind] <= whole < _INTEGER_RANGE[kind] else None
    return format_value(value)


class _Usage:
    """What published twins of one injector used: mechanisms (to take the least used first) and the
    replacement values per item (each used once)."""

    def __init__(self, lookup: SourceLookup, key: str):
        self.mechanisms: Counter = lookup.memo.setdefault(("usage", key, "mechanisms"), Counter())
        self.values: dict = lookup.memo.setdefault(("usage", key, "values"), {})

    def order(self, names, rng: Random) -> list[str]:
        names = list(names)
        rng.shuffle(names)
        return sorted(names, key=lambda n: self.mechanisms[n])  # stable: ties keep the seeded order

    def used(self, item_key, text: str) -> bool:
        return text in self.values.get(item_key, set())

    def keep(self, mechanism: str, item_key, text: str) -> None:
        self.mechanisms[mechanism] += 1
        self.values.setdefault(item_key, set()).add(text)


# Below this, a value in another unit is one no chart writes (a dose of 0.0005 g, a volume of 0.002 L).
SMALLEST_CHARTED = 0.01


@register
class ImplausibleValue(Injector):
    noise_type = NoiseType.IMPLAUSIBLE_VALUE
    status = Status.IMPLAUSIBLE_VALUE
    applies = Applicability(needs_measure=True,
                            note="needs the measured value the answer rests on (template.measure), of an item "
                                 "with declared physiological limits or an end time with a start")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        usage = _Usage(lookup, self.noise_type.value)
        # Not a result the ICU chart imports: a potassium of 42 in labevents beside the chart's 4.2 at
        # the same time is no charting error (it would be in both), and a reader answering from the
        # chart's copy is right.
        for table_name, value_col, _unit_col, row, value, _ in _measured_rows(case, lookup, rng, imported=False):
            if recomputable(lookup, table_name, [row], about=value_col, exact_only=True):
                # Its siblings give the value (a BMI of 999 beside the day's weight and height): the
                # answer with it set aside, or none, is not what a reader who recomputes it answers.
                continue
            item = _item_of(table_name, row)
            item_key = (table_name, str(item) if item is not None else value_col)
            found = 0
            for mechanism, new, rule in self._candidates(table_name, value_col, row, value, usage, rng):
                if found == VALUES_PER_ROW:
                    break
                # What the source derives from the value moves with it (an ICU stay's los and its end time).
                derived = with_derived(table_name, row, {value_col: new})
                if derived is None or usage.used(item_key, derived[value_col]):
                    continue
                found += 1
                new = derived[value_col]
                updates = set_value(table_name, row, value_col, new) + tuple(
                    ValueChange(table_name, int(row[ROW_ID]), c, v) for c, v in derived.items() if c != value_col)
                # The row as the twin leaves it, less what changed: does another table still hold its copy?
                kept = {c: v for c, v in row.items() if c not in {u.column for u in updates}}
                copied = "yes" if lookup.recorded_also(table_name, [kept], about=value_col) else "no"
                yield Draft(_params(table=table_name, row_id=row[ROW_ID], column=value_col, item=item,
                                    original=sql_text(row[value_col]), implausible=new, mechanism=mechanism.name,
                                    rule=rule, recorded_also=copied),
                            self.status, patch=Patch(update=updates))

    @staticmethod
    def _candidates(table_name, value_col, row, value, usage: _Usage,
                    rng: Random) -> Iterator[tuple[Mechanism, str, str]]:
        by_name = {m.name: m for m in MECHANISMS}
        if isinstance(value, (datetime, date)):
            start_col = ENDS_AFTER.get((table_name, value_col))
            start = row.get(start_col) if start_col else None
            if not isinstance(start, (datetime, date)):
                return
            for name in usage.order([m.name for m in MECHANISMS if m.times], rng):
                for new in by_name[name].times(value, start):
                    yield by_name[name], sql_text(new), f"{value_col} before {start_col}: it ends before it starts"
            return
        described = measured_item(table_name, _item_of(table_name, row), value_col)
        if described is None:
            return  # no declared limits: nothing is surely impossible
        # An analyser reports a test with fixed decimals: a haemoglobin of 8.8 keyed off by a decimal place
        # is 88, never 0.88, which no laboratory reports for it.
        finest = recorded_digits(float(value))[1] if table_name in ANALYSER_REPORTED else None
        for name in usage.order([m.name for m in MECHANISMS if m.numbers and m.reaches(table_name)], rng):
            values = by_name[name].numbers(float(value), described)
            rng.shuffle(values)
            for new in values:
                text = _text(table_name, value_col, new)
                if text is None or as_number(text) == value or not outside(described, float(text)):
                    continue
                if finest is not None and recorded_digits(float(text))[1] > finest:
                    continue
                yield by_name[name], text, f"outside {described.name} limits {described.plausible}"

    def accepted(self, case, draft, effect: Effect, answer_under: AnswerUnder):
        (changed,) = {(c.table, c.row_id) for c in draft.patch.update}
        outcomes = [Outcome(Status.IMPLAUSIBLE_VALUE)]
        if draft.param("recorded_also") == "yes":
            # Another table still holds the row's value (an ICU stay's end in transfers): the answer
            # without the row is not what the record gives, and the copy's is not the row's own.
            return tuple(outcomes)
        recomputed = answer_under(Patch(hide=(RowRef(*changed),)))
        if recomputed.answer is not None:
            outcomes.append(Outcome(Status.ANSWERED, recomputed.answer))
        elif recomputed.no_answer:
            outcomes.append(Outcome(Status.NO_EVIDENCE))
        else:
            return DropReason.TIE_WITHOUT_ROWS
        return tuple(outcomes)

    def kept(self, case, draft, lookup: SourceLookup) -> None:
        table_name, item = draft.param("table"), draft.param("item")
        item_key = (table_name, item if item not in (None, "None") else draft.param("column"))
        _Usage(lookup, self.noise_type.value).keep(draft.param("mechanism"), item_key, draft.param("implausible"))


@register
class UnitMismatch(Injector):
    noise_type = NoiseType.UNIT_MISMATCH
    status = Status.UNIT_INCONSISTENCY
    applies = Applicability(needs_measure=True,
                            note="needs the measured value the answer rests on, in a table with a unit column, "
                                 "and a known conversion of its unit")

    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        usage = _Usage(lookup, self.noise_type.value)
        for table_name, value_col, unit_col, row, value, imported in _measured_rows(case, lookup, rng, imported=True):
            if not isinstance(value, float) or unit_col is None or table_name not in UNIT_OF:
                continue  # a time has no unit; without a unit column the unit cannot be seen to be wrong
            item = _item_of(table_name, row)
            unit = row.get(unit_col)
            conversions = list(conversions_for(table_name, item, unit, value_col))
            rng.shuffle(conversions)
            conversions.sort(key=lambda c: usage.mechanisms[conversion_family(c.unit)])
            # The reading a pump or a nurse charted, past its float32 storage (49.99999888241291 mL is 50
            # mL): written in another unit it is 0.05 L, never 0.0499999988.
            reading = clinical_value(value)
            for conv in conversions[:1]:
                text = format_value(charted_in_other_unit(conv.apply(reading), reading))
                if as_number(text) == value:
                    continue  # a zero that converts to zero would change nothing
                if abs(as_number(text)) < SMALLEST_CHARTED:
                    continue  # 0.5 mg is not charted as 0.0005 g: a value nobody writes gives the twin away
                if imported and not _restores_reading(conv, text, sql_text(row[value_col])):
                    # The ICU chart's copy holds the reading (a pO2 of 202 mmHg): converted back, 26.9 kPa
                    # must give it too (not 201.77), or a reader answering from the chart is marked wrong.
                    continue
                updates = (set_value(table_name, row, value_col, text, other_unit=True)
                           + set_value(table_name, row, unit_col, conv.unit))
                updates += _range_in(table_name, row, value_col, text, conv)
                yield Draft(_params(table=table_name, row_id=row[ROW_ID], column=value_col, item=item,
                                    original=sql_text(row[value_col]), original_unit=unit, converted=text,
                                    converted_unit=conv.unit, factor=conv.factor, offset=conv.offset,
                                    mechanism=conversion_family(conv.unit)),
                            self.status, patch=Patch(update=updates))

    def accepted(self, case, draft, effect: Effect, answer_under: AnswerUnder):
        outcomes = [Outcome(Status.UNIT_INCONSISTENCY)]
        conversion = _conversion(draft)
        if _restores_reading(conversion, draft.param("converted"), draft.param("original")):
            # The charted digits restore the reading: an agent that converts answers the clean task's answer.
            outcomes.append(Outcome(Status.ANSWERED, case.task.answer))
            return tuple(outcomes)
        back = written_back(conversion, float(draft.param("converted")))
        # The value converted back, in the usual unit; the same patch the label check sets the row aside with.
        column, table_name = draft.param("column"), draft.param("table")
        restored = {c: back for c in (column, roles(table_name).mirror_of(column)) if c}
        restored[UNIT_OF[table_name][1]] = draft.param("original_unit")
        observed = answer_under(Patch(update=tuple(replace(u, value=restored.get(u.column, u.value))
                                                   for u in draft.patch.update)))
        if observed.answer is not None:
            outcomes.append(Outcome(Status.ANSWERED, observed.answer))
        return tuple(outcomes)

    def kept(self, case, draft, lookup: SourceLookup) -> None:
        _Usage(lookup, self.noise_type.value).mechanisms[draft.param("mechanism")] += 1


def _range_in(table_name: str, row: dict, value_col: str, text: str, conv: Conversion) -> tuple[ValueChange, ...]:
    """The row's reference range written in the value's new unit, as a laboratory reporting in that
    unit gives it (a range left in the usual unit, and a flag out of step with it, would show which
    row was rewritten without a look at the unit), and the flag as the value stands in it."""
    bounds = {c: format_value(charted_in_other_unit(conv.apply(row[c]), row[c]))
              for c in range_bounds(table_name) if isinstance(row.get(c), (int, float))}
    if not bounds:
        return ()
    derived = with_derived(table_name, row, {value_col: text, **bounds}) or {}
    rid = int(row[ROW_ID])
    return tuple(ValueChange(table_name, rid, c, v) for c, v in derived.items()
                 if c != value_col and (c in bounds or v != row.get(c)))


def _conversion(draft: Draft) -> Conversion:
    return Conversion(draft.param("converted_unit"), float(draft.param("factor")), float(draft.param("offset")))


def _restores_reading(conversion: Conversion, converted: str, original: str) -> bool:
    """The value charted in the other unit, converted back as a reader converts it, is the reading again:
    the twin accepts the clean answer (``UnitMismatch.accepted``)."""
    return as_number(written_back(conversion, as_number(converted))) == float(original)
