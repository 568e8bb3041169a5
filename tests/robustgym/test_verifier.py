"""The verifier grades by answer type, passes a noisy task only on a robust outcome and a clean
task only on its answer, and refuses to grade a task that gives it nothing to check.

Loopholes covered (one test each): an empty accepted-outcome list passing by default; an
"answered" outcome without an answer accepting any answer; a clean task accepting a status; the
right status with a wrong answer; an answer smuggled in with a non-answer status; a status that is
not in the vocabulary; out-of-range and oversized values (10**400, 5-million-digit strings) raising
internal errors instead of a clear answer error.
"""

from dataclasses import replace
from datetime import datetime

import pytest

from pipeline.task_model import AnswerValue, Outcome as Accepted
from pipeline.vocabulary import AnswerType, Status
from robustgym.env import Env
from robustgym.trajectory import read_jsonl
from robustgym.verifier import Outcome, VerifierError, verify


def clean(demo_release, answer_type: AnswerType):
    return next(t for t in demo_release.tasks() if t.variant == "clean" and t.answer_type == answer_type)


def twin(demo_release, noise_type: str):
    return next(t for t in demo_release.tasks() if t.noise_type and t.noise_type.value == noise_type)


def test_numbers_match_within_the_tolerance_and_with_the_tasks_unit(demo_release):
    task = clean(demo_release, AnswerType.NUMBER)
    value = task.answer.number
    assert task.tolerance and task.unit
    assert verify(task, "answered", value).passed
    assert verify(task, "answered", value + task.tolerance * 0.9).passed
    assert not verify(task, "answered", value + task.tolerance * 1.5).passed
    assert verify(task, "answered", f"{value} {task.unit}").passed
    assert not verify(task, "answered", f"{value} mg/dL").passed


def test_text_matches_case_and_whitespace_insensitively(demo_release):
    task = clean(demo_release, AnswerType.TEXT)
    assert verify(task, "answered", f"  {task.answer.text.lower()} ").passed
    assert not verify(task, "answered", "X").passed


def test_sets_ignore_order_and_ranked_lists_do_not(demo_release):
    task = clean(demo_release, AnswerType.TEXT_SET)
    assert verify(task, "answered", list(reversed(task.answer.items))).passed
    assert not verify(task, "answered", list(task.answer.items[:-1])).passed
    ranked = clean(demo_release, AnswerType.TEXT_RANKED)
    assert verify(ranked, "answered", list(ranked.answer.items)).passed
    assert not verify(ranked, "answered", list(reversed(ranked.answer.items))).passed


def test_booleans_and_timestamps(demo_release):
    task = clean(demo_release, AnswerType.BOOLEAN)
    assert verify(task, "answered", "yes" if task.answer.boolean else "no").passed
    assert not verify(task, "answered", not task.answer.boolean).passed
    ts = clean(demo_release, AnswerType.TIMESTAMP)
    assert verify(ts, "answered", ts.answer.timestamp.isoformat(sep=" ")).passed
    assert verify(ts, "answered", ts.answer.timestamp.isoformat()).passed
    assert not verify(ts, "answered", datetime(2000, 1, 1).isoformat()).passed


def test_a_noisy_task_is_passed_only_by_a_robust_outcome(demo_release):
    task = twin(demo_release, "missing_evidence")
    assert verify(task, Status.NO_EVIDENCE).passed
    verdict = verify(task, "answered", 7.5)
    assert not verdict.passed and verdict.outcome == Outcome.WRONG
    other = verify(task, Status.CONFLICTING_EVIDENCE)
    assert not other.passed and other.outcome == Outcome.ABSTAINED


def test_value_noise_also_accepts_the_recomputed_answer_but_not_the_noisy_one(demo_release):
    task = twin(demo_release, "unit_mismatch")
    original = demo_release.task(task.clean_task_id).answer.number
    assert verify(task, Status.UNIT_INCONSISTENCY).passed
    assert verify(task, "answered", original).passed
    noisy = float(dict((p.name, p.value) for p in task.noise_params)["value"])
    assert not verify(task, "answered", noisy).passed


def test_a_clean_task_is_passed_only_by_its_answer(demo_release):
    task = clean(demo_release, AnswerType.NUMBER)
    for status in Status:
        if status != Status.ANSWERED:
            assert not verify(task, status).passed
    assert not verify(task, "answered", None).passed


def test_an_empty_accepted_outcome_list_is_an_error_never_a_pass(demo_release):
    task = replace(twin(demo_release, "missing_evidence"), accepted_outcomes=())
    for status in Status:
        with pytest.raises(VerifierError, match="no accepted outcome"):
            verify(task, status, 1)


def test_an_answered_outcome_without_an_answer_is_an_error_not_a_wildcard(demo_release):
    task = replace(twin(demo_release, "unit_mismatch"), accepted_outcomes=(Accepted(Status.ANSWERED),))
    with pytest.raises(VerifierError, match="without an answer"):
        verify(task, "answered", 123)


def test_a_clean_task_accepting_a_status_is_an_error(demo_release):
    base = clean(demo_release, AnswerType.NUMBER)
    task = replace(base, accepted_outcomes=base.accepted_outcomes + (Accepted(Status.NO_EVIDENCE),))
    with pytest.raises(VerifierError, match="clean task"):
        verify(task, Status.NO_EVIDENCE)


def test_an_answer_of_the_wrong_type_in_the_task_is_an_error(demo_release):
    base = clean(demo_release, AnswerType.NUMBER)
    task = replace(base, accepted_outcomes=(Accepted(Status.ANSWERED, AnswerValue(text="7.5")),))
    with pytest.raises(VerifierError):
        verify(task, "answered", 7.5)


def test_an_answer_next_to_a_non_answer_status_changes_nothing(demo_release):
    task = twin(demo_release, "missing_evidence")
    assert verify(task, Status.NO_EVIDENCE, "anything").passed
    assert not verify(task, Status.IMPLAUSIBLE_VALUE, "anything").passed


def test_a_status_outside_the_vocabulary_fails(demo_release):
    verdict = verify(twin(demo_release, "missing_evidence"), "not_sure")
    assert not verdict.passed and "not a status" in verdict.reason


FIVE_MILLION_DIGITS = "9" * 5_000_000


@pytest.mark.parametrize("answer_type,raw", [
    (AnswerType.NUMBER, 10 ** 400),
    (AnswerType.NUMBER, -10 ** 5000),
    (AnswerType.NUMBER, FIVE_MILLION_DIGITS),
    (AnswerType.NUMBER, "1e400"),
    (AnswerType.TEXT_SET, [FIVE_MILLION_DIGITS]),
    (AnswerType.TEXT_SET, "[" + FIVE_MILLION_DIGITS + "]"),
    (AnswerType.TEXT_SET, [10 ** 5000]),
    (AnswerType.TEXT_RANKED, [FIVE_MILLION_DIGITS, "x"]),
    (AnswerType.TEXT_RANKED, ["x"] * 100_000),
    (AnswerType.TEXT, FIVE_MILLION_DIGITS),
    (AnswerType.TIMESTAMP, "2" * 5_000_000),
    (AnswerType.BOOLEAN, 10 ** 400),
], ids=["10**400", "-10**5000", "5M-digit-number", "1e400", "set-5M-digits", "json-set-5M-digits",
        "set-huge-int", "ranked-5M-digits", "ranked-100k-items", "text-5M", "timestamp-5M", "boolean-10**400"])
def test_out_of_range_and_oversized_answers_are_bad_answer_errors_and_the_episode_goes_on(
        demo_release, tmp_path, answer_type, raw):
    task = clean(demo_release, answer_type)
    with Env(demo_release, trajectory_path=tmp_path / "t.jsonl") as env:
        env.reset(task.task_id)
        observation = env.submit("answered", raw)
        assert observation.error_kind == "bad_answer", observation.content[:300]
        assert len(observation.content) < 400 and not env.done
        assert env.submit("no_evidence", raw).ok  # a non-answer status ignores the value, still logged
        assert env.done and env.result.outcome == Outcome.ABSTAINED
    (trajectory,) = read_jsonl(tmp_path / "t.jsonl")
    assert trajectory.outcome == "abstained" and len(trajectory.steps) == 2


def test_the_verifier_itself_describes_a_huge_wrong_answer_without_failing(demo_release):
    verdict = verify(clean(demo_release, AnswerType.NUMBER), Status.ANSWERED, 10 ** 5000)
    assert not verdict.passed and "about 5,001 digits" in verdict.reason
