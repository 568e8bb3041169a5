"""How wrong values really get into a record: the mechanisms ``implausible_value`` draws from.

An implausible value in a real EHR is rarely a random absurd number. It is a decimal point typed in
the wrong place or lost, a value charted in another unit than the field's, two digits transposed, a
key pressed twice, a sign slip, a placeholder an interface stores for "not obtained" (9999), or a date
typed wrong so that an end comes before its start. Each ``Mechanism`` turns the clean value into the
values that error would produce, scaled to the item by construction (a decimal shift of a
potassium of 4.2 gives 42, of a heart rate of 82 gives 820, never 8200).

The injector keeps a candidate only when it lies outside the item's physiological limits
(``pipeline.noise.physiology``): inside them an agent could not tell the error from a real reading.
Since the source audit (``pipeline.noise.anomalies``) flags every source value outside those limits, a
kept value is also outside everything the source shows unflagged for the item.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from pipeline.noise.physiology import MeasuredItem, charted_in_other_unit, format_value

NumberErrors = Callable[[float, MeasuredItem], list[float]]
TimeErrors = Callable[[datetime | date, datetime | date], list[datetime | date]]


@dataclass(frozen=True)
class Mechanism:
    name: str
    says: str  # what happened, in the words a chart reviewer would use
    numbers: NumberErrors | None = None  # clean value -> erroneous values (numeric items)
    times: TimeErrors | None = None  # (clean end time, start time) -> erroneous end times
    not_in: frozenset[str] = frozenset()  # tables whose values this error never reaches

    def reaches(self, table_name: str) -> bool:
        return table_name not in self.not_in


# Results an analyser sends through an interface: nobody keys a minus sign in front of them, and a
# filler for "not obtained" is a charting interface's, not a laboratory's (an LDH of -282 or 9999 is
# no error a laboratory system makes).
ANALYSER_REPORTED = frozenset({"labevents"})


def _digits(value: float) -> str:
    return format_value(value)


def _decimal_shift(value: float, item: MeasuredItem) -> list[float]:
    # One place only, one slip of a key (a heart rate of 89 keyed 890, a potassium of 4.2 keyed 42): two
    # places off a whole number is two zeros nobody keyed (89 as 8900, an age of 57 as 5700), and two
    # places within the digits (1.23 as 123) is the decimal point lost, a mechanism of its own.
    return [value * 10.0, value * 0.1]


def _decimal_point_lost(value: float, item: MeasuredItem) -> list[float]:
    text = _digits(abs(value))
    if "." not in text:
        return []
    return [float(text.replace(".", "").lstrip("0") or "0") * (1 if value >= 0 else -1)]


def _unit_scale(value: float, item: MeasuredItem) -> list[float]:
    # The value measured in another unit, charted in this item's field without converting, with the
    # digits that measurement has.
    return [charted_in_other_unit(c.apply(value), value) for c in item.conversions]


def _keyed(text: str, value: float) -> list[float]:
    """The value keyed as ``text`` (with ``value``'s sign), if it is written back as keyed: "105" with its
    first two digits swapped is "015", stored as 15, which reads as a digit dropped, not two swapped."""
    keyed = float(text)
    return [keyed * (1 if value >= 0 else -1)] if _digits(keyed) == text else []


def _transposed_digits(value: float, item: MeasuredItem) -> list[float]:
    text = _digits(abs(value))
    out = []
    for i in range(len(text) - 1):
        a, b = text[i], text[i + 1]
        if a.isdigit() and b.isdigit() and a != b:
            out += _keyed(text[:i] + b + a + text[i + 2:], value)
    return out


def _doubled_digit(value: float, item: MeasuredItem) -> list[float]:
    text = _digits(abs(value))
    out = []
    for i, ch in enumerate(text):
        if ch.isdigit():
            out += _keyed(text[:i + 1] + ch + text[i + 1:], value)
    return out


def _sign_slip(value: float, item: MeasuredItem) -> list[float]:
    return [-value] if value > 0 and item.plausible[0] >= 0 else []


def _placeholder(value: float, item: MeasuredItem) -> list[float]:
    return [999.0, 9999.0, 99999.0, 999999.0]


def _end_typed_wrong(end: datetime | date, start: datetime | date) -> list[datetime | date]:
    out = []
    # Day and month swapped (03-12 typed for 12-03), a year digit slipped, AM typed for PM.
    if end.day <= 12 and end.day != end.month:
        out.append(end.replace(month=end.day, day=end.month))
    year = str(end.year)
    # The last two digits only: "2145" keyed "2154" or "2154" keyed "2145"; a slip in the first two
    # ("1245") makes a year no date field accepts.
    for i in range(len(year) - 2, len(year) - 1):
        if year[i] != year[i + 1]:
            try:
                out.append(end.replace(year=int(year[:i] + year[i + 1] + year[i] + year[i + 2:])))
            except ValueError:
                pass
    if isinstance(end, datetime) and end.hour >= 12:
        out.append(end - timedelta(hours=12))
    out.append(end - timedelta(days=1))  # the day before: discharge typed on the admission's eve
    return [t for t in out if t < start]


MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism("decimal_shift", "the decimal point typed one place off", numbers=_decimal_shift),
    Mechanism("decimal_point_lost", "the decimal point dropped when the value was keyed", numbers=_decimal_point_lost),
    Mechanism("unit_scale", "a value measured in another unit charted in this field without converting",
              numbers=_unit_scale),
    Mechanism("transposed_digits", "two adjacent digits swapped", numbers=_transposed_digits),
    Mechanism("doubled_digit", "a digit keyed twice", numbers=_doubled_digit),
    Mechanism("sign_slip", "a minus sign keyed in front of a value that cannot be negative", numbers=_sign_slip,
              not_in=ANALYSER_REPORTED),
    Mechanism("placeholder", "a filler value an interface stores for 'not obtained' (999, 9999, ...)",
              numbers=_placeholder, not_in=ANALYSER_REPORTED),
    Mechanism("end_typed_wrong", "an end date or time keyed wrong (day and month swapped, a year digit slipped, "
              "AM for PM) so that it precedes the start", times=_end_typed_wrong),
)
MECHANISM_NAMES = tuple(m.name for m in MECHANISMS)


def _unique() -> None:
    if len(set(MECHANISM_NAMES)) != len(MECHANISM_NAMES):
        raise ValueError(f"value error mechanisms repeat a name: {MECHANISM_NAMES}")


_unique()


def outside(item: MeasuredItem, value: float) -> bool:
    lo, hi = item.plausible
    return value < lo or value > hi
