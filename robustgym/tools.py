"""The agent's tools, declared in one place, and the one place where errors become observations.

A tool is a function decorated with ``@tool``: its docstring is the description agents read, its
``Args:`` section and annotations are the JSON schema of its parameters (``declarations()`` gives
them in the OpenAI function-calling format; the MCP server (``robustgym.mcp_server``) serves the
same ``ToolSpec``s), and it is registered once by name (a second registration raises). Harness tools
(``@harness_tool``: ``reset``, ``list_tasks``) are declared the same way in their own registry: they
drive episodes for an external harness (the MCP server) and are never offered to an agent inside one.
Tools raise on any problem; ``invoke`` is the only caller and ``error_observation`` the only place an
exception becomes what the agent sees. Nothing an agent sends can raise out of ``invoke``: sandbox refusals, timeouts, bad arguments and even bugs come
back as error observations and the environment serves the next call.
"""

import inspect
import re
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Protocol

from pipeline.answers import SubmissionError
from pipeline.vocabulary import Status
from robustgym.python_sandbox import PythonOutput
from robustgym.sql_sandbox import QueryResult

MAX_CONTENT_CHARS = 20_000


class DuplicateToolError(ValueError):
    pass


class ToolArgumentError(ValueError):
    kind = "bad_arguments"


class EpisodeStateError(RuntimeError):
    kind = "episode_state"


class Episode(Protocol):
    """What tools need from the environment's current episode."""

    def run_sql(self, query: str) -> QueryResult: ...

    def run_python(self, code: str) -> PythonOutput: ...

    def finish(self, status: Status, answer: Any) -> Any: ...


@dataclass(frozen=True)
class Observation:
    """The result of one tool call: ``content`` is what the agent reads; ``data`` is structured."""

    tool: str
    ok: bool
    content: str
    error_kind: str | None = None
    data: Any = None
    elapsed_ms: float = 0.0


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict
    function: Callable[..., Observation]
    required: tuple[str, ...]


TOOLS: dict[str, ToolSpec] = {}
HARNESS_TOOLS: dict[str, ToolSpec] = {}

_ARG_LINE = re.compile(r"^\s+(\w+):\s*(.+)$")


def _schema(annotation: Any) -> dict:
    if annotation is str:
        return {"type": "string"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is Status:
        return {"type": "string", "enum": [s.value for s in Status]}
    if annotation is Any:
        return {"anyOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"},
                          {"type": "array", "items": {"type": "string"}}, {"type": "null"}]}
    raise TypeError(f"no JSON schema for tool parameter type {annotation!r}")


def tool(function: Callable[..., Observation]) -> Callable[..., Observation]:
    """Register ``function`` as a tool; its first parameter is the episode."""
    return _register(TOOLS, function)


def harness_tool(function: Callable[..., Observation]) -> Callable[..., Observation]:
    """Register ``function`` as a harness tool; its first parameter is the ``Harness``."""
    return _register(HARNESS_TOOLS, function)


def _register(registry: dict[str, ToolSpec], function: Callable[..., Observation]) -> Callable[..., Observation]:
    name = function.__name__
    if name in TOOLS or name in HARNESS_TOOLS:
        raise DuplicateToolError(f"tool {name!r} is already registered")
    doc = inspect.getdoc(function) or ""
    summary, _, args_block = doc.partition("\nArgs:\n")
    arg_docs = {m.group(1): m.group(2).strip() for line in args_block.splitlines() if (m := _ARG_LINE.match(line))}
    hints = typing.get_type_hints(function)
    params = list(inspect.signature(function).parameters.values())[1:]
    properties, required = {}, []
    for p in params:
        if p.name not in arg_docs:
            raise TypeError(f"tool {name!r}: parameter {p.name!r} is not documented under Args:")
        properties[p.name] = {**_schema(hints.get(p.name, Any)), "description": arg_docs[p.name]}
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
    parameters = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    registry[name] = ToolSpec(name, summary.strip(), parameters, function, tuple(required))
    return function


def declarations() -> list[dict]:
    """Every tool in the OpenAI ``tools`` format (``type: function``)."""
    return [{"type": "function", "function": {"name": s.name, "description": s.description,
                                              "parameters": s.parameters}} for s in TOOLS.values()]


def invoke(episode: Episode | None, name: str, arguments: Any) -> Observation:
    """Call tool ``name``; always returns an observation."""
    started = time.perf_counter()
    try:
        if episode is None:
            raise EpisodeStateError("no episode is running: call reset(task_id) first, or the task was submitted")
        observation = _call(TOOLS, episode, name, arguments)
    except Exception as exc:  # noqa: BLE001 - the single conversion point for every tool error
        observation = error_observation(name, exc)
    return _with_elapsed(observation, started)


def invoke_harness(harness: "Harness", name: str, arguments: Any) -> Observation:
    """Call harness tool ``name``; always returns an observation."""
    started = time.perf_counter()
    try:
        observation = _call(HARNESS_TOOLS, harness, name, arguments)
    except Exception as exc:  # noqa: BLE001 - the same single conversion as for the episode's tools
        observation = error_observation(name, exc)
    return _with_elapsed(observation, started)


def _call(registry: dict[str, ToolSpec], target: Any, name: str, arguments: Any) -> Observation:
    spec = registry.get(name)
    if spec is None:
        raise ToolArgumentError(f"unknown tool {name!r}; the tools are {sorted(registry)}")
    if not isinstance(arguments, dict):
        raise ToolArgumentError(f"arguments of {name} must be an object, got {type(arguments).__name__}")
    unknown = set(arguments) - set(spec.parameters["properties"])
    missing = [r for r in spec.required if r not in arguments]
    if unknown or missing:
        raise ToolArgumentError(f"{name}: " + "; ".join(
            ([f"unknown arguments {sorted(unknown)}"] if unknown else [])
            + ([f"missing arguments {missing}"] if missing else [])))
    for param, value in arguments.items():
        if spec.parameters["properties"][param].get("type") == "integer" and (
                not isinstance(value, int) or isinstance(value, bool)):
            raise ToolArgumentError(f"{name}: {param} must be an integer, got {value!r}")
    return spec.function(target, **arguments)


def error_observation(tool_name: str, exc: BaseException) -> Observation:
    """The one conversion from an exception to what the agent sees."""
    if isinstance(exc, SubmissionError):
        kind = "bad_answer"
    else:
        kind = getattr(exc, "kind", None) or "internal_error"
    message = str(exc).strip() or type(exc).__name__
    if kind == "internal_error":
        message = f"{type(exc).__name__}: {message}"
    return Observation(tool_name, False, _clip(f"ERROR ({kind}): {message}"), kind)


def _with_elapsed(observation: Observation, started: float) -> Observation:
    elapsed = (time.perf_counter() - started) * 1000
    return Observation(observation.tool, observation.ok, observation.content, observation.error_kind,
                       observation.data, elapsed)


# ---------------------------------------------------------------- the tools


@tool
def sql(episode: Episode, query: str) -> Observation:
    """Run one read-only DuckDB SELECT over the patient record and return its rows.

    Only a single SELECT (WITH ... SELECT, VALUES, DESCRIBE, SUMMARIZE) over the MIMIC-IV tables
    listed in the task, by their plain names. Statements that write, attach, read files, change
    settings or use system tables are refused. Results over the row limit are refused, and long
    statements are stopped: filter and aggregate in SQL.

    Args:
        query: one SQL SELECT statement in DuckDB's dialect.
    """
    result = episode.run_sql(query)
    return Observation("sql", True, _clip(render_rows(result.columns, result.rows)),
                       data={"columns": list(result.columns), "rows": [list(r) for r in result.rows]})


@tool
def python(episode: Episode, code: str) -> Observation:
    """Run Python 3 (standard library only) in a fresh sandboxed process and return what it prints.

    Inside the code, query(sql) runs a SELECT exactly like the sql tool and returns a list of dicts
    (column -> value; timestamps as ISO text). No network, no subprocesses, no files outside a
    scratch directory, and nothing is kept between calls. CPU time, memory and wall time are limited.

    Args:
        code: Python source to execute; print what you want to see.
    """
    out = episode.run_python(code)
    text = out.stdout
    if out.stderr.strip():
        text += ("\n" if text and not text.endswith("\n") else "") + "[stderr]\n" + out.stderr
    return Observation("python", True, _clip(text or "(no output)"),
                       data={"stdout": out.stdout, "stderr": out.stderr, "queries": out.queries})


@tool
def submit(episode: Episode, status: Status, answer: Any = None) -> Observation:
    """Finish the task with what the record supports; this ends the episode.

    Use status "answered" with the answer when the data supports one. Otherwise choose the status that
    says why it cannot be answered: no_evidence (nothing in the record answers it),
    conflicting_evidence (contradicting values for the same fact), inconsistent_record (links or times
    contradict the rest of the record), implausible_value (the value is physiologically impossible),
    unit_inconsistency (a value's unit does not fit its item), invalid_premise (the question presumes
    something the record contradicts, e.g. a patient or drug that is not there), ambiguous (the
    question's reference matches several things).

    Args:
        status: the conclusion; one of the statuses above.
        answer: with status "answered": a number (in the task's unit), a text, a list of texts (for sets and ranked lists, best first), true/false, or an ISO timestamp "YYYY-MM-DD HH:MM:SS". Omit it otherwise.
    """
    try:
        status = Status(status)
    except ValueError:
        raise ToolArgumentError(f"{status!r} is not a status; use one of {[s.value for s in Status]}") from None
    if status == Status.ANSWERED and answer is None:
        raise ToolArgumentError('status "answered" needs an answer')
    grade = episode.finish(status, answer)
    note = f" (the task could not be graded: {grade.error})" if grade.error else ""
    return Observation("submit", True, f"submitted {status.value}; reward {grade.reward:g}{note}", data=grade)


# ---------------------------------------------------------------- harness tools


class Harness(Protocol):
    """What harness tools need: start an episode, list the tasks."""

    def reset(self, task_id: str, *, trial: int = 0) -> Any: ...

    def task_ids(self, split: str | None) -> list[str]: ...


@harness_tool
def reset(harness: "Harness", task_id: str, trial: int = 0) -> Observation:
    """Start the episode of a task and return its instructions and question (an open episode ends unsubmitted).

    Args:
        task_id: a task id of the release (see list_tasks).
        trial: the trial number of this episode (0, 1, ... when a task is played several times).
    """
    observation = harness.reset(task_id, trial=trial)
    text = f"{observation.system}\n\n{observation.prompt}"
    return Observation("reset", True, text, data={
        "task_id": observation.task_id, "trial": trial, "question": observation.question,
        "answer_type": observation.answer_type, "unit": observation.unit, "statuses": list(observation.statuses)})


@harness_tool
def list_tasks(harness: "Harness", split: str = "test", offset: int = 0, limit: int = 200) -> Observation:
    """List task ids of the release, one per line, in release order.

    Args:
        split: train, validation or test; "all" for every split.
        offset: how many ids to skip.
        limit: at most this many ids.
    """
    if offset < 0 or limit < 1:
        raise ToolArgumentError("offset must be 0 or more and limit at least 1")
    ids = harness.task_ids(None if split == "all" else split)
    page = ids[offset: offset + limit]
    rest = len(ids) - offset - len(page)
    more = f"\n({rest} more: offset={offset + len(page)})" if rest > 0 else ""
    return Observation("list_tasks", True, "\n".join(page) + f"\n({len(ids)} tasks in {split}){more}",
                       data={"task_ids": page, "total": len(ids), "offset": offset})


# ---------------------------------------------------------------- rendering


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    text = str(value)
    return text if len(text) <= 300 else text[:300] + "…"


def render_rows(columns: tuple[str, ...] | list[str], rows: tuple | list) -> str:
    """A plain text table: header, one line per row, and the row count."""
    lines = [" | ".join(columns)]
    lines += [" | ".join(_cell(v).replace("\n", " ") for v in row) for row in rows]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)


def _clip(text: str) -> str:
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    return text[:MAX_CONTENT_CHARS] + f"\n… (cut at {MAX_CONTENT_CHARS} characters)"
