"""From the facts of a record to the outcomes a careful reviewer accepts: the label, decided.

``RULES`` is read in order; the first rule whose facts hold decides. Each rule is one declarative
object (its name, what it says in plain words, and the function that reads the facts), and
docs/architecture.md's status table is this list. ``decide`` returns the accepted outcomes, or
``None`` when the facts support no single reading (two kinds of anomaly at once, a tie between
rows): such a twin cannot be labelled and is not published, and such a clean task is not clean.

Where two statuses are equally defensible the rule accepts both. A count or a yes/no question
presumes nothing, so 0 and "no" stay true answers when the thing asked about is unknown or was never
recorded; the premise-breaking outcome is accepted next to them.
"""

from collections.abc import Callable
from dataclasses import dataclass

from pipeline.answers import answers_match
from pipeline.answers import Observed
from pipeline.noise.record_facts import RecordFacts
from pipeline.task_model import Outcome, Task
from pipeline.vocabulary import Status


@dataclass(frozen=True)
class Decision:
    outcomes: tuple[Outcome, ...] | None  # None: the record supports no single label
    rule: str
    why: str

    @property
    def statuses(self) -> frozenset[Status]:
        return frozenset(o.status for o in self.outcomes or ())


@dataclass(frozen=True)
class Rule:
    name: str
    says: str  # the facts it reads and what they decide, for the status table in the docs
    decide: Callable[[RecordFacts], Decision | None]


def _answered(observed: Observed | None) -> tuple[Outcome, ...]:
    return (Outcome(Status.ANSWERED, observed.answer),) if observed is not None and observed.answer is not None else ()


def _truthful_zero(facts: RecordFacts) -> tuple[Outcome, ...]:
    """A count's 0 or a yes/no question's "no" on this record, when the question is one."""
    return _answered(facts.gold) if facts.counts_or_asks else ()


def _missing_entity(f: RecordFacts) -> Decision | None:
    if f.missing_entities:
        return Decision((Outcome(Status.INVALID_PREMISE),) + _truthful_zero(f), "missing_entity",
                        "; ".join(f.missing_entities))
    return None


def _unstated_reference(f: RecordFacts) -> Decision | None:
    if f.unstated_references:
        return Decision((Outcome(Status.AMBIGUOUS),), "unstated_reference", "; ".join(f.unstated_references))
    return None


def _ambiguous_name(f: RecordFacts) -> Decision | None:
    vague = [n for n in f.names if not n.known and len(n.readings) >= 2]
    if vague:
        n = vague[0]
        return Decision((Outcome(Status.AMBIGUOUS),), "ambiguous_name",
                        f"{n.slot} {n.value!r} is no recorded name; it could mean {list(n.readings)[:6]}")
    return None


def _unknown_name(f: RecordFacts) -> Decision | None:
    unknown = [n for n in f.names if not n.known]
    if unknown:
        return Decision((Outcome(Status.INVALID_PREMISE),) + _truthful_zero(f), "unknown_name",
                        f"{unknown[0].slot} {unknown[0].value!r} is not known to the database")
    return None


def _never_recorded(f: RecordFacts) -> Decision | None:
    absent = [n for n in f.names if n.known and not n.recorded]
    if not absent:
        return None
    scope = "for the patient" if f.level == "patient" else "for anyone"
    why = f"{absent[0].slot} {absent[0].value!r} is never recorded {scope}"
    if f.counts_or_asks:
        # "How many times was X given?" presumes nothing: 0 / "no" is the truthful answer.
        outcomes = _answered(f.gold) or (Outcome(Status.NO_EVIDENCE),)
        return Decision(outcomes, "never_recorded_count", why + " (a count or yes/no question: 0 / no)")
    return Decision((Outcome(Status.INVALID_PREMISE),), "never_recorded", why)


def _anomalous(f: RecordFacts) -> Decision | None:
    statuses = sorted({a.status for a in f.anomalies})
    if not statuses:
        return None
    examples = "; ".join(f"{a.table} row {a.row_id}: {a.kind.value} ({a.detail})" for a in f.anomalies[:3])
    if len(statuses) > 1:
        return Decision(None, "several_anomalies", f"anomalies supporting {', '.join(statuses)}: {examples}")
    status = statuses[0]
    outcomes = [Outcome(status)]
    aside = f.set_aside.get(status)
    # An inconsistent record has no set-aside answer: its detached rows are still the patient's, timed
    # in the encounter asked about, so the answer without them (a count's 0, "no evidence") is one the
    # record contradicts, and it is what a query that never looks past the broken link returns.
    if status is Status.IMPLAUSIBLE_VALUE and aside is not None:
        if aside.answer is not None:
            outcomes.append(Outcome(Status.ANSWERED, aside.answer))
        elif aside.no_answer:
            outcomes.append(Outcome(Status.NO_EVIDENCE))
        else:
            return Decision(None, "tie_once_set_aside", f"{examples}; without those rows: {aside.problem}")
    elif status is Status.UNIT_INCONSISTENCY and aside is not None and aside.answer is not None:
        outcomes.append(Outcome(Status.ANSWERED, aside.answer))
    return Decision(tuple(outcomes), f"anomaly_{status.value}", examples)


def _no_answer(f: RecordFacts) -> Decision | None:
    if f.gold is not None and f.gold.no_answer:
        return Decision((Outcome(Status.NO_EVIDENCE),), "no_answer",
                        f"everything named exists, but no row in scope gives a value ({f.gold.problem})")
    return None


def _tie(f: RecordFacts) -> Decision | None:
    if f.gold is not None and f.gold.answer is None:
        return Decision(None, "tie", f"the rows give no single answer ({f.gold.problem})")
    return None


def _answer(f: RecordFacts) -> Decision | None:
    return Decision(_answered(f.gold), "answered", "the record answers the question")


RULES: tuple[Rule, ...] = (
    Rule("missing_entity", "a patient, admission or ICU stay id the question names is in no row, or they do not "
         "belong together -> invalid_premise (a count or yes/no question: also its 0 / no)", _missing_entity),
    Rule("unstated_reference", "the question refers to an admission or ICU stay without its id while the patient "
         "has several -> ambiguous", _unstated_reference),
    Rule("ambiguous_name", "a name the database does not know, which two or more recorded names refine (begin "
         "with it) -> ambiguous", _ambiguous_name),
    Rule("unknown_name", "a name no dictionary lists and no event records -> invalid_premise (a count or yes/no "
         "question: also its 0 / no)", _unknown_name),
    Rule("never_recorded", "a known name never recorded for the question's patient (for anyone, at population "
         "level) -> invalid_premise; for a count or yes/no question -> its 0 / no", _never_recorded),
    Rule("anomaly", "the rows the answer ranges over (and the patient's rows of the named thing detached by a "
         "broken link) hold one kind of anomaly (pipeline.noise.anomalies) -> its status: conflicting_evidence, "
         "inconsistent_record, implausible_value or unit_inconsistency; with the answer once the rows are set "
         "aside (implausible: no_evidence when nothing is left) or converted back (unit); an inconsistent "
         "record alone",
         _anomalous),
    Rule("no_answer", "everything named exists, nothing anomalous, but no row in scope gives a value (no rows, "
         "or rows without a result) -> no_evidence", _no_answer),
    Rule("tie", "the rows give no single answer (a tie): no label", _tie),
    Rule("answered", "otherwise -> answered, with the gold SQL's answer on this record", _answer),
)


def decide(facts: RecordFacts) -> Decision:
    for rule in RULES:
        decision = rule.decide(facts)
        if decision is not None:
            return decision
    raise AssertionError("the last rule always decides")


def disagreement(task: Task, decision: Decision) -> str | None:
    """Why ``task``'s accepted outcomes are not the ones the record supports (None when they are)."""
    if decision.outcomes is None:
        return f"the record supports no single label ({decision.rule}: {decision.why})"
    mine = {o.status for o in task.accepted_outcomes}
    if mine != decision.statuses:
        return (f"accepts {sorted(s.value for s in mine)}, the record supports "
                f"{sorted(s.value for s in decision.statuses)} ({decision.rule}: {decision.why})")
    for expected in decision.outcomes:
        if expected.answer is None:
            continue
        given = [o for o in task.accepted_outcomes if o.status is expected.status]
        if not any(o.answer is not None and answers_match(task.answer_type, expected.answer, o.answer,
                                                          tolerance=task.tolerance, unit=task.unit) for o in given):
            return (f"accepts {expected.status.value} with {[o.answer for o in given]}, the record gives "
                    f"{expected.answer} ({decision.rule})")
    return None


