"""The task: one definition for the Python model and the Parquet schema.

A task is one row of a release: a clean task (question, gold SQL, executed answer) or a noisy twin
of one (with a patch to the database or a changed question, and the outcome a robust agent should
reach). The dataclasses below are the only place the fields are written: ``arrow_schema()`` derives
the Parquet schema from them, and ``from_dict`` rejects unknown or missing keys so that nothing is
silently dropped on a round trip. See docs/architecture.md for what each field means.
"""

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

import pyarrow as pa

from pipeline.vocabulary import (
    AnswerType,
    Intent,
    Level,
    NoiseLevel,
    NoiseType,
    Split,
    Status,
    Variant,
)


@dataclass(frozen=True)
class NamedValue:
    """A slot or noise parameter: values are text so one Parquet type holds them all."""

    name: str
    value: str


@dataclass(frozen=True)
class RowRef:
    """A row of the source database, by table and its stable ``row_id``."""

    table: str
    row_id: int


@dataclass(frozen=True)
class AnswerValue:
    """An answer, typed by the task's ``answer_type``: exactly the matching field is set."""

    number: float | None = None
    text: str | None = None
    items: tuple[str, ...] | None = None
    boolean: bool | None = None
    timestamp: datetime | None = None


@dataclass(frozen=True)
class Outcome:
    """An accepted outcome: a status, and the answer that must come with it (if any)."""

    status: Status
    answer: AnswerValue | None = None


@dataclass(frozen=True)
class ColumnValue:
    column: str
    value: str | None  # text, cast to the column's declared type when the patch is applied


@dataclass(frozen=True)
class AddedRow:
    table: str
    row_id: int  # negative: added rows never collide with source rows
    values: tuple[ColumnValue, ...]


@dataclass(frozen=True)
class ValueChange:
    table: str
    row_id: int
    column: str
    value: str | None


@dataclass(frozen=True)
class Patch:
    """How a twin's database differs from the shared source database."""

    hide: tuple[RowRef, ...] = ()
    add: tuple[AddedRow, ...] = ()
    update: tuple[ValueChange, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.hide or self.add or self.update)

    @property
    def tables(self) -> frozenset[str]:
        return frozenset(r.table for group in (self.hide, self.add, self.update) for r in group)


@dataclass(frozen=True)
class Proof:
    """Evidence, recorded when a twin is built, that its noise changes what the data supports."""

    check: str  # e.g. "answer_changed", "premise_false", "reference_ambiguous"
    passed: bool
    detail: str


@dataclass(frozen=True)
class Task:
    task_id: str
    clean_task_id: str | None
    variant: Variant
    intent: Intent
    level: Level
    template_id: str
    paraphrase: int
    question: str
    slots: tuple[NamedValue, ...]
    subject_id: int | None
    gold_sql: str
    answer_type: AnswerType
    answer: AnswerValue | None  # the executed gold answer (clean tasks); None for twins
    unit: str | None
    tolerance: float | None
    evidence: tuple[RowRef, ...]
    expected_status: Status
    accepted_outcomes: tuple[Outcome, ...]
    noise_level: NoiseLevel | None = None
    noise_type: NoiseType | None = None
    noise_params: tuple[NamedValue, ...] = ()
    patch: Patch = field(default_factory=Patch)
    proof: Proof | None = None
    base_fingerprint: str = ""
    split: Split | None = None

    def to_dict(self) -> dict:
        return _to_plain(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Task":
        return _from_plain(cls, data, "task")


# ---------------------------------------------------------------- one definition -> arrow and back

_SCALARS = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_(),
            datetime: pa.timestamp("us")}


@functools.cache
def _unwrap_optional(hint):
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return hint, False


@functools.cache
def _field_plan(cls) -> tuple[tuple[tuple[str, typing.Any, bool], ...], frozenset[str]]:
    """A dataclass's fields as (name, resolved type hint, required), and their names: resolving the
    hints is most of the cost of reading a task, and they never change."""
    hints = typing.get_type_hints(cls)
    fields = tuple((f.name, hints[f.name],
                    f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                   for f in dataclasses.fields(cls))
    return fields, frozenset(name for name, _, _ in fields)


def _arrow_type(hint) -> pa.DataType:
    hint, _ = _unwrap_optional(hint)
    if hint in _SCALARS:
        return _SCALARS[hint]
    if isinstance(hint, type) and issubclass(hint, Enum):
        return pa.string()
    if typing.get_origin(hint) is tuple:
        return pa.list_(_arrow_type(typing.get_args(hint)[0]))
    if dataclasses.is_dataclass(hint):
        return pa.struct(_arrow_fields(hint))
    raise TypeError(f"no Parquet type for {hint!r}")


def _arrow_fields(cls) -> list[pa.Field]:
    return [pa.field(name, _arrow_type(hint), _unwrap_optional(hint)[1]) for name, hint, _ in _field_plan(cls)[0]]


def arrow_schema() -> pa.Schema:
    """The Parquet schema of a task row, derived from ``Task``."""
    return pa.schema(_arrow_fields(Task))


_PLAIN_TYPES = frozenset({str, int, float, bool, type(None), datetime})


@functools.cache
def _field_names(cls) -> tuple[str, ...]:
    return tuple(name for name, _, _ in _field_plan(cls)[0])


def _to_plain(obj):
    # Writing a release runs this over a million values, most of them plain already: their exact
    # type is looked up first, the dataclass and enum tests come after.
    kind = type(obj)
    if kind in _PLAIN_TYPES:
        return obj
    if kind is tuple:
        return [_to_plain(x) for x in obj]
    if dataclasses.is_dataclass(obj):
        return {name: _to_plain(getattr(obj, name)) for name in _field_names(kind)}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, tuple):
        return [_to_plain(x) for x in obj]
    return obj


class _Bad(ValueError):
    """A value that does not fit its type, and where inside the value being read it sits."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.message, self.path = message, path

    def inside(self, step: str) -> "_Bad":
        return _Bad(self.message, step + self.path)


def _from_plain(hint, data, where: str):
    """``data`` (plain JSON-like values) read as ``hint``; a ValueError names the key that is wrong."""
    try:
        return _decoder(hint)(data)
    except _Bad as bad:
        raise ValueError(f"{where}{bad.path}: {bad.message}") from None


@functools.cache
def _decoder(hint) -> typing.Callable[[typing.Any], typing.Any]:
    """A function that reads plain data as ``hint``, made once per type: reading a release runs it
    over a million values, so the type is inspected here and not per value (nor are error paths
    built until a value is wrong)."""
    inner, optional = _unwrap_optional(hint)
    read = _decoder_of(inner)

    def read_value(data):
        if data is None:
            if optional:
                return None
            raise _Bad("value is required")
        return read(data)
    return read_value


def _decoder_of(hint) -> typing.Callable[[typing.Any], typing.Any]:
    if dataclasses.is_dataclass(hint):
        fields, names = _field_plan(hint)
        readers = tuple((name, _decoder(field_hint), required) for name, field_hint, required in fields)

        def read_object(data):
            if not isinstance(data, dict):
                raise _Bad(f"expected an object, got {type(data).__name__}")
            unknown = data.keys() - names
            if unknown:
                raise _Bad(f"unknown keys {sorted(unknown)}")
            kwargs = {}
            for name, read, required in readers:
                if name in data:
                    try:
                        kwargs[name] = read(data[name])
                    except _Bad as bad:
                        raise bad.inside(f".{name}") from None
                elif required:
                    raise _Bad(f"missing key {name!r}")
            return hint(**kwargs)
        return read_object
    if typing.get_origin(hint) is tuple:
        read_item = _decoder(typing.get_args(hint)[0])

        def read_tuple(data):
            items = []
            for position, item in enumerate(data):
                try:
                    items.append(read_item(item))
                except _Bad as bad:
                    raise bad.inside(f"[{position}]") from None
            return tuple(items)
        return read_tuple
    if isinstance(hint, type) and issubclass(hint, Enum):
        def read_enum(data):
            try:
                return hint(data)
            except ValueError:
                raise _Bad(f"{data!r} is not one of {[e.value for e in hint]}") from None
        return read_enum
    if hint is float:
        def read_float(data):
            if isinstance(data, float):
                return data
            if isinstance(data, int) and not isinstance(data, bool):
                return float(data)
            raise _Bad(f"expected float, got {type(data).__name__} {data!r}")
        return read_float
    if hint in _SCALARS:
        def read_scalar(data):
            if not isinstance(data, hint):
                raise _Bad(f"expected {hint.__name__}, got {type(data).__name__} {data!r}")
            return data
        return read_scalar
    return lambda data: data


def tasks_to_arrow(tasks: typing.Iterable[Task]) -> pa.Table:
    return pa.Table.from_pylist([t.to_dict() for t in tasks], schema=arrow_schema())


def tasks_from_arrow(table: pa.Table) -> list[Task]:
    return [Task.from_dict(row) for row in table.to_pylist()]
