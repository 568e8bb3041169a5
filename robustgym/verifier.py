"""The verifier: does a submission reach one of the task's accepted outcomes?

Comparison by answer type is ``pipeline.answers`` (the same rules that normalised the gold answer);
this module decides which outcome a submission is compared with, and refuses to grade a task that
gives it nothing to check. A task with no accepted outcome, an ``answered`` outcome without an
answer, or a clean task accepting anything but its answer is an error (``VerifierError``), never a
pass: a verifier that passes by default is the loophole tau2-bench and SWE-bench both once had.
"""

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from pipeline.answers import SubmissionError, answers_match, check_answer, show_value
from pipeline.task_model import Task
from pipeline.vocabulary import Status, Variant


class VerifierError(ValueError):
    """The task cannot be graded; the message names the task and every problem."""


class Outcome(StrEnum):
    """How a graded episode ended, for the reliability score (wrong answers cost more than abstaining)."""

    CORRECT = "correct"  # an accepted outcome
    ABSTAINED = "abstained"  # not accepted, and the agent did not commit to an answer (status != answered)
    WRONG = "wrong"  # not accepted, and the agent committed to an answer
    NO_SUBMISSION = "no_submission"  # the episode ended without a submission
    ERROR = "error"  # the environment could not grade (a malformed task)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reward: float
    outcome: Outcome
    submitted_status: str
    expected_status: str
    matched_outcome: int | None  # index into the task's accepted_outcomes
    reason: str

    def to_dict(self) -> dict:
        return {**asdict(self), "outcome": self.outcome.value}

    @classmethod
    def from_dict(cls, data: dict) -> "Verdict":
        return cls(**{**data, "outcome": Outcome(data["outcome"])})


def task_problems(task: Task) -> list[str]:
    """Why ``task`` cannot be graded (empty when it can)."""
    problems = []
    if not task.accepted_outcomes:
        problems.append("no accepted outcome")
    for i, outcome in enumerate(task.accepted_outcomes):
        if outcome.status == Status.ANSWERED:
            if outcome.answer is None:
                problems.append(f"accepted outcome {i} is 'answered' without an answer")
            else:
                try:
                    check_answer(task.answer_type, outcome.answer)
                except SubmissionError as exc:
                    problems.append(f"accepted outcome {i}: {exc}")
        elif task.variant == Variant.CLEAN:
            problems.append(f"a clean task is passed only by its answer, but outcome {i} accepts {outcome.status.value}")
    if task.variant == Variant.CLEAN and task.expected_status != Status.ANSWERED:
        problems.append(f"a clean task expects 'answered', not {task.expected_status.value}")
    return problems


def verify(task: Task, status: Status | str, answer: Any = None) -> Verdict:
    """Grade a submission. Raises ``VerifierError`` when the task itself cannot be graded."""
    problems = task_problems(task)
    if problems:
        raise VerifierError(f"task {task.task_id} cannot be graded: " + "; ".join(problems))
    expected = task.expected_status.value
    try:
        submitted = Status(status)
    except ValueError:
        return _fail(show_value(status), expected, f"{show_value(status)} is not a status", answered=False)
    answered = submitted == Status.ANSWERED
    wrong_answer = None
    for i, outcome in enumerate(task.accepted_outcomes):
        if outcome.status != submitted:
            continue
        if outcome.answer is None:
            return Verdict(True, 1.0, Outcome.CORRECT, submitted.value, expected, i,
                           f"status {submitted.value} is accepted")
        if answers_match(task.answer_type, outcome.answer, answer, tolerance=task.tolerance, unit=task.unit):
            return Verdict(True, 1.0, Outcome.CORRECT, submitted.value, expected, i,
                           f"status {submitted.value} with the accepted answer")
        wrong_answer = i
    if wrong_answer is not None:
        return _fail(submitted.value, expected, f"status {submitted.value} is accepted but the answer "
                     f"{show_value(answer)} is not", answered)
    accepted = sorted({o.status.value for o in task.accepted_outcomes})
    return _fail(submitted.value, expected, f"status {submitted.value} is not accepted (accepted: {accepted})", answered)


def _fail(submitted: str, expected: str, reason: str, answered: bool) -> Verdict:
    return Verdict(False, 0.0, Outcome.WRONG if answered else Outcome.ABSTAINED, submitted, expected, None, reason)
