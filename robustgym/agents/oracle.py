"""The oracle: plays the task's first accepted outcome. It must score 100%; anything less is a bug
in the release, the environment or the verifier."""

from pipeline.task_model import Task
from robustgym.agents.base import Plan, Privilege, register_agent, submission_value
from robustgym.env import Env, TaskObservation


class OracleAgent:
    name = "oracle"
    privilege = Privilege.ORACLE

    def run(self, env: Env, observation: TaskObservation, hint: Plan | Task | None, *, seed: int) -> None:
        if not isinstance(hint, Task):
            raise TypeError("the oracle needs the task (Privilege.ORACLE)")
        outcome = hint.accepted_outcomes[0]
        answer = submission_value(hint.answer_type, outcome.answer) if outcome.answer is not None else None
        env.submit(outcome.status, answer)


register_agent("oracle")(OracleAgent)
