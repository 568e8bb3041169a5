"""The naive agent: runs the task's gold SQL and always answers with what it returns.

It trusts the record, so it solves clean tasks and fails where noise changed what the data
supports: the distance between its clean and noisy scores is the robustness gap the benchmark
measures. Rows become an answer by the same rules that made the gold answers
(``pipeline.answers.normalise``); when they support none (no rows, NULL, a tie), it still answers
with the first value it got, or a placeholder, because never abstaining is what makes it naive.
"""

from typing import Any

from pipeline.answers import Unanswerable, normalise
from pipeline.task_model import Task
from pipeline.vocabulary import AnswerType, Status
from robustgym.agents.base import Plan, Privilege, register_agent, submission_value
from robustgym.env import Env, TaskObservation

PLACEHOLDER: dict[AnswerType, Any] = {AnswerType.NUMBER: 0, AnswerType.TEXT: "unknown", AnswerType.TEXT_SET: ["unknown"],
                                      AnswerType.TEXT_RANKED: ["unknown"], AnswerType.BOOLEAN: False,
                                      AnswerType.TIMESTAMP: "1970-01-01 00:00:00"}


def rows_to_submission(answer_type: AnswerType, rows: list[list[Any]]) -> Any:
    """The answer the rows support, or the best guess a non-abstaining agent would give."""
    try:
        return submission_value(answer_type, normalise(answer_type, rows))
    except (Unanswerable, ValueError):
        pass
    if answer_type in (AnswerType.TEXT_SET, AnswerType.TEXT_RANKED):
        items = [str(r[0]) for r in rows if r and r[0] is not None]
        return items or PLACEHOLDER[answer_type]
    first = next((r[0] for r in rows if r and r[0] is not None), None)
    if first is None:
        return PLACEHOLDER[answer_type]
    return submission_value(answer_type, normalise(answer_type, [[first]])) if _normalisable(answer_type, first) \
        else PLACEHOLDER[answer_type]


def _normalisable(answer_type: AnswerType, value: Any) -> bool:
    try:
        normalise(answer_type, [[value]])
        return True
    except (Unanswerable, ValueError):
        return False


class NaiveAgent:
    name = "naive"
    privilege = Privilege.PLAN

    def run(self, env: Env, observation: TaskObservation, hint: Plan | Task | None, *, seed: int) -> None:
        if not isinstance(hint, Plan):
            raise TypeError("the naive agent needs the task's plan (Privilege.PLAN)")
        result = env.sql(hint.gold_sql)
        rows = result.data["rows"] if result.ok else []
        env.submit(Status.ANSWERED, rows_to_submission(hint.answer_type, rows))


register_agent("naive")(NaiveAgent)
