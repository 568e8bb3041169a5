"""Answers per type: executed rows normalise to one trustworthy value, submissions compare against it."""

from datetime import date, datetime
from decimal import Decimal

import pytest

from pipeline.answers import (AnswerShapeError, Problem, SubmissionError, Unanswerable, answer_text, answers_match,
                              normalise, parse_submission)
from pipeline.task_model import AnswerValue
from pipeline.vocabulary import AnswerType as A


def problem_of(answer_type, rows, **kw) -> Problem:
    with pytest.raises(Unanswerable) as e:
        normalise(answer_type, rows, **kw)
    return e.value.problem


# ---------------------------------------------------------------- number


def test_a_number_is_rounded_half_up_to_the_templates_decimals():
    assert normalise(A.NUMBER, [(2.675,)], decimals=2) == AnswerValue(number=2.68)
    assert normalise(A.NUMBER, [(Decimal("7.25"),)], decimals=1) == AnswerValue(number=7.3)
    assert normalise(A.NUMBER, [(3,)], decimals=0) == AnswerValue(number=3.0)


def test_a_number_answer_needs_exactly_one_finite_non_null_row():
    assert problem_of(A.NUMBER, []) is Problem.NO_ROWS
    assert problem_of(A.NUMBER, [(1.0,), (2.0,)]) is Problem.SEVERAL_ROWS
    assert problem_of(A.NUMBER, [(None,)]) is Problem.NULL_VALUE
    assert problem_of(A.NUMBER, [(float("nan"),)]) is Problem.NOT_A_NUMBER
    assert problem_of(A.NUMBER, [("4.2",)]) is Problem.NOT_A_NUMBER


def test_numbers_match_within_the_tolerance_and_not_beyond():
    expected = AnswerValue(number=4.2)
    assert answers_match(A.NUMBER, expected, 4.205, tolerance=0.01)
    assert answers_match(A.NUMBER, expected, 4.21, tolerance=0.01)
    assert not answers_match(A.NUMBER, expected, 4.22, tolerance=0.01)
    assert not answers_match(A.NUMBER, expected, 4.2001)  # no tolerance: exact


def test_a_number_submission_may_carry_the_tasks_unit_and_no_other():
    expected = AnswerValue(number=1.2)
    assert answers_match(A.NUMBER, expected, "1.2 mg/dL", tolerance=0.01, unit="mg/dL")
    assert answers_match(A.NUMBER, expected, " 1.2MG/DL ", tolerance=0.01, unit="mg/dL")
    assert not answers_match(A.NUMBER, expected, "1.2 mmol/L", tolerance=0.01, unit="mg/dL")
    assert parse_submission(A.NUMBER, "1,234.5") == AnswerValue(number=1234.5)
    for bad in ("1,5", "about 3", True, None, [1]):
        with pytest.raises(SubmissionError):
            parse_submission(A.NUMBER, bad, unit="mg/dL")


# ---------------------------------------------------------------- text


def test_text_is_trimmed_with_inner_whitespace_collapsed_and_case_kept():
    assert normalise(A.TEXT, [("  Sodium Chloride 0.9%  Flush ",)]) == AnswerValue(text="Sodium Chloride 0.9% Flush")


def test_text_compares_case_and_whitespace_insensitively():
    expected = AnswerValue(text="HOME HEALTH CARE")
    assert answers_match(A.TEXT, expected, "home  health care")
    assert not answers_match(A.TEXT, expected, "home")
    assert not answers_match(A.TEXT, expected, ["HOME HEALTH CARE"])


def test_a_text_answer_rejects_ties_nulls_and_empty_text():
    assert problem_of(A.TEXT, [("IV",), ("PO",)]) is Problem.SEVERAL_ROWS
    assert problem_of(A.TEXT, [(None,)]) is Problem.NULL_VALUE
    assert problem_of(A.TEXT, [("   ",)]) is Problem.NULL_VALUE


# ---------------------------------------------------------------- text_set


def test_a_set_is_distinct_and_sorted_whatever_the_row_order():
    rows = [("PO",), ("iv",), ("IV",), ("NG",)]
    assert normalise(A.TEXT_SET, rows) == normalise(A.TEXT_SET, list(reversed(rows)))
    assert normalise(A.TEXT_SET, rows).items == ("IV", "NG", "PO")


def test_sets_match_in_any_order_and_case_but_not_with_a_member_missing():
    expected = AnswerValue(items=("IV", "NG", "PO"))
    assert answers_match(A.TEXT_SET, expected, ["po", "IV", "ng"])
    assert answers_match(A.TEXT_SET, expected, '["NG", "PO", "IV"]')
    assert not answers_match(A.TEXT_SET, expected, ["IV", "PO"])
    assert not answers_match(A.TEXT_SET, expected, "IV, NG, PO")  # not a list: refused, not split on commas


def test_a_set_with_a_null_member_or_no_rows_is_unanswerable():
    assert problem_of(A.TEXT_SET, [("IV",), (None,)]) is Problem.NULL_VALUE
    assert problem_of(A.TEXT_SET, []) is Problem.NO_ROWS


# ---------------------------------------------------------------- text_ranked


def test_a_ranked_list_is_ordered_by_its_rank_column_not_by_row_order():
    rows = [("Furosemide", 2), ("Insulin", 1), ("Heparin", 3)]
    assert normalise(A.TEXT_RANKED, rows) == AnswerValue(items=("Insulin", "Furosemide", "Heparin"))


def test_a_tie_inside_a_ranking_or_at_its_cut_is_unanswerable():
    assert problem_of(A.TEXT_RANKED, [("a", 1), ("b", 2), ("c", 2)]) is Problem.TIED_RANKS  # tie at the cut
    assert problem_of(A.TEXT_RANKED, [("a", 1), ("b", 1), ("c", 3)]) is Problem.TIED_RANKS  # tie inside


def test_ranked_lists_match_only_in_the_same_order():
    expected = AnswerValue(items=("Insulin", "Furosemide"))
    assert answers_match(A.TEXT_RANKED, expected, ["insulin", "FUROSEMIDE"])
    assert not answers_match(A.TEXT_RANKED, expected, ["Furosemide", "Insulin"])


def test_a_ranked_gold_sql_must_return_item_and_rank():
    with pytest.raises(AnswerShapeError, match="2 column"):
        normalise(A.TEXT_RANKED, [("Insulin",)])


# ---------------------------------------------------------------- boolean


def test_booleans_normalise_from_bool_or_zero_one():
    assert normalise(A.BOOLEAN, [(True,)]) == AnswerValue(boolean=True)
    assert normalise(A.BOOLEAN, [(0,)]) == AnswerValue(boolean=False)
    assert problem_of(A.BOOLEAN, [(2,)]) is Problem.NOT_A_BOOLEAN
    assert problem_of(A.BOOLEAN, [(None,)]) is Problem.NULL_VALUE


def test_boolean_submissions_read_yes_no_words():
    assert answers_match(A.BOOLEAN, AnswerValue(boolean=True), "Yes")
    assert answers_match(A.BOOLEAN, AnswerValue(boolean=False), "false")
    assert not answers_match(A.BOOLEAN, AnswerValue(boolean=True), "no")
    assert not answers_match(A.BOOLEAN, AnswerValue(boolean=True), "maybe")


# ---------------------------------------------------------------- timestamp


def test_timestamps_are_kept_to_the_second_and_dates_become_midnight():
    assert normalise(A.TIMESTAMP, [(datetime(2150, 1, 2, 3, 4, 5, 678),)]) == \
        AnswerValue(timestamp=datetime(2150, 1, 2, 3, 4, 5))
    assert normalise(A.TIMESTAMP, [(date(2150, 1, 2),)]) == AnswerValue(timestamp=datetime(2150, 1, 2))
    assert problem_of(A.TIMESTAMP, [("2150-01-02",)]) is Problem.NOT_A_TIMESTAMP


def test_timestamps_match_to_the_second_in_iso_text():
    expected = AnswerValue(timestamp=datetime(2150, 1, 2, 3, 4, 5))
    assert answers_match(A.TIMESTAMP, expected, "2150-01-02 03:04:05")
    assert answers_match(A.TIMESTAMP, expected, "2150-01-02T03:04:05.900")
    assert not answers_match(A.TIMESTAMP, expected, "2150-01-02 03:04:06")
    assert not answers_match(A.TIMESTAMP, expected, "yesterday")


# ---------------------------------------------------------------- across types


def test_an_answer_value_of_the_wrong_type_is_refused_as_a_submission():
    with pytest.raises(SubmissionError):
        parse_submission(A.NUMBER, AnswerValue(text="4.2"))
    assert answers_match(A.NUMBER, AnswerValue(number=4.2), AnswerValue(number=4.2))


def test_an_unknown_answer_type_is_named_in_the_error():
    with pytest.raises(ValueError, match="'fraction' is not an answer type"):
        normalise("fraction", [(1,)])


def test_answer_text_renders_every_type_for_previews():
    assert answer_text(A.NUMBER, AnswerValue(number=3.0)) == "3"
    assert answer_text(A.TEXT_SET, AnswerValue(items=("a", "b"))) == '["a", "b"]'
    assert answer_text(A.TIMESTAMP, AnswerValue(timestamp=datetime(2150, 1, 2))) == "2150-01-02 00:00:00"


# ---------------------------------------------------------------- oversized and out-of-range submissions

HUGE_INT = 10 ** 5000  # more digits than Python turns into text
OVERSIZED = {
    "int 10**400": 10 ** 400,
    "int -10**400": -10 ** 400,
    "int of 5000 digits": HUGE_INT,
    "5-million-digit text": "9" * 5_000_000,
    "400-digit text": "1" + "0" * 400,
    "1e400 as text": "1e400",
    "nan": float("nan"),
    "infinity": float("inf"),
    "signalling NaN": Decimal("sNaN"),
    "decimal 1e999999": Decimal("1e999999"),
    "list with a huge int": [HUGE_INT],
    "list with a 5-million-digit text": ["9" * 5_000_000],
    "JSON list of a 5-million-digit number": "[" + "9" * 5_000_000 + "]",
    "JSON list of a 4400-digit number": "[" + "9" * 4_400 + "]",
    "deeply nested JSON": "[" * 40_000 + "]" * 40_000,
    "two million items": ["x"] * 2_000_000,
    "ten-million-character text": "x" * 10_000_000,
    "dict": {"a": 1},
    "bytes": b"x" * 10,
    "set": {1, 2},
    "complex": 1 + 2j,
    "object": object(),
}


TEXT_READS = {"400-digit text", "1e400 as text", "nan", "infinity", "signalling NaN", "decimal 1e999999",
              "JSON list of a 4400-digit number", "deeply nested JSON", "bytes", "set", "complex", "object"}


@pytest.mark.parametrize("answer_type", list(A))
@pytest.mark.parametrize("name", list(OVERSIZED))
def test_oversized_and_out_of_range_submissions_are_submission_errors_with_short_messages(answer_type, name):
    raw = OVERSIZED[name]
    try:
        parse_submission(answer_type, raw, unit="mg/dL")
    except SubmissionError as exc:
        assert len(str(exc)) < 300, str(exc)[:500]
    else:  # a text answer reads any value of bounded size as its text
        assert answer_type is A.TEXT and name in TEXT_READS, (name, answer_type)


def test_the_issues_three_submissions_are_refused_as_answers():
    with pytest.raises(SubmissionError, match="out of range"):
        parse_submission(A.NUMBER, 10 ** 400)
    for answer_type in (A.TEXT_SET, A.TEXT_RANKED):
        with pytest.raises(SubmissionError, match="longer than the 100,000 characters"):
            parse_submission(answer_type, ["9" * 5_000_000])
        with pytest.raises(SubmissionError, match="longer than the 100,000 characters"):
            parse_submission(answer_type, "9" * 5_000_000)
    assert not answers_match(A.NUMBER, AnswerValue(number=1.0), 10 ** 400)
