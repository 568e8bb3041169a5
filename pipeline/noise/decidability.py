"""The label check: every twin's accepted outcomes are the ones its record alone supports.

``check_labels`` reads each task as written (a release row: question, slots, template, patch) and
computes the facts of its database with ``pipeline.noise.record_facts``, never its noise type,
parameters, expected status or accepted outcomes; ``pipeline.noise.status_rules`` turns the facts
into the outcomes a careful reviewer accepts, which must be exactly the task's. A clean task must
be answered with its own answer. The noise stage runs it as a blocking check on what it wrote, and
the builder runs the same rules on every candidate, so a twin the check would refuse is never
written in the first place.

``known`` hands the check the builder's decisions (task id -> (task as checked, Decision)), for twins
and the clean tasks they name. A decision is reused only for a task equal, field for field, to the
one it was computed for: the facts are a function of the task as written and the database, so that
is the same computation on the same input. (The builder reads a clean task trusting its stored answer
and evidence, which its gold SQL and evidence query gave on this database when it was extracted; the
templates stage's checks execute a sample of them again, and the audit below reads its share fresh.) Any other task (read back
differently, or not built in this run) is read again here. The builder reads every candidate with
one long-lived, cached ``FactReader``; so that a fault in that caching, or in trusting a clean task's
stored answer, cannot hide behind the reuse, a fixed share of the reused decisions (``AUDIT_ONE_IN``,
chosen by task id) is read again with this check's own fresh reader and must come out the same.
"""

import hashlib

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from pipeline.duckdb_memory import small_statement_reader
from pipeline.noise.record_facts import FactReader
from pipeline.noise.status_rules import decide, disagreement
from pipeline.task_model import Task
from pipeline.vocabulary import Level


AUDIT_ONE_IN = 10  # one reused decision in this many is read again from scratch


def _audited(task_id: str) -> bool:
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) % AUDIT_ONE_IN == 0


@dataclass
class LabelCheck:
    checked: int = 0
    reused: int = 0  # of those, decided by the builder on an identical task (not read again)
    audited: int = 0  # reused decisions read again with a fresh reader (one in AUDIT_ONE_IN)
    rules: Counter = field(default_factory=Counter)  # the rule that decided, per task checked
    problems: list[tuple[str, str]] = field(default_factory=list)  # (task id, why its outcomes are not supported)

    @property
    def passed(self) -> bool:
        return self.checked > 0 and not self.problems


def check_labels(db: duckdb.DuckDBPyConnection | str | Path, tasks: Iterable[Task], templates: Callable | None = None,
                 *, flagged=None, progress: Callable[[str], None] | None = None,
                 known: Mapping | None = None) -> LabelCheck:
    """Check ``tasks`` (clean tasks and twins) against the facts of their own records on ``db``."""
    if templates is None:
        from pipeline.templates import REGISTRY

        templates = REGISTRY.get
    if isinstance(db, duckdb.DuckDBPyConnection):
        return _check(db, tasks, templates, flagged, progress, known or {})
    with small_statement_reader(db) as con:
        return _check(con, tasks, templates, flagged, progress, known or {})


def _check(con, tasks, templates, flagged, progress, known) -> LabelCheck:
    reader = None  # built on the first task not decided already (reading the source's tables costs)
    result = LabelCheck()
    tasks = list(tasks)
    for task in tasks:
        prior = known.get(task.task_id)
        reuse = prior is not None and prior[0] == task
        if not reuse or _audited(task.task_id):
            if reader is None:
                reader = FactReader(con, templates, flagged=flagged)
                reader.expect(t.subject_id for t in tasks if t.level is Level.PATIENT)
            decision = decide(reader.facts(task))
            if reuse:
                result.audited += 1
                if decision.outcomes != prior[1].outcomes:
                    result.problems.append((task.task_id, f"the builder decided {prior[1].rule} "
                                                          f"({_statuses(prior[1])}) but a fresh read of the record "
                                                          f"decides {decision.rule} ({_statuses(decision)})"))
        else:
            decision = prior[1]
        if reuse:
            result.reused += 1
        result.checked += 1
        result.rules[decision.rule] += 1
        problem = disagreement(task, decision)
        if problem is not None:
            result.problems.append((task.task_id, problem))
        if progress is not None and result.checked % 500 == 0:
            progress(f"label check: {result.checked} tasks read")
    return result


def _statuses(decision) -> str:
    return ", ".join(sorted(s.value for s in decision.statuses)) or "no single label"
