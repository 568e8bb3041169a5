"""A clinical question template: one declarative object, rendered into questions and SQL.

A template names its intent, level and operation, its slots (name -> ``SlotKind``), the SQL that
samples slot fillings from the database, two or more question paraphrases, the gold SQL, the
evidence SQL, its answer type (with unit, tolerance and rounding for numbers) and the guards that
reject fillings whose answer would not be trustworthy. The extraction engine
(``pipeline.templates.extract``) does the rest; nothing about a template lives anywhere else.

SQL is DuckDB. ``{name}`` in a paraphrase, the gold SQL, the evidence SQL, a guard or the unit SQL
is a slot. In a question it becomes the slot's text; in SQL it becomes a literal quoted by the
slot's kind (integers for ids, ``TIMESTAMP '...'`` for times, a quoted string with ``'`` doubled
for names), so SQL is never spliced from raw text. Template authors never write quotes around a
slot. The engine can also render a slot as a column reference to evaluate many fillings in one
query; both renderings come from the same text, which is how a stored gold SQL re-executes to the
stored answer.

Conventions the engine relies on:

- ``sampler`` returns one column per slot (named like the slot); each row is a candidate filling.
  It needs no ordering: the engine orders candidates by a seeded hash.
- ``gold_sql`` returns what ``pipeline.answers`` expects for the answer type (one column, or
  ``(item, rank)`` for ranked lists); a first/last question returns every row at the extreme time
  so that a tie shows up as several rows and the filling is rejected.
- ``evidence_sql`` returns ``(table_name, row_id)``: the rows the answer is computed from (every row
  an aggregate ranges over, or the row a first/last/retrieval selects); when that is empty (a "no"
  or a zero count) the row the question is anchored on (the admission, ICU stay or patient).
- A ``Guard`` is one SQL expression returning a boolean; true rejects the filling with the guard's
  reason (NULLs the question does not mention, a name resolving to several items, ...).
- ``unit_sql`` (numbers whose unit comes from the data) returns the unit of every row the answer
  rests on; the filling is rejected unless there is exactly one unit and no row lacks it.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from types import MappingProxyType

import duckdb

from pipeline.answers import DEFAULT_DECIMALS
from pipeline.schema import TABLES_BY_NAME
from pipeline.vocabulary import AnswerType, Intent, Level, Operation, SlotKind

PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_INTEGER_KINDS = frozenset({SlotKind.SUBJECT, SlotKind.ADMISSION, SlotKind.ICU_STAY})
# Values used only to parse a template's SQL when it is declared (to derive ``tables``).
_PROBE = {SlotKind.SUBJECT: "1", SlotKind.ADMISSION: "1", SlotKind.ICU_STAY: "1", SlotKind.NUMBER: "1",
          SlotKind.TIME: "2000-01-01 00:00:00"}


class TemplateError(ValueError):
    """A template is declared inconsistently (names the template and what is wrong)."""


class SlotValueError(ValueError):
    """A slot value cannot be rendered for its kind (a non-integer id, a malformed time)."""


@dataclass(frozen=True)
class Measure:
    """Where the measured value an answer rests on lives: what value-level noise changes."""

    table: str
    value_column: str
    unit_column: str | None


@dataclass(frozen=True)
class Guard:
    """Reject a slot filling when ``sql`` (one row, one boolean) is true; counted under ``reason``."""

    reason: str
    sql: str


def slot_text(value) -> str:
    """The text of a sampled slot value as stored in a task (times to the second)."""
    if isinstance(value, datetime):
        return value.replace(microsecond=0).isoformat(sep=" ")
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).isoformat(sep=" ")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def sql_literal(kind: SlotKind, value: str) -> str:
    """``value`` as a DuckDB literal of the slot's kind."""
    if kind in _INTEGER_KINDS:
        try:
            return str(int(value))
        except (TypeError, ValueError):
            raise SlotValueError(f"a {kind.value} slot takes an integer id, not {value!r}") from None
    if kind is SlotKind.NUMBER:
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:
            raise SlotValueError(f"a number slot takes a number, not {value!r}") from None
        if not number.is_finite():
            raise SlotValueError(f"a number slot takes a finite number, not {value!r}")
        return str(int(number)) if number == number.to_integral_value() else f"CAST('{number}' AS DOUBLE)"
    if kind is SlotKind.TIME:
        try:
            moment = datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise SlotValueError(f"a time slot takes an ISO timestamp, not {value!r}") from None
        return f"TIMESTAMP '{moment.replace(microsecond=0, tzinfo=None).isoformat(sep=' ')}'"
    text = str(value)
    if "\x00" in text:
        raise SlotValueError(f"a {kind.value} slot value contains a NUL character")
    return "'" + text.replace("'", "''") + "'"


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


@dataclass(frozen=True)
class Template:
    id: str
    intent: Intent
    level: Level
    operation: Operation
    answer_type: AnswerType
    slots: Mapping[str, SlotKind]
    paraphrases: tuple[str, ...]
    sampler: str
    gold_sql: str
    evidence_sql: str
    unit: str | None = None  # fixed unit of a number answer
    unit_sql: str | None = None  # or: the unit read from the rows the answer rests on
    # Absolute, in the unit. Defaults to one unit of the last decimal, except counts: a count off by
    # one is a different answer (and a duplicated row must be able to change it).
    tolerance: float | None = None
    decimals: int = DEFAULT_DECIMALS
    measure: Measure | None = None
    guards: tuple[Guard, ...] = ()
    notes: str = ""  # how a name resolves or several things are combined, for the catalogue
    # The only names a named slot takes, where the template asks about a fixed list (the vital signs a
    # flowsheet shows): a question naming anything else is noise by its name alone, so query noise never
    # presumes or makes up a name outside it.
    names_within: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tables: frozenset[str] = field(init=False)

    def __post_init__(self):
        problems = self._problems()
        if problems:
            raise TemplateError(f"template {self.id!r}: " + "; ".join(problems))
        object.__setattr__(self, "slots", MappingProxyType(dict(self.slots)))  # read-only, like the rest
        object.__setattr__(self, "names_within", MappingProxyType({k: tuple(v) for k, v in self.names_within.items()}))
        object.__setattr__(self, "paraphrases", tuple(self.paraphrases))
        object.__setattr__(self, "guards", tuple(self.guards))
        if self.answer_type is AnswerType.NUMBER and self.tolerance is None:
            exact = self.operation == Operation.COUNT
            object.__setattr__(self, "tolerance", 0.0 if exact else 10.0 ** -self.decimals)
        object.__setattr__(self, "tables", self._read_tables())

    def __hash__(self) -> int:
        # Ids are unique in the registry; hashing by id lets templates key dicts and sets.
        return hash(self.id)

    # ------------------------------------------------------------ declaration checks

    def _problems(self) -> list[str]:
        p = []
        if not _ID.match(self.id):
            p.append("id must be lower_snake_case")
        try:
            Intent(self.intent), Level(self.level), Operation(self.operation), AnswerType(self.answer_type)
            kinds = [SlotKind(k) for k in self.slots.values()]
        except ValueError as e:
            return p + [str(e)]
        names = set(self.slots)
        if set(self.names_within) - names:
            p.append(f"names_within names no slot: {sorted(set(self.names_within) - names)}")
        if any(n.startswith("__") or not _ID.match(n) for n in names):
            p.append("slot names are lower_snake_case and never start with '__'")
        if len(self.paraphrases) < 2:
            p.append("needs two or more paraphrases")
        for i, text in enumerate(self.paraphrases):
            if placeholders(text) != names:
                p.append(f"paraphrase {i} must name every slot exactly: has {sorted(placeholders(text))}, "
                         f"slots are {sorted(names)}")
        if len(set(self.paraphrases)) != len(self.paraphrases):
            p.append("paraphrases repeat")
        if placeholders(self.gold_sql) != names:
            p.append(f"gold_sql must use every slot and only slots: uses {sorted(placeholders(self.gold_sql))}")
        for label, sql in self._slot_sql().items():
            unknown = placeholders(sql) - names
            if unknown:
                p.append(f"{label} uses unknown slots {sorted(unknown)}")
        if placeholders(self.sampler):
            p.append("sampler takes no slots: it produces them")
        if self.level is Level.PATIENT and self.slots.get("subject_id") is not SlotKind.SUBJECT:
            p.append("a patient-level template names its patient: slot subject_id of kind subject")
        if self.level is Level.POPULATION and _INTEGER_KINDS & set(kinds):
            p.append("a population-level template has no patient, admission or ICU stay slot")
        is_number = self.answer_type is AnswerType.NUMBER
        if is_number and (self.unit is None) == (self.unit_sql is None):
            p.append("a number answer declares exactly one of unit and unit_sql")
        if not is_number and (self.unit or self.unit_sql or self.tolerance is not None or self.measure):
            p.append("unit, unit_sql, tolerance and measure are for number answers")
        if self.measure and self.measure.table not in TABLES_BY_NAME:
            p.append(f"measure names unknown table {self.measure.table!r}")
        if len({g.reason for g in self.guards}) != len(self.guards):
            p.append("guard reasons repeat")
        return p

    def _slot_sql(self) -> dict[str, str]:
        sql = {"gold_sql": self.gold_sql, "evidence_sql": self.evidence_sql}
        sql.update({f"guard {g.reason!r}": g.sql for g in self.guards})
        if self.unit_sql:
            sql["unit_sql"] = self.unit_sql
        return sql

    def _read_tables(self) -> frozenset[str]:
        probe = {name: _PROBE.get(kind, "x") for name, kind in self.slots.items()}
        tables: set[str] = set()
        for label, sql in {"sampler": self.sampler, **self._slot_sql()}.items():
            try:
                tables |= duckdb.get_table_names(self.fill(sql, probe))
            except duckdb.Error as e:
                raise TemplateError(f"template {self.id!r}: {label} does not parse: {e}") from None
        unknown = sorted(tables - TABLES_BY_NAME.keys())
        if unknown:
            raise TemplateError(f"template {self.id!r} reads tables that are not MIMIC-IV tables: {unknown}")
        return frozenset(tables)

    # ------------------------------------------------------------ rendering

    def _check_slots(self, slots: Mapping[str, str]) -> None:
        if set(slots) != set(self.slots):
            raise SlotValueError(f"template {self.id!r} takes slots {sorted(self.slots)}, got {sorted(slots)}")

    def fill(self, text: str, slots: Mapping[str, str]) -> str:
        """Any of this template's SQL with the slots as literals."""
        return PLACEHOLDER.sub(lambda m: sql_literal(self.slots[m.group(1)], slots[m.group(1)]), text)

    def render_question(self, slots: Mapping[str, str], paraphrase: int) -> str:
        self._check_slots(slots)
        if not 0 <= paraphrase < len(self.paraphrases):
            raise IndexError(f"template {self.id!r} has paraphrases 0..{len(self.paraphrases) - 1}")
        text = PLACEHOLDER.sub(lambda m: str(slots[m.group(1)]), self.paraphrases[paraphrase])
        # A value ending a sentence with its own full stop ("EW EMER.") would double it.
        return text[:-1] if text.endswith("..") and not text.endswith("...") else text

    def render_sql(self, slots: Mapping[str, str]) -> str:
        """The gold SQL with every slot as a literal: what a task stores and what re-executes."""
        self._check_slots(slots)
        return self.fill(self.gold_sql, slots)

    def render_evidence_sql(self, slots: Mapping[str, str]) -> str:
        self._check_slots(slots)
        return self.fill(self.evidence_sql, slots)

    def render_guard_sql(self, guard: Guard, slots: Mapping[str, str]) -> str:
        self._check_slots(slots)
        return self.fill(guard.sql, slots)

    def render_unit_sql(self, slots: Mapping[str, str]) -> str | None:
        self._check_slots(slots)
        return self.fill(self.unit_sql, slots) if self.unit_sql else None

    def over_columns(self, sql: str, alias: str) -> str:
        """``sql`` with every slot as a column of ``alias`` (the engine's batched evaluation)."""
        return PLACEHOLDER.sub(lambda m: f'{alias}."{m.group(1)}"', sql)
