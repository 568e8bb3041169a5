"""Episode trajectories: one JSON object per line, readable back into the same objects.

A trajectory records what an agent saw and did (the prompt, each tool call with its arguments,
result and timing, the submission) and how it was graded (reward, outcome, verdict). It serves
three uses: the evaluation report is computed from trajectories alone; ``to_messages()`` turns one
into an OpenAI-style chat transcript for supervised fine-tuning; ``reward`` is the RL signal.
``from_dict`` rejects unknown and missing keys, so a round trip cannot drop a field silently.
"""

import dataclasses
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Step:
    tool: str
    arguments: dict[str, Any]
    ok: bool
    content: str  # what the agent was shown
    error_kind: str | None
    started_ms: float  # since the reset
    elapsed_ms: float


@dataclass(frozen=True)
class Trajectory:
    episode_id: str
    release: str
    task_id: str
    split: str | None
    variant: str
    intent: str
    level: str
    noise_level: str | None
    noise_type: str | None
    clean_task_id: str | None
    agent: str
    trial: int
    system: str  # the instructions and tool rules the agent was given
    question: str
    answer_type: str
    unit: str | None
    steps: tuple[Step, ...]
    submission: dict[str, Any] | None  # {"status": ..., "answer": ...} as submitted
    reward: float
    passed: bool
    outcome: str  # a verifier.Outcome value
    expected_status: str
    verdict: dict[str, Any] | None
    error: str | None  # why the episode could not be graded or the agent failed
    reset_ms: float
    total_ms: float
    # The task's patient (None at population level): the bootstrap resamples patients. Optional so
    # that trajectories written before it existed still read.
    subject_id: int | None = None
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["steps"] = [dataclasses.asdict(s) for s in self.steps]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trajectory":
        _check_keys(cls, data, "trajectory")
        steps = []
        for i, step in enumerate(data["steps"]):
            _check_keys(Step, step, f"trajectory.steps[{i}]")
            steps.append(Step(**step))
        return cls(**{**data, "steps": tuple(steps)})

    def to_messages(self) -> list[dict[str, Any]]:
        """The episode as an OpenAI-style chat: system, user question, assistant tool calls, tool results."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system},
                                          {"role": "user", "content": self.question}]
        for i, step in enumerate(self.steps):
            call_id = f"call_{i}"
            messages.append({"role": "assistant", "content": None, "tool_calls": [{
                "id": call_id, "type": "function",
                "function": {"name": step.tool, "arguments": json.dumps(step.arguments, ensure_ascii=False)}}]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": step.content})
        return messages


def _check_keys(cls, data: dict, where: str) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    missing = [n for n, f in fields.items() if n not in data
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ValueError(f"{where}: missing keys {missing}")


def dumps(trajectory: Trajectory) -> str:
    return json.dumps(trajectory.to_dict(), ensure_ascii=False, sort_keys=True)


def append_jsonl(path: Path, trajectories: Iterable[Trajectory]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for t in trajectories:
            f.write(dumps(t) + "\n")


def write_jsonl(path: Path, trajectories: Iterable[Trajectory]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for t in trajectories:
            f.write(dumps(t) + "\n")


def iter_jsonl(path: Path) -> Iterator[Trajectory]:
    with Path(path).open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield Trajectory.from_dict(json.loads(line))
                except (ValueError, TypeError) as exc:
                    raise ValueError(f"{path}:{n}: {exc}") from None


def read_jsonl(path: Path) -> list[Trajectory]:
    return list(iter_jsonl(path))


def recover_jsonl(path: Path) -> list[Trajectory]:
    """The trajectories of a file a run was writing when it was stopped, for resuming it.

    A last line cut short by the stop (no newline at its end and not a whole JSON object) is
    removed from the file, so the resumed run appends after the last whole episode. Any other
    unreadable line is an error naming the file and line: a file that is damaged elsewhere is not
    silently half-resumed. A missing file holds no trajectory.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        head, _, tail = data.rpartition(b"\n")
        try:
            json.loads(tail)
        except ValueError:  # a torn write: drop it
            with path.open("r+b") as f:
                f.truncate(len(head) + 1 if head or data.startswith(b"\n") else 0)
        else:
            with path.open("ab") as f:  # whole but unterminated: terminate it so appends start a new line
                f.write(b"\n")
    return read_jsonl(path)
