"""What an agent is, what it may know, and the registry of agents by name.

An agent plays one episode: it reads the reset observation and calls the environment's tools
until it submits. Reference agents may know more than the question: ``Privilege.PLAN`` gives the
task's plan (gold SQL and slots, never the answer or the accepted outcomes) and
``Privilege.ORACLE`` the whole task; ``Privilege.CLEAN_ANSWER`` the gold answer of the clean task
(a twin's own clean task), which is what the ``clean_answer`` floor copies. The evaluation runner
hands this hint over; the sandboxed tools never expose it. Agents are registered once by name; a
second registration raises.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from pipeline.task_model import AnswerValue, Task
from pipeline.vocabulary import AnswerType
from robustgym.env import Env, TaskObservation


class Privilege(StrEnum):
    NONE = "none"  # the question and the tools, like any external agent
    PLAN = "plan"  # also the gold SQL and slots of the task (what a template author knows)
    ORACLE = "oracle"  # the whole task row, accepted outcomes included
    CLEAN_ANSWER = "clean_answer"  # the clean task's gold answer (for a twin: its clean task's), nothing else


@dataclass(frozen=True)
class Plan:
    """The part of a task a reference agent may plan with: how to compute it, not what it is."""

    task_id: str
    question: str
    template_id: str
    gold_sql: str
    slots: dict[str, str]
    answer_type: AnswerType
    unit: str | None

    @classmethod
    def of(cls, task: Task) -> "Plan":
        return cls(task.task_id, task.question, task.template_id, task.gold_sql,
                   {s.name: s.value for s in task.slots}, task.answer_type, task.unit)


@dataclass(frozen=True)
class CleanAnswer:
    """The gold answer of the clean task an episode's task is (or derives from)."""

    clean_task_id: str
    answer_type: AnswerType
    answer: AnswerValue

    @classmethod
    def of(cls, clean_task: Task) -> "CleanAnswer":
        if clean_task.answer is None:
            raise ValueError(f"task {clean_task.task_id} is not a clean task with an answer")
        return cls(clean_task.task_id, clean_task.answer_type, clean_task.answer)


Hint = Plan | Task | CleanAnswer | None


class Agent(Protocol):
    name: str
    privilege: Privilege

    def run(self, env: Env, observation: TaskObservation, hint: Hint, *, seed: int) -> None:
        """Play the episode ``env`` was reset to; end it with ``env.submit``. Agents may be run from
        several threads at once (``run_agent(concurrency=N)``): keep an episode's state in locals."""


def hint_for(task: Task, privilege: Privilege, clean_task: Task | None = None) -> Hint:
    """What an agent of ``privilege`` is told about ``task``; ``clean_task`` is the clean task a twin
    derives from (needed for ``Privilege.CLEAN_ANSWER`` only)."""
    if privilege == Privilege.ORACLE:
        return task
    if privilege == Privilege.PLAN:
        return Plan.of(task)
    if privilege == Privilege.CLEAN_ANSWER:
        if task.clean_task_id is None:
            return CleanAnswer.of(task)
        if clean_task is None or clean_task.task_id != task.clean_task_id:
            raise ValueError(f"task {task.task_id}: the clean_answer hint needs its clean task {task.clean_task_id}")
        return CleanAnswer.of(clean_task)
    return None


class DuplicateAgentError(ValueError):
    pass


_FACTORIES: dict[str, Callable[..., Agent]] = {}


def register_agent(name: str) -> Callable[[Callable[..., Agent]], Callable[..., Agent]]:
    def decorate(factory: Callable[..., Agent]) -> Callable[..., Agent]:
        if name in _FACTORIES:
            raise DuplicateAgentError(f"agent {name!r} is already registered")
        _FACTORIES[name] = factory
        return factory

    return decorate


def agent_names() -> tuple[str, ...]:
    return tuple(sorted(_FACTORIES))


def make_agent(name: str, **options: Any) -> Agent:
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise KeyError(f"no agent named {name!r}; registered: {list(agent_names())}") from None
    return factory(**options)


def submission_value(answer_type: AnswerType, answer: AnswerValue) -> Any:
    """An answer as an agent would submit it (JSON-ready: numbers, text, lists, booleans, ISO text)."""
    value = {AnswerType.NUMBER: answer.number, AnswerType.TEXT: answer.text, AnswerType.TEXT_SET: answer.items,
             AnswerType.TEXT_RANKED: answer.items, AnswerType.BOOLEAN: answer.boolean,
             AnswerType.TIMESTAMP: answer.timestamp}[AnswerType(answer_type)]
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return value
