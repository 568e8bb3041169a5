"""What else changes with a column, so that a changed row is as consistent as the source's own rows.

MIMIC-IV derives some columns of a row from others, and a changed value that leaves them behind gives
itself away to an agent that reads one row:

- an ICU stay's ``los`` is always ``outtime - intime`` in days. A stay whose ``los`` was corrupted but
  whose times were not still tells its true length; a duplicate whose ``los`` disagrees with its
  own times is plainly the made-up one of the two;
- a lab's ``flag`` reads ``abnormal`` exactly when the value lies outside the row's reference range
  (all but 185 of the demo's 88,000 results with a range). A second result of 177 next to 136 that
  the laboratory did not flag marks the made-up row;
- a DRG or HCPCS code comes with the description the source records for it. A duplicate that keeps
  the code and changes only the description disagrees with every other row of that code;
- an ICU input's amount is its rate times its duration, and mostly the amount first ordered. A second
  charting of the same infusion at another amount, with the first one's rate and original amount,
  is the made-up row of the two (``recharted``);
- an APR-DRG's severity and risk of mortality are graded together: severity 1 never comes with
  mortality 4 in the source, so a duplicate's severity is one the source records beside its
  mortality (``graded_with``).

So a value-changing injector asks ``with_derived`` for the full change of a row, and a conflicting
duplicate takes a code and its description together (``coded_pair``). Declared here once per table.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from pipeline.noise.case import sql_text
from pipeline.noise.edits import as_number
from pipeline.noise.stored_digits import stored_like, to_single
from pipeline.schema import TABLES_BY_NAME

SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class Duration:
    """``column`` holds ``end`` - ``start`` in days."""

    column: str
    start: str
    end: str


@dataclass(frozen=True)
class RangeFlag:
    """``flag`` reads ``abnormal`` when ``value`` lies outside [``lower``, ``upper``], else it is empty."""

    flag: str
    value: str
    lower: str
    upper: str
    abnormal: str = "abnormal"


@dataclass(frozen=True)
class CodedText:
    """``text`` is what the source records for ``code`` (among rows sharing ``within``)."""

    code: str
    text: str
    within: tuple[str, ...] = ()


@dataclass(frozen=True)
class Proportional:
    """``columns`` of a row stand in one proportion: an amount is its rate times the row's duration. A column
    of ``follows`` (column, partner) moves with them only where it equals its partner or its partner is
    empty (the amount first ordered is the amount given when the whole bag ran; the rate first ordered is
    the rate charted, or the amount's own rate where none is charted); elsewhere it keeps its value: the
    same bag, the same order. ``single`` of them the source stores in float32s."""

    columns: tuple[str, ...]
    follows: tuple[tuple[str, str], ...] = ()
    single: tuple[str, ...] = ()


DURATIONS: dict[str, tuple[Duration, ...]] = {"icustays": (Duration("los", "intime", "outtime"),)}
RANGE_FLAGS: dict[str, tuple[RangeFlag, ...]] = {
    "labevents": (RangeFlag("flag", "valuenum", "ref_range_lower", "ref_range_upper"),)}
CODED_TEXTS: dict[str, tuple[CodedText, ...]] = {
    "drgcodes": (CodedText("drg_code", "description", within=("drg_type",)),),
    "hcpcsevents": (CodedText("hcpcs_cd", "short_description"),),
}
PROPORTIONAL: dict[str, Proportional] = {
    "inputevents": Proportional(("amount", "rate", "originalamount", "originalrate"),
                                follows=(("originalamount", "amount"), ("originalrate", "rate")),
                                single=("originalamount", "originalrate")),
}
# Columns graded together: the values one takes beside the other's are the ones the source records.
GRADED_TOGETHER: dict[str, tuple[tuple[str, str], ...]] = {
    "drgcodes": (("drg_severity", "drg_mortality"),),
}


def with_derived(table_name: str, row: dict, changes: dict[str, str | None]) -> dict[str, str | None] | None:
    """``changes`` to ``row`` (column -> new text) with what the source derives from them: a duration
    recomputed from a changed end, or the end moved to a changed duration (which is then written as
    the whole seconds between the times, as the source's are); a range flag set from a changed value
    (against the range as changed too, when it is).
    None when no row can hold them in step (a duration that would end past the calendar)."""
    out = dict(changes)
    for d in DURATIONS.get(table_name, ()):
        start = row.get(d.start)
        if not isinstance(start, datetime) or (d.column in changes) == (d.end in changes):
            continue
        if d.column in changes:
            days = as_number(changes[d.column])
            if days is None:
                continue
            seconds = round(days * SECONDS_PER_DAY)
            try:
                out[d.end] = sql_text(start + timedelta(seconds=seconds))
            except OverflowError:
                return None
        else:
            end = datetime.fromisoformat(changes[d.end]) if changes[d.end] else None
            if end is None:
                continue
            seconds = (end - start).total_seconds()
        out[d.column] = sql_text(seconds / SECONDS_PER_DAY)
    for f in RANGE_FLAGS.get(table_name, ()):
        lower = as_number(changes[f.lower]) if f.lower in changes else row.get(f.lower)
        upper = as_number(changes[f.upper]) if f.upper in changes else row.get(f.upper)
        value = as_number(changes.get(f.value))
        if f.value not in changes or f.flag in changes or value is None or lower is None or upper is None:
            continue
        out[f.flag] = f.abnormal if value < lower or value > upper else None
    return out


def recharted(table_name: str, row: dict, changes: dict[str, str | None]) -> dict[str, str | None]:
    """``changes`` to ``row`` with the columns in proportion to a changed one (``PROPORTIONAL``) moved in
    step, each stored as the source stores it (``stored_digits.stored_like``): what a second charting of
    the same thing at another value records. A column that is empty or zero stays as it is, and so does
    a follower out of step with its partner; a follower changed alone is another bag or order, not
    another amount given, and moves nothing."""
    group = PROPORTIONAL.get(table_name)
    changed = [c for c in group.columns if c in changes] if group else []
    partner = dict(group.follows) if group else {}
    if len(changed) != 1 or changed[0] in partner:
        return changes
    old, new = as_number(row.get(changed[0])), as_number(changes[changed[0]])
    if not old or new is None:
        return changes
    out = dict(changes)
    for column in group.columns:
        value = as_number(row.get(column))
        if column == changed[0] or not value or (column in partner and not _in_step(value, row.get(partner[column]))):
            continue
        out[column] = stored_like(value * new / old, value, single=column in group.single)
    # A follower equal to its partner stays equal: the partner's new value, stored as the follower is, not
    # a rounding of its own that differs in the sixth digit.
    for column, other in group.follows:
        if column in out and column not in changes and as_number(row.get(other)) and out.get(other) is not None \
                and _in_step(as_number(row.get(column)), row.get(other)):
            out[column] = repr(to_single(float(out[other]))) if column in group.single else out[other]
    return out


def _in_step(value: float, partner) -> bool:
    """Whether a follower is in step with its partner: equal to it, or the partner is empty."""
    partner = as_number(partner)
    return not partner or abs(value - partner) <= 1e-6 * abs(partner)


def graded_with(table_name: str, column: str) -> tuple[str, ...]:
    """The columns ``column`` is graded together with (an APR-DRG severity with its risk of mortality)."""
    return tuple(other for pair in GRADED_TOGETHER.get(table_name, ()) if column in pair
                 for other in pair if other != column)


def range_bounds(table_name: str) -> tuple[str, ...]:
    """The reference-range columns of ``table_name``: a value written in another unit takes its range along."""
    return tuple(c for f in RANGE_FLAGS.get(table_name, ()) for c in (f.lower, f.upper))


def follows_others(table_name: str) -> frozenset[str]:
    """Columns that only ever follow others (a range flag): a duplicate never disagrees on them alone."""
    return frozenset(f.flag for f in RANGE_FLAGS.get(table_name, ()))


def coded_texts(table_name: str) -> tuple[CodedText, ...]:
    """The code-and-description pairs of ``table_name``."""
    return CODED_TEXTS.get(table_name, ())


def coded_pair(table_name: str, column: str) -> CodedText | None:
    """The code-and-description pair ``column`` belongs to, if any."""
    return next((c for c in coded_texts(table_name) if column in (c.code, c.text)), None)


def _check() -> None:
    # A misspelt column here would leave a derived column behind silently.
    declared = [(t, (d.column, d.start, d.end)) for t, ds in DURATIONS.items() for d in ds]
    declared += [(t, (f.flag, f.value, f.lower, f.upper)) for t, fs in RANGE_FLAGS.items() for f in fs]
    declared += [(t, (c.code, c.text, *c.within)) for t, cs in CODED_TEXTS.items() for c in cs]
    declared += [(t, p.columns + p.single + tuple(c for f in p.follows for c in f)) for t, p in PROPORTIONAL.items()]
    for t, p in PROPORTIONAL.items():
        stray = sorted((set(p.single) | {c for f in p.follows for c in f}) - set(p.columns))
        if stray:
            raise ValueError(f"row_consistency: {t!r} declares {stray} beside, not among, its proportional columns")
    declared += [(t, pair) for t, pairs in GRADED_TOGETHER.items() for pair in pairs]
    for table_name, columns in declared:
        unknown = sorted(set(columns) - set(TABLES_BY_NAME[table_name].column_names))
        if unknown:
            raise ValueError(f"row_consistency: table {table_name!r} has no column(s) {unknown}")


_check()
