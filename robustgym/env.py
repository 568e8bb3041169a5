"""The interactive environment: one episode is one task of a release.

``reset(task_id)`` opens the task's database state (the base database with the task's patch laid
over it as connection-local views, in O(patch)) and returns the question, the tables and the tools.
The agent then calls ``sql(query)`` and ``python(code)`` as often as it likes and ends with
``submit(status, answer)``; the verifier grades the submission and the episode's trajectory is
logged. Every tool call goes through ``robustgym.tools.invoke``, so whatever the agent sends, the
environment answers with an observation and stays usable.
"""

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.answers import parse_submission
from pipeline.task_model import Task
from pipeline.vocabulary import Status
from robustgym import tools
from robustgym.jsonable import to_json
from robustgym.python_sandbox import PythonLimits, PythonOutput, PythonRunner
from robustgym.release import Release
from robustgym.sql_sandbox import Database, EpisodeDatabase, QueryResult, SqlLimits
from robustgym.trajectory import Step, Trajectory, append_jsonl
from robustgym.verifier import Outcome, Verdict, VerifierError, verify


@dataclass(frozen=True)
class Limits:
    sql: SqlLimits = field(default_factory=SqlLimits)
    python: PythonLimits = field(default_factory=PythonLimits)
    max_tool_calls: int = 40  # per episode, submit included; beyond it every call is an error


@dataclass(frozen=True)
class TaskObservation:
    """What ``reset`` gives the agent."""

    task_id: str
    question: str
    answer_type: str
    unit: str | None
    statuses: tuple[str, ...]
    tables: dict[str, tuple[tuple[str, str], ...]]
    tools: list[dict]
    system: str  # the instructions: role, tables, statuses, answer format

    @property
    def prompt(self) -> str:
        """The user turn: the question and the expected answer format."""
        fmt = f"{self.answer_type}" + (f", in {self.unit}" if self.unit else "")
        return f"{self.question}\n\n(Answer type: {fmt}.)"


@dataclass(frozen=True)
class Grade:
    reward: float
    passed: bool
    outcome: Outcome
    verdict: Verdict | None
    error: str | None


@dataclass(frozen=True)
class EpisodeResult:
    task_id: str
    reward: float
    passed: bool
    outcome: Outcome
    verdict: Verdict | None
    error: str | None
    trajectory: Trajectory


class EpisodeBudgetExceeded(RuntimeError):
    kind = "budget_exceeded"


class _Episode:
    """The state of one running episode; what ``robustgym.tools`` calls into."""

    def __init__(self, env: "Env", task: Task, db: EpisodeDatabase, observation: TaskObservation, trial: int,
                 episode_id: str, reset_ms: float):
        self.env, self.task, self.db, self.observation = env, task, db, observation
        self.trial, self.episode_id, self.reset_ms = trial, episode_id, reset_ms
        self.started = time.perf_counter()
        self.steps: list[Step] = []
        self.submission: dict | None = None
        self.grade: Grade | None = None

    def run_sql(self, query: str) -> QueryResult:
        return self.db.query(query)

    def run_python(self, code: str) -> PythonOutput:
        return self.env._python.run(code, self.db.query)

    def finish(self, status: Status, answer: Any) -> Grade:
        if status == Status.ANSWERED:
            # A value that cannot be read as the answer type is sent back (the episode goes on):
            # format slips are not what the benchmark measures, and reading reveals nothing.
            parse_submission(self.task.answer_type, answer, unit=self.task.unit)
        self.submission = {"status": status.value, "answer": to_json(answer)}
        try:
            verdict = verify(self.task, status, answer)
            error = None
        except VerifierError as exc:
            verdict, error = None, str(exc)
        return self.env._end(self, verdict, error)


class Env:
    """Episodes over one release. Not thread-safe: one ``Env`` per thread; ``worker()`` makes more
    that share this one's database instance (each episode is still its own connection)."""

    def __init__(self, release: Release, *, limits: Limits = Limits(), trajectory_path: Path | str | None = None,
                 agent_name: str = "agent"):
        self.release = release
        self.limits = limits
        self.agent_name = agent_name
        self.trajectory_path = Path(trajectory_path) if trajectory_path else None
        self._db = Database(release.base_database, limits.sql)
        self._python = PythonRunner([release.root, release.base_database], limits.python)
        self._tables = self._db.columns()
        self._system = _system_prompt(self._tables, limits)
        self._episode: _Episode | None = None
        self._last: EpisodeResult | None = None
        self._count = 0
        self._owner = True  # closes the database instance; workers do not

    def worker(self, *, trajectory_path: Path | str | None = None) -> "Env":
        """Another ``Env`` for another thread: the same base database instance (attached once,
        read-only) and Python runner, its own episode state. Each of its episodes is a connection of
        its own, so workers run episodes in parallel and see only their own patches. Closing a
        worker leaves the instance open; closing this ``Env`` closes it."""
        other = object.__new__(Env)
        other.__dict__.update(self.__dict__)
        other.trajectory_path = Path(trajectory_path) if trajectory_path else None
        other._episode, other._last, other._count, other._owner = None, None, 0, False
        return other

    # ------------------------------------------------------------ episode lifecycle

    def reset(self, task_id: str, *, trial: int = 0) -> TaskObservation:
        """Start the episode of ``task_id``; an episode still open is ended as not submitted."""
        if self._episode is not None:
            self.abandon("reset before submit")
        started = time.perf_counter()
        task = self.release.task(task_id)
        db = self._db.open_episode(task.patch)  # its connection is made at its first statement
        observation = TaskObservation(task.task_id, task.question, task.answer_type.value, task.unit,
                                      tuple(s.value for s in Status), self._tables, tools.declarations(),
                                      self._system)
        self._count += 1
        episode_id = f"{self.agent_name}/{task.task_id}/{trial}"
        self._episode = _Episode(self, task, db, observation, trial, episode_id,
                                 (time.perf_counter() - started) * 1000)
        self._last = None
        return observation

    def call(self, tool: str, arguments: Any) -> tools.Observation:
        """Call a tool by name with a dict of arguments (what a text or LLM agent sends)."""
        episode = self._episode
        if episode is not None and len(episode.steps) >= self.limits.max_tool_calls:
            observation = tools.error_observation(tool, EpisodeBudgetExceeded(
                f"the episode used its {self.limits.max_tool_calls} tool calls"))
            self.abandon("tool-call budget exhausted")
            return observation
        started = time.perf_counter()
        observation = tools.invoke(episode, tool, arguments)
        if episode is not None:
            episode.steps.append(Step(str(tool), to_json(arguments) if isinstance(arguments, dict) else
                                      {"_raw": to_json(arguments)}, observation.ok, observation.content,
                                      observation.error_kind, (started - episode.started) * 1000,
                                      observation.elapsed_ms))
            if episode.grade is not None:
                self._finalise(episode)
        return observation

    def sql(self, query: str) -> tools.Observation:
        return self.call("sql", {"query": query})

    def python(self, code: str) -> tools.Observation:
        return self.call("python", {"code": code})

    def submit(self, status: Status | str, answer: Any = None) -> tools.Observation:
        arguments = {"status": status.value if isinstance(status, Status) else status}
        if answer is not None:
            arguments["answer"] = answer
        return self.call("submit", arguments)

    def abandon(self, reason: str) -> EpisodeResult | None:
        """End the running episode without a submission (reward 0); None if none is running."""
        episode = self._episode
        if episode is None:
            return None
        self._end(episode, None, None, no_submission=reason)
        return self._finalise(episode)

    @property
    def done(self) -> bool:
        return self._episode is None and self._last is not None

    @property
    def result(self) -> EpisodeResult | None:
        """The last finished episode's result."""
        return self._last

    @property
    def task_id(self) -> str | None:
        return self._episode.task.task_id if self._episode else None

    def close(self) -> None:
        if self._episode is not None:
            self.abandon("environment closed")
        if self._owner:
            self._db.close()

    def __enter__(self) -> "Env":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ ending

    def _end(self, episode: _Episode, verdict: Verdict | None, error: str | None,
             no_submission: str | None = None) -> Grade:
        if verdict is not None:
            episode.grade = Grade(verdict.reward, verdict.passed, verdict.outcome, verdict, None)
        elif no_submission is not None:
            episode.grade = Grade(0.0, False, Outcome.NO_SUBMISSION, None, f"no submission: {no_submission}")
        else:
            episode.grade = Grade(0.0, False, Outcome.ERROR, None, error)
        return episode.grade

    def _finalise(self, episode: _Episode) -> EpisodeResult:
        task, partial = episode.task, episode.grade
        trajectory = Trajectory(
            episode_id=episode.episode_id, release=self.release.version, task_id=task.task_id,
            split=task.split.value if task.split else None, variant=task.variant.value, intent=task.intent.value,
            level=task.level.value, noise_level=task.noise_level.value if task.noise_level else None,
            noise_type=task.noise_type.value if task.noise_type else None, clean_task_id=task.clean_task_id,
            agent=self.agent_name, trial=episode.trial, system=episode.observation.system,
            question=episode.observation.prompt, answer_type=task.answer_type.value, unit=task.unit,
            steps=tuple(episode.steps), submission=episode.submission, reward=partial.reward,
            passed=partial.passed, outcome=partial.outcome.value, expected_status=task.expected_status.value,
            verdict=partial.verdict.to_dict() if partial.verdict else None, error=partial.error,
            reset_ms=round(episode.reset_ms, 3), total_ms=round((time.perf_counter() - episode.started) * 1000, 3),
            subject_id=task.subject_id)
        result = EpisodeResult(task.task_id, partial.reward, partial.passed, partial.outcome, partial.verdict,
                               partial.error, trajectory)
        episode.db.close()
        self._episode = None
        self._last = result
        if self.trajectory_path is not None:
            append_jsonl(self.trajectory_path, [trajectory])
        return result


def _system_prompt(tables: dict[str, tuple[tuple[str, str], ...]], limits: Limits) -> str:
    schema = "\n".join(f"- {name}({', '.join(c for c, _ in cols)})" for name, cols in tables.items())
    statuses = ", ".join(s.value for s in Status)
    return (
        "You answer a clinical question about the MIMIC-IV electronic health record in a DuckDB database. "
        "The record may be messy: evidence can be missing, duplicated with contradicting values, "
        "physiologically implausible, recorded in the wrong unit, or the question may presume something "
        "the record contradicts. Check the evidence before you answer.\n\n"
        f"Tools: sql(query) runs one read-only SELECT (at most {limits.sql.max_rows} rows, "
        f"{limits.sql.timeout_s:g} s); python(code) runs standard-library Python with query(sql) "
        f"available; submit(status, answer) ends the task. At most {limits.max_tool_calls} tool calls.\n\n"
        f"Statuses: {statuses}. Submit 'answered' with the answer only when the evidence supports it.\n\n"
        f"Tables (columns):\n{schema}"
    )
