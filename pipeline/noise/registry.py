"""The injector interface and the registry of noise types.

An injector turns one clean case into candidate twins (``Draft``: a patch or changed slots, the
parameters it chose, the status a robust agent should reach). It declares where its noise type
makes sense (``Applicability``: levels, intents, answer types, what the template must offer) so the
builder filters cases by data, not by if-chains, and docs/architecture.md's matrix can be read off
the declarations. Whether a draft is worth publishing is decided by its proof (``pipeline.noise.proof``);
the injector then says which outcomes a verifier accepts, given what the proof observed.

Each noise type is registered once; registering a second injector under the same type raises.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from random import Random
from typing import Any, ClassVar

from pipeline.answers import Observed, Problem
from pipeline.noise.case import CleanCase, SourceLookup, measure_of
from pipeline.task_model import AnswerValue, NamedValue, Outcome, Patch
from pipeline.vocabulary import (NOISE_LEVEL_OF, AnswerType, Intent, Level, NoiseLevel, NoiseType, Operation,
                                 SlotKind, Status)


class DropReason(StrEnum):
    """Why a candidate twin was not published (reported per noise type)."""

    NO_CANDIDATE = "no_candidate"  # the case qualified but the injector found nothing to change
    PATCH_TOO_LARGE = "patch_too_large"  # the evidence to touch exceeds NoiseConfig.max_patch_rows
    PATCH_OUTSIDE_EVIDENCE = "patch_outside_evidence"  # the patch touches rows the answer does not rest on
    GOLD_SQL_FAILED = "gold_sql_failed"  # the gold SQL raised under the patch or on the changed question
    ANSWER_UNCHANGED = "answer_unchanged"  # under the patch the gold SQL still returns the clean answer
    ANSWER_STILL_DEFINED = "answer_still_defined"  # e.g. hiding the evidence leaves a valid count of 0
    PREMISE_HOLDS = "premise_holds"  # the changed question's premise is true on the database
    TIE_WITHOUT_ROWS = "tie_without_rows"  # setting the noisy rows aside leaves rows that tie: no answer, no label
    LABEL_NOT_DECIDABLE = "label_not_decidable"  # the twin's record alone does not support its outcomes
    # Another query twin asks the same question (two population questions presuming one name): the same
    # question in two splits is a label to memorise.
    QUESTION_REPEATED = "question_repeated"
    # A conflicting duplicate whose differing value the answer does not rest on: alone, it answers as the original.
    CONFLICT_BESIDE_THE_ANSWER = "conflict_beside_the_answer"


@dataclass(frozen=True)
class Applicability:
    """Where a noise type makes sense, declared once on its injector."""

    levels: frozenset[Level] = frozenset(Level)
    intents: frozenset[Intent] = frozenset(Intent)
    answer_types: frozenset[AnswerType] = frozenset(AnswerType)
    operations: frozenset[Operation] = frozenset(Operation)  # what the template computes
    # (task level, operation) pairs where the noise changes nothing a robust agent could notice.
    excluded: frozenset[tuple[Level, Operation]] = frozenset()
    needs_measure: bool = False  # the template names the (table, value, unit) its answer rests on
    # A count of 0 or a "no" rests on no rows (its evidence is the anchor row): nothing to hide,
    # duplicate or detach.
    needs_rows: bool = False
    needs_slot: frozenset[SlotKind] = frozenset()  # the template has a slot of one of these kinds
    note: str = ""  # why the limits are what they are (shown in docs and metadata)

    def why_not(self, case: CleanCase) -> str | None:
        """None when the noise applies to ``case``, else a short reason."""
        t = case.task
        if t.level not in self.levels:
            return f"level_{t.level}"
        if t.intent not in self.intents:
            return f"intent_{t.intent}"
        if t.answer_type not in self.answer_types:
            return f"answer_type_{t.answer_type}"
        operation = getattr(case.template, "operation", None)
        if operation is not None and Operation(operation) not in self.operations:
            return f"operation_{operation}"
        if operation is not None and (t.level, Operation(operation)) in self.excluded:
            return f"{t.level}_{operation}"
        if self.needs_rows and operation in (Operation.COUNT, Operation.EXISTENCE) and _is_zero(t.answer):
            return "answer_rests_on_no_rows"
        if self.needs_measure and measure_of(case.template) is None:
            return "no_measure"
        if self.needs_slot and not case.slots_of(*self.needs_slot):
            return "no_slot_" + "_or_".join(sorted(self.needs_slot))
        return None


def _is_zero(answer: AnswerValue | None) -> bool:
    return answer is not None and (answer.number == 0 or answer.boolean is False)


@dataclass(frozen=True)
class PremiseFact:
    """A count on the source database that shows a changed question's premise false or ambiguous.

    The count is ``sql`` (a SELECT returning one integer), or, when ``answers`` is given, the number
    of distinct answers those gold SQLs give (each normalised like a gold answer; no answer is not
    counted): how many different things an ambiguous reference could mean.
    """

    claim: str  # what the count means, e.g. "admissions with hadm_id 29999999"
    sql: str
    op: str  # "==" or ">="
    value: int
    answers: tuple[str, ...] = ()
    # When ``sql`` counts entries named something (a ``name_counts.NameCount``): the prover reads the
    # count from per-source tallies instead of scanning the event table again. ``sql`` is what it stores.
    counted: Any = None

    def __post_init__(self):
        if self.counted is not None and self.counted.sql != self.sql:
            raise ValueError(f"premise {self.claim!r}: its SQL is not the count it names")
        if self.op not in ("==", ">="):
            raise ValueError(f"premise {self.claim!r}: op must be '==' or '>=', got {self.op!r}")

    def holds(self, observed: int) -> bool:
        return observed == self.value if self.op == "==" else observed >= self.value


@dataclass(frozen=True)
class Draft:
    """A candidate twin, before its proof."""

    params: tuple[NamedValue, ...]
    expected_status: Status
    patch: Patch = field(default_factory=Patch)  # record and value level
    slots: dict[str, str] | None = None  # query level: the re-rendered slots
    premise: tuple[PremiseFact, ...] = ()  # query level: what the proof must find on the database
    # Query level, when re-rendering the template is not enough: the question as asked, and the SQL
    # whose result shows the premise (e.g. the admissions an ambiguous "the admission" could mean).
    question: str | None = None
    gold_sql: str | None = None

    def param(self, name: str) -> str | None:
        """The value of the noise parameter ``name`` (None when the draft has none)."""
        return next((p.value for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class Effect:
    """What the proof observed."""

    clean: AnswerValue | None
    observed: AnswerValue | None  # the gold answer on the twin; None when the rows support none
    problem: Problem | None = None  # why there is no answer (no rows, NULL, a tie between rows)

    @property
    def no_answer(self) -> bool:
        """The twin's database holds nothing that answers the question (as opposed to a tie)."""
        return self.observed is None and self.problem in (Problem.NO_ROWS, Problem.NULL_VALUE)


# What the clean gold SQL gives on the twin's database with a further patch laid on top of the source.
AnswerUnder = Callable[[Patch], Observed]


class Injector(ABC):
    noise_type: ClassVar[NoiseType]
    applies: ClassVar[Applicability]
    # The status a robust agent should reach; drafts may refine it.
    status: ClassVar[Status]

    @property
    def level(self) -> NoiseLevel:
        return NOISE_LEVEL_OF[self.noise_type]

    @abstractmethod
    def drafts(self, case: CleanCase, lookup: SourceLookup, rng: Random) -> Iterator[Draft]:
        """Candidate twins for ``case``, distinct from each other, most natural first."""

    def accepted(self, case: CleanCase, draft: Draft, effect: Effect,
                 answer_under: AnswerUnder) -> tuple[Outcome, ...] | DropReason:
        """The outcomes a verifier accepts for a proven draft, or why it must be dropped after all."""
        return (Outcome(draft.expected_status),)

    def kept(self, case: CleanCase, draft: Draft, lookup: SourceLookup) -> None:
        """Called when a draft of this injector is published (to balance what later drafts choose)."""

    def prepare(self, cases: Sequence[CleanCase], lookup: SourceLookup) -> None:
        """Called once per build with every clean case the twins may come from, before any draft (what
        they are balanced against: the clean tasks' own phrasing). State goes in ``lookup.memo``: the
        injector is shared by every build."""


_REGISTRY: dict[NoiseType, Injector] = {}


def register(cls: type[Injector]) -> type[Injector]:
    """Class decorator: register one injector per noise type."""
    noise_type = NoiseType(cls.noise_type)
    if noise_type in _REGISTRY:
        raise ValueError(f"noise type {noise_type!r} is already registered by "
                         f"{type(_REGISTRY[noise_type]).__name__}; {cls.__name__} cannot register it again")
    _REGISTRY[noise_type] = cls()
    return cls


def injector(noise_type: NoiseType | str) -> Injector:
    try:
        return _REGISTRY[NoiseType(noise_type)]
    except (KeyError, ValueError):
        raise KeyError(f"no injector registered for noise type {noise_type!r}; "
                       f"registered: {', '.join(sorted(_REGISTRY))}") from None


def injectors() -> tuple[Injector, ...]:
    """Every registered injector, in vocabulary order."""
    return tuple(_REGISTRY[t] for t in NoiseType if t in _REGISTRY)
