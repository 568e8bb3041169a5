"""The reference floors: agents that score without looking at the record.

- ``abstain`` always submits ``no_evidence``. It is right on every twin whose noise leaves nothing to
  answer with, and wrong on every clean task; the reliability score makes that a loss.
- ``clean_answer`` submits the clean task's gold answer (for a twin, the answer of the clean task it
  derives from) and never checks anything: perfect on clean tasks, blind to noise.

A model worth reporting must score above both (``robustgym.floors`` scores them for a release).
"""

from pipeline.vocabulary import Status
from robustgym.agents.base import CleanAnswer, Hint, Privilege, register_agent, submission_value
from robustgym.env import Env, TaskObservation


class AbstainAgent:
    name = "abstain"
    privilege = Privilege.NONE

    def run(self, env: Env, observation: TaskObservation, hint: Hint, *, seed: int) -> None:
        env.submit(Status.NO_EVIDENCE)


class CleanAnswerAgent:
    name = "clean_answer"
    privilege = Privilege.CLEAN_ANSWER

    def run(self, env: Env, observation: TaskObservation, hint: Hint, *, seed: int) -> None:
        if not isinstance(hint, CleanAnswer):
            raise TypeError("the clean_answer agent needs the clean task's answer (Privilege.CLEAN_ANSWER)")
        env.submit(Status.ANSWERED, submission_value(hint.answer_type, hint.answer))


register_agent("abstain")(AbstainAgent)
register_agent("clean_answer")(CleanAnswerAgent)
