"""Answers by type: normalise executed SQL rows, parse an agent's submission, compare the two.

One module serves both ends of a task. The template engine turns the rows a gold SQL returns into
the stored ``AnswerValue`` (``normalise``); the environment's verifier turns what an agent submits
into an ``AnswerValue`` (``parse_submission``) and compares (``answers_match``). Because both go
through the same per-type rules, a gold answer and a correct submission normalise the same way.

What a gold SQL must return, per answer type (one row per result row):

| type | rows | normalised to |
| --- | --- | --- |
| ``number`` | exactly one row, one non-null finite number | float rounded half-up to ``decimals`` |
| ``text`` | exactly one row, one non-null value | trimmed text, inner whitespace collapsed |
| ``boolean`` | exactly one row, one non-null boolean (or 0/1) | bool |
| ``timestamp`` | exactly one row, one non-null timestamp or date | datetime to the second |
| ``text_set`` | one or more rows, one non-null value each | distinct texts sorted case-insensitively |
| ``text_ranked`` | one or more rows ``(item, rank)`` | items ordered by rank; ranks must be distinct |

Rows that break these rules make the answer untrustworthy (it would depend on row order, ties or
NULLs): ``normalise`` raises ``Unanswerable`` with a ``Problem``, and the template engine rejects the
slot filling and counts the problem. A gold SQL whose column count is wrong is a template bug and
raises ``AnswerShapeError`` instead.
"""

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum
from typing import Any

from pipeline.task_model import AnswerValue
from pipeline.vocabulary import AnswerType

DEFAULT_DECIMALS = 2
_FLOAT_SLACK = 1e-9  # absorbs binary rounding when a difference equals the tolerance exactly


class Problem(StrEnum):
    """Why executed rows do not make a trustworthy answer."""

    NO_ROWS = "no_rows"  # the question has no answer on this database
    NULL_VALUE = "null_value"  # the answer (or a set member) is NULL
    SEVERAL_ROWS = "several_rows"  # one answer expected, several returned: a tie at first/last/top-1
    TIED_RANKS = "tied_ranks"  # a ranked list whose order (or cut) depends on a tie
    NOT_A_NUMBER = "not_a_number"  # a number answer that is text, NaN or infinite
    NOT_A_BOOLEAN = "not_a_boolean"
    NOT_A_TIMESTAMP = "not_a_timestamp"


class Unanswerable(ValueError):
    """The rows do not support exactly one answer; ``problem`` says why."""

    def __init__(self, problem: Problem, detail: str):
        super().__init__(f"{problem.value}: {detail}")
        self.problem = problem


class AnswerShapeError(ValueError):
    """The gold SQL returns the wrong number of columns for its answer type (a template bug)."""


class SubmissionError(ValueError):
    """A submitted value cannot be read as the task's answer type."""


# What a submission may hold. A real answer is a number, a short text or a short list; anything
# beyond these bounds is refused before it is parsed, so no conversion can overflow, exhaust the
# integer-to-text digit limit or recurse without end.
MAX_SUBMISSION_CHARS = 100_000  # a text, a list item, or a list written as JSON text
MAX_SUBMISSION_ITEMS = 1_000
MAX_NUMBER_BITS = 1024  # |x| >= 2**1024 does not fit a float


def show_value(value: Any, limit: int = 60) -> str:
    """A short rendering of any submitted value for messages: never huge, never raising."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() > 200:
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value):,} characters)"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value):,} item{'s' if len(value) != 1 else ''}" if len(value) > 5 else \
            "[" + ", ".join(show_value(v, 20) for v in value) + "]"
    if isinstance(value, (float, Decimal, datetime, date)):
        text = str(value)
        return text if len(text) <= limit else text[:limit] + "…"
    return f"a {type(value).__name__}"


def _check_size(raw: Any, depth: int = 0) -> None:
    if isinstance(raw, bool):
        return
    if isinstance(raw, int) and raw.bit_length() > MAX_NUMBER_BITS:
        raise SubmissionError(f"{show_value(raw)} is out of range for an answer")
    if isinstance(raw, (str, bytes)) and len(raw) > MAX_SUBMISSION_CHARS:
        raise SubmissionError(f"{show_value(raw)} is longer than the {MAX_SUBMISSION_CHARS:,} characters an answer "
                              "may have")
    if isinstance(raw, (list, tuple)):
        if len(raw) > MAX_SUBMISSION_ITEMS:
            raise SubmissionError(f"{show_value(raw)}: a list answer has at most {MAX_SUBMISSION_ITEMS:,} items")
        if depth > 0:
            raise SubmissionError("a list answer is a flat list of texts, not a list of lists")
        for item in raw:
            _check_size(item, depth + 1)


# ---------------------------------------------------------------- text rules shared by several types

_SPACE = re.compile(r"\s+")


def clean_text(value: Any) -> str:
    """Trim and collapse inner whitespace; case is kept (comparison ignores it)."""
    return _SPACE.sub(" ", str(value)).strip()


def text_key(value: str) -> str:
    """What two texts must share to be the same answer: case- and whitespace-insensitive."""
    return clean_text(value).casefold()


def _sorted_distinct(texts: Sequence[str]) -> tuple[str, ...]:
    by_key: dict[str, str] = {}
    for t in sorted(texts, key=lambda s: (text_key(s), s)):
        by_key.setdefault(text_key(t), t)
    return tuple(by_key.values())


# ---------------------------------------------------------------- one handler per answer type


@dataclass(frozen=True)
class _Kind:
    columns: int
    normalise: Callable[[list[tuple], int], AnswerValue]
    parse: Callable[[Any, str | None], AnswerValue]
    match: Callable[[AnswerValue, AnswerValue, float], bool]
    field: str


def _single(rows: list[tuple]) -> Any:
    if not rows:
        raise Unanswerable(Problem.NO_ROWS, "the query returned no rows")
    if len(rows) > 1:
        raise Unanswerable(Problem.SEVERAL_ROWS, f"one row expected, {len(rows)} returned")
    value = rows[0][0]
    if value is None:
        raise Unanswerable(Problem.NULL_VALUE, "the answer is NULL")
    return value


def _round(x: float, decimals: int) -> float:
    # Half-up on the shortest decimal repr, so 2.675 rounds to 2.68 as a reader expects.
    return float(Decimal(repr(x)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def _as_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise Unanswerable(Problem.NOT_A_NUMBER, f"{value!r} is not a number")
    x = float(value)
    if not math.isfinite(x):
        raise Unanswerable(Problem.NOT_A_NUMBER, f"{value!r} is not finite")
    return x


def _normalise_number(rows, decimals):
    return AnswerValue(number=_round(_as_number(_single(rows)), decimals))


# Commas only as thousands separators: "1,5" is refused rather than read as 15.
_NUMBER_WITH_UNIT = re.compile(
    r"^\s*([-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


def _parse_number(raw, unit):
    if isinstance(raw, bool):
        raise SubmissionError(f"{show_value(raw)} is a boolean, not a number")
    if isinstance(raw, (int, float, Decimal)):
        x = float(raw)
    elif isinstance(raw, str):
        m = _NUMBER_WITH_UNIT.match(raw)
        if not m:
            raise SubmissionError(f"{show_value(raw)} is not a number")
        number, suffix = m.groups()
        if suffix and (unit is None or text_key(suffix) != text_key(unit)):
            raise SubmissionError(f"{show_value(raw)}: unit {show_value(suffix)} is not the task's unit {unit!r}")
        x = float(number.replace(",", ""))
    else:
        raise SubmissionError(f"{show_value(raw)} is not a number")
    if not math.isfinite(x):
        raise SubmissionError(f"{show_value(raw)} is out of range for a number (not finite)")
    return AnswerValue(number=x)


def _match_number(expected, submitted, tolerance):
    return abs(expected.number - submitted.number) <= tolerance + _FLOAT_SLACK


def _normalise_text(rows, _decimals):
    text = clean_text(_single(rows))
    if not text:
        raise Unanswerable(Problem.NULL_VALUE, "the answer is empty text")
    return AnswerValue(text=text)


def _parse_text(raw, _unit):
    if isinstance(raw, (list, tuple, dict)) or raw is None:
        raise SubmissionError(f"{show_value(raw)} is not a text answer")
    return AnswerValue(text=clean_text(raw))


def _match_text(expected, submitted, _tolerance):
    return text_key(expected.text) == text_key(submitted.text)


def _normalise_set(rows, _decimals):
    if not rows:
        raise Unanswerable(Problem.NO_ROWS, "the query returned no rows")
    if any(r[0] is None for r in rows):
        raise Unanswerable(Problem.NULL_VALUE, "a member of the set is NULL")
    return AnswerValue(items=_sorted_distinct([clean_text(r[0]) for r in rows]))


def _parse_list(raw) -> list[str]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise SubmissionError(f"{show_value(raw)}: a list answer is a list or a JSON array of texts") from None
        _check_size(raw)
    if not isinstance(raw, (list, tuple)) or any(isinstance(x, (list, tuple, dict)) or x is None for x in raw):
        raise SubmissionError(f"{show_value(raw)}: a list answer is a list or a JSON array of texts")
    return [clean_text(x) for x in raw]


def _parse_set(raw, _unit):
    return AnswerValue(items=_sorted_distinct(_parse_list(raw)))


def _match_set(expected, submitted, _tolerance):
    return {text_key(x) for x in expected.items} == {text_key(x) for x in submitted.items}


def _normalise_ranked(rows, _decimals):
    if not rows:
        raise Unanswerable(Problem.NO_ROWS, "the query returned no rows")
    if any(r[0] is None for r in rows):
        raise Unanswerable(Problem.NULL_VALUE, "a ranked item is NULL")
    if any(r[1] is None for r in rows):
        raise Unanswerable(Problem.NULL_VALUE, "a rank is NULL")
    ranks = [r[1] for r in rows]
    if len(set(ranks)) != len(ranks):
        raise Unanswerable(Problem.TIED_RANKS, f"ranks {sorted(ranks)} contain a tie")
    return AnswerValue(items=tuple(clean_text(item) for item, _ in sorted(rows, key=lambda r: r[1])))


def _parse_ranked(raw, _unit):
    return AnswerValue(items=tuple(_parse_list(raw)))


def _match_ranked(expected, submitted, _tolerance):
    return [text_key(x) for x in expected.items] == [text_key(x) for x in submitted.items]


_TRUE = {"true", "yes", "y", "1", "t"}
_FALSE = {"false", "no", "n", "0", "f"}


def _normalise_boolean(rows, _decimals):
    value = _single(rows)
    if isinstance(value, bool):
        return AnswerValue(boolean=value)
    if isinstance(value, int) and value in (0, 1):
        return AnswerValue(boolean=bool(value))
    raise Unanswerable(Problem.NOT_A_BOOLEAN, f"{value!r} is not a boolean")


def _parse_boolean(raw, _unit):
    if isinstance(raw, bool):
        return AnswerValue(boolean=raw)
    if isinstance(raw, int) and raw in (0, 1):
        return AnswerValue(boolean=bool(raw))
    if isinstance(raw, str) and text_key(raw) in _TRUE | _FALSE:
        return AnswerValue(boolean=text_key(raw) in _TRUE)
    raise SubmissionError(f"{show_value(raw)} is not yes/no")


def _match_boolean(expected, submitted, _tolerance):
    return expected.boolean == submitted.boolean


def _to_second(value: datetime | date) -> datetime:
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    return value.replace(microsecond=0, tzinfo=None)


def _normalise_timestamp(rows, _decimals):
    value = _single(rows)
    if not isinstance(value, (datetime, date)):
        raise Unanswerable(Problem.NOT_A_TIMESTAMP, f"{value!r} is not a timestamp")
    return AnswerValue(timestamp=_to_second(value))


def _parse_timestamp(raw, _unit):
    if isinstance(raw, (datetime, date)):
        return AnswerValue(timestamp=_to_second(raw))
    if isinstance(raw, str):
        try:
            return AnswerValue(timestamp=_to_second(datetime.fromisoformat(raw.strip())))
        except ValueError:
            pass
    raise SubmissionError(f"{show_value(raw)} is not an ISO timestamp (YYYY-MM-DD[ HH:MM:SS])")


def _match_timestamp(expected, submitted, _tolerance):
    return expected.timestamp == submitted.timestamp


_KINDS: dict[AnswerType, _Kind] = {
    AnswerType.NUMBER: _Kind(1, _normalise_number, _parse_number, _match_number, "number"),
    AnswerType.TEXT: _Kind(1, _normalise_text, _parse_text, _match_text, "text"),
    AnswerType.TEXT_SET: _Kind(1, _normalise_set, _parse_set, _match_set, "items"),
    AnswerType.TEXT_RANKED: _Kind(2, _normalise_ranked, _parse_ranked, _match_ranked, "items"),
    AnswerType.BOOLEAN: _Kind(1, _normalise_boolean, _parse_boolean, _match_boolean, "boolean"),
    AnswerType.TIMESTAMP: _Kind(1, _normalise_timestamp, _parse_timestamp, _match_timestamp, "timestamp"),
}
assert set(_KINDS) == set(AnswerType), "every answer type needs a handler"


def _kind(answer_type: AnswerType | str) -> _Kind:
    try:
        return _KINDS[AnswerType(answer_type)]
    except ValueError:
        raise ValueError(f"{answer_type!r} is not an answer type; known: {[t.value for t in AnswerType]}") from None


# ---------------------------------------------------------------- public API


def result_columns(answer_type: AnswerType | str) -> int:
    """How many columns a gold SQL of this answer type returns."""
    return _kind(answer_type).columns


def normalise(answer_type: AnswerType | str, rows: Sequence[Sequence[Any]], *,
              decimals: int = DEFAULT_DECIMALS) -> AnswerValue:
    """The answer the executed rows support, or ``Unanswerable`` naming the problem."""
    kind = _kind(answer_type)
    rows = [tuple(r) for r in rows]
    for r in rows:
        if len(r) != kind.columns:
            raise AnswerShapeError(f"a {AnswerType(answer_type).value} gold SQL returns {kind.columns} column(s); "
                                   f"got a row of {len(r)}: {r!r}")
    return kind.normalise(rows, decimals)


@dataclass(frozen=True)
class Observed:
    """Executed rows read as an answer type: the answer, or the problem that prevents one."""

    answer: AnswerValue | None
    problem: Problem | None = None

    @property
    def no_answer(self) -> bool:
        """Nothing answers (no rows, or NULL): as opposed to rows that tie, which answer nothing either."""
        return self.answer is None and self.problem in (Problem.NO_ROWS, Problem.NULL_VALUE)


def observe(answer_type: AnswerType | str, rows: Sequence[Sequence[Any]], *,
            decimals: int = DEFAULT_DECIMALS) -> Observed:
    """``normalise``, with the problem returned instead of raised."""
    try:
        return Observed(normalise(answer_type, rows, decimals=decimals))
    except Unanswerable as exc:
        return Observed(None, exc.problem)


def parse_submission(answer_type: AnswerType | str, raw: Any, *, unit: str | None = None) -> AnswerValue:
    """Read an agent's submitted value (text, number, list or bool) as an answer of ``answer_type``.

    A number may carry the task's unit as a suffix (``"1.2 mg/dL"``); any other suffix is refused.
    Lists are Python lists or JSON arrays. Raises ``SubmissionError`` when the value cannot be read,
    including values out of range or beyond the size bounds (``MAX_SUBMISSION_*``).
    """
    if isinstance(raw, AnswerValue):
        return check_answer(answer_type, raw)
    kind = _kind(answer_type)
    _check_size(raw)
    try:
        return kind.parse(raw, unit)
    except SubmissionError:
        raise
    except (ValueError, OverflowError, RecursionError, TypeError, MemoryError) as exc:
        # A conversion the bounds above did not foresee: still the submission's fault, never ours.
        raise SubmissionError(f"{show_value(raw)} cannot be read as a {AnswerType(answer_type).value} answer "
                              f"({type(exc).__name__})") from None


def check_answer(answer_type: AnswerType | str, answer: AnswerValue) -> AnswerValue:
    """``answer`` itself if exactly the field of ``answer_type`` is set; ``SubmissionError`` otherwise."""
    kind = _kind(answer_type)
    set_fields = [f for f in ("number", "text", "items", "boolean", "timestamp") if getattr(answer, f) is not None]
    if set_fields != [kind.field]:
        raise SubmissionError(f"a {AnswerType(answer_type).value} answer sets only {kind.field!r}; got {set_fields}")
    return answer


def answers_match(answer_type: AnswerType | str, expected: AnswerValue, submitted: AnswerValue | Any, *,
                  tolerance: float | None = None, unit: str | None = None) -> bool:
    """Whether ``submitted`` (an ``AnswerValue`` or a raw submission) is the ``expected`` answer.

    Numbers match within ``tolerance`` (absolute, in ``unit``; exact when None); texts
    case- and whitespace-insensitively; sets as sets; ranked lists in order; timestamps to the second.
    A submission that cannot be read as the answer type does not match.
    """
    kind = _kind(answer_type)
    check_answer(answer_type, expected)
    try:
        submitted = parse_submission(answer_type, submitted, unit=unit)
    except SubmissionError:
        return False
    return kind.match(expected, submitted, tolerance or 0.0)


def answer_text(answer_type: AnswerType | str, answer: AnswerValue) -> str:
    """A one-line human rendering (previews, reports); not used for comparison."""
    value = getattr(answer, _kind(answer_type).field)
    if isinstance(value, tuple):
        return json.dumps(list(value), ensure_ascii=False)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
