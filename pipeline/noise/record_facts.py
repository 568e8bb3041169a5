"""The facts of a task's record that decide its label, read from the task's database alone.

``record_facts`` looks at one task as an agent could: its question, its slots and its template
(what the question asks for), and the database the task is played on (the source with the task's
patch laid over it). It never reads how a twin was made: not the noise type, the noise parameters,
the expected status or the accepted outcomes. The facts it gathers are the ones the status table of
docs/architecture.md names:

- does every patient, admission and ICU stay the question names exist, and belong together?
- does the question refer to an admission or stay without stating which, while there are several?
- does the database know each named thing (lab, chart item, drug, diagnosis, procedure, organism,
  category)? If not, do several recorded names refine it (an ambiguous general name)?
- is the named thing recorded for the question's patient (for anyone, at population level)?
- what does the template's gold SQL give on this database (an answer, or why none)?
- which rows the answer ranges over (the template's evidence SQL), and which of them, or of the
  question's rows detached from it by a broken link, are anomalous (``pipeline.noise.anomalies``)?
- what the answer is once the anomalous rows are set aside (implausible rows left out, a value in an
  unusual unit converted back to the item's usual unit). Inconsistent rows are not set aside: a
  detached row is still the patient's (``status_rules``).

``pipeline.noise.status_rules`` turns these facts into the outcomes a careful reviewer accepts.
"""

import functools
import re
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb

from pipeline.noise.anomalies import ENCOUNTER_OF, STATUS_OF, UNIT_OF, USUAL_UNITS_TABLE, AnomalyKind, Flagged, \
    RowChecker, all_usual_units_sql, anomalies_sql, anomalous_rows_sql, flag_rows, usual_of
from pipeline.answers import Observed, observe
from pipeline.noise.names import NAME_SOURCES, NAMED_KINDS, NameSource, folded_as_sql
from pipeline.noise.physiology import conversions_for, written_back
from pipeline.noise.case import CleanAnswers, measure_of
from pipeline.noise.partner_rows import Casts, PartnerRows, Row, SourceRows
from pipeline.noise.row_roles import ENTITY_OF_SLOT, copies_of, roles
from pipeline.patching import RowsMemo, patched_on_demand, patched_statement
from pipeline.schema import ROW_ID, TABLES_BY_NAME
from pipeline.sql_reads import ReadColumns
from pipeline.task_model import AnswerValue, Patch, RowRef, Task, ValueChange
from pipeline.templates.references import states
from pipeline.vocabulary import AnswerType, Level, Operation, SlotKind, Status, Variant

DETACHED_KINDS = (AnomalyKind.DANGLING_LINK, AnomalyKind.FOREIGN_LINK)
# The phrase a question uses for an entity it names by id; without the id the reference is vague.
STATED_KINDS = (SlotKind.ADMISSION, SlotKind.ICU_STAY)


@dataclass(frozen=True)
class Anomaly:
    kind: AnomalyKind
    table: str
    row_id: int
    detail: str

    @property
    def status(self) -> Status:
        return STATUS_OF[self.kind]


@dataclass(frozen=True)
class NameFact:
    slot: str
    value: str
    known: bool  # some dictionary or recorded event carries exactly this name (case and spaces aside)
    readings: tuple[str, ...]  # when not known: the recorded names that refine it
    recorded: bool  # recorded for the question's patient (for anyone, at population level)


@dataclass(frozen=True)
class RecordFacts:
    task_id: str
    level: Level
    operation: Operation | None
    answer_type: AnswerType
    missing_entities: tuple[str, ...]
    unstated_references: tuple[str, ...]
    names: tuple[NameFact, ...]
    gold: Observed | None = None  # None when a premise fact already decides the label
    anomalies: tuple[Anomaly, ...] = ()
    # Status -> the gold answer with the anomalous rows of that status set aside (or converted back).
    set_aside: dict[Status, Observed] = field(default_factory=dict)

    @property
    def counts_or_asks(self) -> bool:
        """A count or a yes/no question: it presumes nothing, 0 and "no" are truthful answers."""
        return self.operation in (Operation.COUNT, Operation.EXISTENCE)

    def summary(self) -> str:
        """One line a reviewer can read: what decided the label."""
        parts = [f"missing: {'; '.join(self.missing_entities)}"] if self.missing_entities else []
        parts += [f"unstated: {'; '.join(self.unstated_references)}"] if self.unstated_references else []
        for n in self.names:
            state = "known" if n.known else (f"unknown, readings {list(n.readings)}" if n.readings else "unknown")
            parts.append(f"{n.slot}={n.value!r} {state}, {'recorded' if n.recorded else 'not recorded'} in scope")
        if self.gold is not None:
            parts.append("gold: " + ("no answer (" + str(self.gold.problem) + ")" if self.gold.answer is None
                                     else "answered"))
        kinds = sorted({a.kind.value for a in self.anomalies})
        if kinds:
            parts.append("anomalies: " + ", ".join(f"{k} x{sum(a.kind == k for a in self.anomalies)}" for k in kinds))
        return "; ".join(parts)


def _literal(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _norm(expr: str) -> str:
    return f"lower(trim({expr}))"


class _NameIndex:
    """One name source's names on the unpatched database, with how many events carry each (in all, and
    per patient asked about), read once: what a task whose patch leaves the source's tables alone
    sees, and a floor for one whose patch hides or rewrites some of their rows."""

    def __init__(self, con: duckdb.DuckDBPyConnection, source: NameSource, expected: frozenset[int] = frozenset()):
        self.con, self.source = con, source
        # Patients the tasks to read name: their names are read together, when the first of them is asked.
        self.expected = expected
        where = f" WHERE {source.where}" if source.where else ""
        rows = con.execute(f"SELECT trim({source.name}), count(*) FROM {source.events}{where} GROUP BY 1").fetchall()
        self.recorded = {r[0].casefold(): r[0] for r in rows if r[0] is not None}
        self.events_named: Counter = Counter()
        for name, n in rows:
            if name is not None:
                self.events_named[name.casefold()] += n
        self.folded_sorted = sorted(self.recorded)
        self.listed: set[str] = set()
        if source.dictionary is not None:
            table, column = source.dictionary
            dwhere = f" WHERE {source.dictionary_where}" if source.dictionary_where else ""
            self.listed = {r[0].strip().casefold() for r in con.execute(
                f'SELECT DISTINCT "{column}" FROM "{table}"{dwhere}').fetchall() if r[0] is not None}
        # Patients' names are read one patient at a time, when first asked: a task set names a few
        # thousand patients at most, and every patient's names at once would not fit a full MIMIC-IV.
        self._of_subject: dict[int, Counter] = {}
        self._spelled: dict[str, tuple[str, ...]] | None = None
        self._folded: dict[str, str] = {}

    def spellings(self, value: str) -> tuple[str, ...] | None:
        """The dictionary's names equal to ``value`` ignoring case and spaces (folded by DuckDB, as the
        comparison they replace is), for a source ``named_by_dictionary``; None for any other source."""
        if not self.source.named_by_dictionary:
            return None
        if self._spelled is None:
            table, column = self.source.dictionary
            spelled: dict[str, set[str]] = {}
            for folded, name in self.con.execute(f'SELECT DISTINCT lower(trim("{column}")), "{column}" FROM "{table}" '
                                                 f'WHERE "{column}" IS NOT NULL').fetchall():
                spelled.setdefault(folded, set()).add(name)
            self._spelled = {k: tuple(sorted(v)) for k, v in spelled.items()}
        if value not in self._folded:
            self._folded[value] = folded_as_sql(self.con, value)
        return self._spelled.get(self._folded[value], ())

    def known(self, value: str) -> bool:
        v = value.strip().casefold()
        return v in self.recorded or v in self.listed

    def readings(self, value: str) -> set[str]:
        import bisect

        v = value.strip().casefold()
        out = set()
        for folded in self.folded_sorted[bisect.bisect_right(self.folded_sorted, v):]:
            if not folded.startswith(v):
                break
            if len(folded) > len(v) and not folded[len(v)].isalnum():
                out.add(self.recorded[folded])
        return out

    def events(self, value: str, subject: int | None = None) -> int:
        """Events named ``value`` (of one patient, if given) on the unpatched database."""
        v = value.strip().casefold()
        return self.events_named[v] if subject is None else self.of_subject(int(subject))[v]

    def recorded_for(self, value: str, subject: int | None) -> bool:
        return self.events(value, subject) > 0

    def of_subject(self, subject: int) -> Counter:
        """One patient's recorded names (case-folded) and how many events carry each."""
        if subject not in self._of_subject and subject in self.expected:
            self._read_expected()
        if subject not in self._of_subject:
            found: Counter = Counter()
            for name, n in self.con.execute(self.source.names_of_subject_sql(subject)).fetchall():
                if name is not None:
                    found[name.strip().casefold()] += n
            self._of_subject[subject] = found
        return self._of_subject[subject]

    def _read_expected(self) -> None:
        """Every expected patient's names in one grouped scan (one query per patient costs more than
        the rows do)."""
        asked = sorted(s for s in self.expected if s not in self._of_subject)
        found: dict[int, Counter] = {s: Counter() for s in asked}
        for subject, name, n in self.con.execute(self.source.names_of_subjects_sql(), [asked]).fetchall():
            if name is not None:
                found[subject][name.strip().casefold()] += n
        self._of_subject.update(found)


class FactReader:
    """Reads the facts of tasks on one connection to the source database (patches applied per task).

    What does not depend on a task (each name source's names, each item's usual unit, the rows the
    source itself leaves detached) is read once from the unpatched database; a task whose patch
    touches the tables behind one of them gets it read again under its patch, so every fact is the
    fact of the task's own database.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, templates, *, flagged: Flagged | None = None,
                 memo: RowsMemo | None = None, clean_answers: CleanAnswers | None = None):
        self.con = con
        self.memo = memo or RowsMemo()
        self.clean_answers = clean_answers or CleanAnswers()
        self.reads = ReadColumns(con)
        self.templates = templates  # template id -> template
        self.catalog = con.execute("SELECT current_database()").fetchone()[0]
        self.tables = {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main'").fetchall()}
        self._indexes: dict[NameSource, _NameIndex] = {}
        self._expected: frozenset[int] = frozenset()  # patients the tasks to read name (``expect``)
        # A cursor is a connection of its own: a patch applied on self.con (views, or statements that
        # carry it) does not reach it, so what is read through it meanwhile (names, partner rows) is the
        # source as it is.
        self._unpatched = con.cursor()
        casts = Casts(self._unpatched)
        self.partners = PartnerRows(self._unpatched, casts=casts)
        self.source_rows = SourceRows(self._unpatched, casts=casts)
        # The source's own anomalous rows, read once before any patch is laid (the source audit's).
        self.flagged: Flagged = flagged if flagged is not None else flag_rows(con, self.tables)
        self._natural_detached = {t: set().union(*(kinds.get(k, frozenset()) for k in DETACHED_KINDS))
                                  for t, kinds in self.flagged.items()}
        self._outside_by_encounter: dict[str, dict[tuple[str, int], set[int]]] = {}
        self._names_of_rows: dict[NameSource, dict[int, tuple]] = {}  # unpatched, see ``_row_names``
        self._rows_named: dict[tuple, frozenset[int]] = {}  # unpatched, see ``_left_after_hiding``
        self._entity_ids: dict[tuple, frozenset[int]] = {}  # unpatched, see ``_entity_rows``
        # Who is who on the unpatched source (patients, admission -> patient and times, stay -> admission,
        # patient and times, dictionaries' items, usual units): the anomaly predicates over fetched rows.
        self.checker = RowChecker(con)
        self._unit_counts_read: dict[tuple[str, str], dict[str, int]] = {}
        self._patients = self.checker.patients
        self._admissions = {hadm: v[0] for hadm, v in self.checker.admissions.items()}
        self._stays = {stay: (v[0], v[1]) for stay, v in self.checker.stays.items()}
        self._admissions_of: dict[int, set] = {}
        for hadm, subject in self._admissions.items():
            self._admissions_of.setdefault(subject, set()).add(hadm)
        self._stays_of: dict[int, set] = {}
        for stay, (_, subject) in self._stays.items():
            self._stays_of.setdefault(subject, set()).add(stay)
        present = [t for t in UNIT_OF if t in self.tables]
        if present:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {USUAL_UNITS_TABLE} AS "
                        f"SELECT * FROM ({all_usual_units_sql(present)})")

    # ------------------------------------------------------------ entry point

    def expect(self, subjects) -> None:
        """The patients of the tasks about to be read: each name source reads their names together."""
        self._expected = frozenset(int(s) for s in subjects if s is not None)
        for index in self._indexes.values():
            index.expected = self._expected

    def expect_rows(self, rows_by_table: dict[str, list[dict]]) -> None:
        """The evidence rows of the tasks about to be read, as the unpatched source has them (``SELECT *``):
        kept as the source's rows, and their partners read together when a scope among them is first
        asked (``PartnerRows.expect``)."""
        for name, rows in sorted(rows_by_table.items()):
            self.source_rows.keep(name, rows)
        self.partners.expect({name: {r[ROW_ID] for r in rows} for name, rows in rows_by_table.items()})

    def facts(self, task: Task, *, trust_clean: bool = False, trust_evidence: bool = False) -> RecordFacts:
        """The facts of ``task``'s record. ``trust_clean``: a clean task's answer and evidence were read
        on this database when it was extracted. ``trust_evidence``: the task's evidence was read by its
        template's evidence query on this database (a twin the builder just made keeps its clean task's),
        so a patch that rewrites none of the columns that query reads leaves it as it is."""
        template = self.templates(task.template_id)
        slots = {s.name: s.value for s in task.slots}
        kinds = {name: SlotKind(kind) for name, kind in template.slots.items()}
        operation = getattr(template, "operation", None)
        base = dict(task_id=task.task_id, level=task.level,
                    operation=Operation(operation) if operation is not None else None,
                    answer_type=task.answer_type)
        touched = task.patch.tables
        entities_cached = not touched & ENTITY_TABLES
        with self._patched(task.patch):
            missing = tuple(self._missing_entities(slots, kinds, entities_cached, task.patch))
            unstated = tuple(self._unstated(task, slots, kinds, entities_cached)) if not missing else ()
            names = tuple(self._names(task, slots, kinds, touched)) if not missing else ()
            facts = RecordFacts(**base, missing_entities=missing, unstated_references=unstated, names=names)
            if missing or unstated or any(not n.known or not n.recorded for n in names):
                # A premise decides the label; the gold answer is only read where 0 / "no" may be true.
                if facts.counts_or_asks:
                    facts = _replace(facts, gold=self._gold(template, slots, task))
                return facts
            if task.variant is Variant.CLEAN and task.patch.is_empty and task.answer is not None and trust_clean:
                # A clean task's answer and evidence were read by this very SQL on this very database
                # when it was extracted (and are re-executed by the templates stage's checks).
                gold = Observed(task.answer)
                scope = _by_table(task.evidence)
            else:
                gold = self._gold(template, slots, task)
                evidence_sql = template.render_evidence_sql(slots)
                if trust_evidence and self.reads.unread_by((template.id, "evidence_sql"), evidence_sql, task.patch):
                    # The query selects on the twin's database the rows it selected on the source.
                    scope = _by_table(task.evidence)
                else:
                    scope = self._scope(evidence_sql)
            anomalies = self._anomalies(scope, task.patch)
            anomalies += self._detached(task, template, slots, kinds, {(a.table, a.row_id) for a in anomalies})
            aside = self._aside_patches(task, anomalies)
        set_aside = self._set_aside(task, template, slots, aside)
        return _replace(facts, gold=gold, anomalies=tuple(anomalies), set_aside=set_aside)

    @contextmanager
    def _patched(self, patch: Patch):
        """Within the block, ``self.con`` is the database as ``patch`` leaves it: its queries carry the
        patch, and views are laid only for another statement (most twins' facts are read from what was
        read before, and the rest ask one or two queries)."""
        con = self.con
        with patched_on_demand(con, patch, self.catalog) as on_demand:
            self.con = on_demand
            try:
                yield
            finally:
                self.con = con

    # ------------------------------------------------------------ premises

    def _count(self, sql: str) -> int:
        (value,), = self.con.execute(sql).fetchall()
        return int(value or 0)

    def _missing_entities(self, slots: dict[str, str], kinds: dict[str, SlotKind], cached: bool,
                          patch: Patch) -> list[str]:
        ids = {kind: slots[name] for name, kind in kinds.items() if kind in ENTITY_OF_SLOT and name in slots}
        if cached:
            return self._missing_cached(ids)
        out = []
        for kind, value in ids.items():
            table, column = ENTITY_OF_SLOT[kind]
            if not _is_int(value) or not self._entity_rows(table, column, int(value), patch):
                out.append(f"{kind.value} {value} is not in {table}")
        if out:
            return out
        subject, hadm, stay = (int(ids[k]) if k in ids else None
                               for k in (SlotKind.SUBJECT, SlotKind.ADMISSION, SlotKind.ICU_STAY))
        if hadm is not None and subject is not None and not any(
                r["subject_id"] == subject for r in self._entity_rows("admissions", "hadm_id", hadm, patch)):
            out.append(f"admission {hadm} is not an admission of patient {subject}")
        stays = self._entity_rows("icustays", "stay_id", stay, patch) if stay is not None else []
        if stay is not None and subject is not None and not any(r["subject_id"] == subject for r in stays):
            out.append(f"ICU stay {stay} is not a stay of patient {subject}")
        if stay is not None and hadm is not None and not any(r["hadm_id"] == hadm for r in stays):
            out.append(f"ICU stay {stay} is not a stay of admission {hadm}")
        return out

    def _entity_rows(self, table: str, column: str, value: int, patch: Patch) -> list[dict]:
        """The rows of a patient, admission or stay table whose ``column`` is ``value`` on the database as
        ``patch`` leaves it: the unpatched rows with that value (their ids read once per value) and the
        rows the patch touches in the table, patched in Python (``SourceRows``), then filtered."""
        key = (table, column, value)
        if key not in self._entity_ids:
            self._entity_ids[key] = frozenset(r for (r,) in self._unpatched.execute(
                f'SELECT row_id FROM "{table}" WHERE "{column}" = {value}').fetchall())
        touched = {r.row_id for r in patch.hide if r.table == table} | \
            {u.row_id for u in patch.update if u.table == table} | {a.row_id for a in patch.add if a.table == table}
        return [r for r in self.source_rows.rows(table, self._entity_ids[key] | touched, patch) if r[column] == value]

    def _missing_cached(self, ids: dict) -> list[str]:
        out = []
        known = {SlotKind.SUBJECT: self._patients, SlotKind.ADMISSION: self._admissions, SlotKind.ICU_STAY: self._stays}
        for kind, value in ids.items():
            if not _is_int(value) or int(value) not in known[kind]:
                table, _ = ENTITY_OF_SLOT[kind]
                out.append(f"{kind.value} {value} is not in {table}")
        if out:
            return out
        subject, hadm, stay = (int(ids[k]) if k in ids else None
                               for k in (SlotKind.SUBJECT, SlotKind.ADMISSION, SlotKind.ICU_STAY))
        if hadm is not None and subject is not None and self._admissions[hadm] != subject:
            out.append(f"admission {hadm} is not an admission of patient {subject}")
        if stay is not None and subject is not None and self._stays[stay][1] != subject:
            out.append(f"ICU stay {stay} is not a stay of patient {subject}")
        if stay is not None and hadm is not None and self._stays[stay][0] != hadm:
            out.append(f"ICU stay {stay} is not a stay of admission {hadm}")
        return out

    def _unstated(self, task: Task, slots: dict[str, str], kinds: dict[str, SlotKind], cached: bool) -> list[str]:
        out = []
        subject = next((slots[n] for n, k in kinds.items() if k is SlotKind.SUBJECT), None)
        for name, kind in kinds.items():
            if kind not in STATED_KINDS or states(task.question, slots[name]):
                continue
            table, column = ENTITY_OF_SLOT[kind]
            if subject is None or not _is_int(subject):
                n = 0
            elif cached:
                n = len((self._admissions_of if kind is SlotKind.ADMISSION else self._stays_of).get(int(subject), ()))
            else:
                n = len({r[column] for r in self._entity_rows(table, "subject_id", int(subject), task.patch)
                         if r[column] is not None})
            if n >= 2:
                out.append(f"the question names no {kind.value} id and patient {subject} has {n}")
        return out

    def _sources(self, kind: SlotKind) -> list[NameSource]:
        return [s for s in NAME_SOURCES if s.kind is kind and all(t in self.tables for t in s.tables)]

    def _index(self, source: NameSource) -> _NameIndex:
        if source not in self._indexes:
            self._indexes[source] = _NameIndex(self._unpatched, source, self._expected)
        return self._indexes[source]

    @staticmethod
    def _changes_names(source: NameSource, patch: Patch) -> bool:
        """Whether ``patch`` can change which names the source records for whom: it hides rows of the
        event table or rewrites a column its names, patients or domain are read from. (Added rows only
        add: a name recorded stays recorded.)"""
        if not patch.tables & set(source.tables):
            return False
        if set(source.tables[1:]) & patch.tables or any(r.table == source.events_table for r in patch.hide):
            return True
        return any(u.table == source.events_table and u.column in _read_columns(source) for u in patch.update)

    @staticmethod
    def _rows_changed(source: NameSource, patch: Patch) -> int:
        """Rows of the source's event table the patch hides or rewrites."""
        table = source.events_table
        return len({r.row_id for r in patch.hide if r.table == table}
                   | {u.row_id for u in patch.update if u.table == table})

    @staticmethod
    def _hides_only(source: NameSource, patch: Patch) -> bool:
        """Whether ``patch`` can only take names away from the source's event rows by hiding them: it
        adds none and rewrites no column a name, patient or domain is read from."""
        table = source.events_table
        return not any(a.table == table for a in patch.add) and \
            not any(u.table == table and u.column in _read_columns(source) for u in patch.update)

    def _left_after_hiding(self, source: NameSource, value: str, subject: int | None, patch: Patch) -> bool:
        """Whether an event named ``value`` (of ``subject``, if given) is left once ``patch`` hides its rows,
        for a patch that only hides (``_hides_only``). Asked only when the unpatched source has no more
        such events than the patch changes rows, so the rows named, kept per name and patient, are few."""
        key = (source, value, subject)
        if key not in self._rows_named:
            spellings = self._index(source).spellings(value)
            self._rows_named[key] = frozenset(r for (r,) in self._unpatched.execute(
                source.rows_named_sql(value, subject, spellings=spellings)).fetchall())
        hidden = {r.row_id for r in patch.hide if r.table == source.events_table}
        return bool(self._rows_named[key] - hidden)

    def _names(self, task: Task, slots: dict[str, str], kinds: dict[str, SlotKind], touched) -> list[NameFact]:
        patch = task.patch
        subject = task.subject_id if task.level is Level.PATIENT else None
        out = []
        for name, kind in kinds.items():
            if kind not in NAMED_KINDS or name not in slots:
                continue
            value = slots[name]
            known, recorded, readings = False, False, set()
            for source in self._sources(kind):
                if self._changes_names(source, patch):  # the patch may change this source's names
                    # A patch takes a name away from at most the event rows it hides or rewrites, and
                    # leaves a dictionary it does not touch as it is: past that floor, read under the patch.
                    index, lost = self._index(source), self._rows_changed(source, patch)
                    floor_holds = not set(source.tables[1:]) & patch.tables
                    hides_only = floor_holds and self._hides_only(source, patch)
                    # The dictionary's spellings, read unpatched, hold only where the patch leaves it alone.
                    spellings = index.spellings(value) if floor_holds else None
                    source_known = floor_holds and (value.strip().casefold() in index.listed
                                                    or index.events(value) > lost) \
                        or (self._left_after_hiding(source, value, None, patch) if hides_only
                            else bool(self._count(source.exact_count_sql(value, spellings=spellings))))
                    if not source_known:
                        readings |= {r for (r,) in self.con.execute(source.refinements_sql(value)).fetchall()}
                    recorded = recorded or floor_holds and index.events(value, subject) > lost \
                        or (self._left_after_hiding(source, value, subject, patch) if hides_only
                            else bool(self._count(source.exact_count_sql(value, subject, recorded=True,
                                                                         spellings=spellings))))
                else:
                    index = self._index(source)
                    source_known = index.known(value)
                    if not source_known:
                        readings |= index.readings(value)
                    recorded = recorded or index.recorded_for(value, subject)
                known = known or source_known
            out.append(NameFact(name, value, known, tuple(sorted(readings)) if not known else (), known and recorded))
        return out

    # ------------------------------------------------------------ the answer and its rows

    def _gold(self, template, slots: dict[str, str], task: Task) -> Observed:
        return self.observe(template.render_sql(slots), task.answer_type, template, task.patch)

    def observe(self, sql: str, answer_type: AnswerType, template, patch: Patch, *,
                within_patched: bool = True) -> Observed:
        """``sql``'s answer on the database as ``patch`` leaves it: asked of ``self.con`` within
        ``_patched``, which applies the patch, or (``within_patched=False``, on the unpatched
        connection) with the patch carried in the statement."""
        decimals = int(getattr(template, "decimals", 2))
        known = self.clean_answers.get(sql, answer_type, decimals, patch)
        if known is not None:
            return Observed(known)
        rows = self.memo.rows(patch, sql, lambda: self.con.execute(
            sql if within_patched else patched_statement(sql, patch, self.catalog)).fetchall())
        return observe(answer_type, rows, decimals=decimals)

    def _scope(self, evidence_sql: str) -> dict[str, list[int]]:
        rows = self.con.execute(evidence_sql).fetchall()
        scope: dict[str, list[int]] = {}
        for table_name, row_id in rows:
            if not TABLES_BY_NAME[table_name].dictionary:
                scope.setdefault(table_name, []).append(int(row_id))
        return {t: sorted(set(ids)) for t, ids in scope.items()}

    def _anomalies_in(self, table_name: str, scope_sql: str, kinds=tuple(AnomalyKind),
                      precomputed_units: bool = True) -> list[Anomaly]:
        out = []
        for kind in kinds:
            sql = anomalous_rows_sql(kind, table_name, scope_sql, precomputed_units=precomputed_units)
            if sql is None:
                continue
            out += [Anomaly(kind, table_name, int(rid), detail) for rid, detail in self.con.execute(sql).fetchall()]
        return out

    def _anomalies(self, scope: dict[str, list[int]], patch: Patch) -> list[Anomaly]:
        """The anomalous rows in scope: read from the source's flagged rows where the patch leaves a
        table (and the patients, admissions and stays its rows link to) as they are, else by the
        predicates in Python over the rows as the patch leaves them; by SQL on the patched table where
        the patch touches a dictionary or an admission or stay id would name two rows."""
        entities_touched = patch.tables & ENTITY_TABLES
        # The checker of the patched patients, admissions and stays (None: the SQL decides).
        under = self.checker.under({t: self._rows_touched(t, patch) for t in sorted(entities_touched)}) \
            if entities_touched else self.checker
        out = []
        for table_name, ids in sorted(scope.items()):
            scope_sql = f"SELECT unnest([{', '.join(map(str, ids))}])"
            links = set(TABLES_BY_NAME[table_name].links.values()) - {table_name}
            if table_name in patch.tables or links & entities_touched:
                checker = under if links & entities_touched else self.checker
                found = None if checker is None or patch.tables & _DICTIONARIES else \
                    self._checked_in_python(table_name, ids, patch, checker)
                if found is not None:
                    out += found
                    continue
                # Partners of a row in scope (a duplicate, a conflicting copy) share its patient: the
                # predicates read the scope's patients' rows, copied once, not the whole table.
                rows = self._rows_of_scope_patients(table_name, scope_sql)
                sql = anomalies_sql(table_name, scope_sql, rows_from=rows, precomputed_units=self._units_settled(
                    table_name, scope_sql, patch, rows))
            else:
                flagged = self.flagged.get(table_name, {})
                hits = sorted({r for rows in flagged.values() for r in rows.intersection(ids)})
                if not hits:
                    continue
                # Only the rows found are described: the same predicates, on those rows alone.
                sql = anomalies_sql(table_name, f"SELECT unnest([{', '.join(map(str, hits))}])",
                                    precomputed_units=True)
            if sql is not None:
                out += [Anomaly(AnomalyKind(k), table_name, int(rid), detail)
                        for k, rid, detail in self.con.execute(sql).fetchall()]
        return out

    def _rows_touched(self, table_name: str, patch: Patch) -> tuple[list[Row], list[Row]]:
        """The rows of ``table_name`` that ``patch`` touches, as the source has them and as the patch
        leaves them (what ``RowChecker.under`` reads of the patients, admissions and stays)."""
        ids = _touched(patch, table_name)
        return self.source_rows.rows(table_name, ids, Patch()), self.source_rows.rows(table_name, ids, patch)

    def _checked_in_python(self, table_name: str, ids: list[int], patch: Patch, checker: RowChecker) -> list[Anomaly]:
        """The anomalies of the scope rows, by ``checker`` (the patient, admission and stay tables as
        the patch leaves them) over them and their partners (``PartnerRows``). Where the patch could
        move an item's usual unit, the scope items' usual units are counted again as it leaves them."""
        rows = self.partners.rows(self.con, table_name, ids, patch)
        scope = set(ids)
        if table_name in UNIT_OF:
            item = UNIT_OF[table_name][0]
            items = {r[item] for r in rows if r[ROW_ID] in scope}
            if not checker.units_settled(table_name, items, len(_touched(patch, table_name))):
                checker = checker.with_usual(self._usual_units_under(table_name, items, patch))
        return [Anomaly(kind, table_name, int(rid), detail)
                for kind, rid, detail in checker.anomalies(table_name, rows, scope)]

    def _usual_units_under(self, table_name: str, items, patch: Patch) -> dict[tuple[str, str], tuple[str | None, int]]:
        """The usual units of ``items`` on the database as ``patch`` leaves it: each item's rows per unit
        on the source (read once per item), less the rows the patch touches as the source has them,
        plus those rows as the patch leaves them."""
        item_col, unit_col = UNIT_OF[table_name]
        before, after = self._rows_touched(table_name, patch)
        out = {}
        for item in sorted({str(i) for i in items if i is not None}):  # a NULL item has no usual unit
            counts = Counter(self._unit_counts(table_name, item))
            for rows, step in ((before, -1), (after, 1)):
                for r in rows:
                    if str(r[item_col]) == item and r[unit_col] is not None:
                        counts[r[unit_col]] += step
            out[(table_name, item)] = usual_of(counts)
        return out

    def _unit_counts(self, table_name: str, item: str) -> dict[str, int]:
        """An item's rows per non-null unit on the unpatched source (cached)."""
        key = (table_name, item)
        if key not in self._unit_counts_read:
            item_col, unit_col = UNIT_OF[table_name]
            self._unit_counts_read[key] = dict(self._unpatched.execute(
                f'SELECT "{unit_col}", count(*) FROM "{table_name}" WHERE CAST("{item_col}" AS VARCHAR) = ? '
                f'AND "{unit_col}" IS NOT NULL GROUP BY 1', [item]).fetchall())
        return self._unit_counts_read[key]

    def _rows_of_scope_patients(self, table_name: str, scope_sql: str) -> str:
        if "subject_id" not in TABLES_BY_NAME[table_name].column_names:
            return f'"{table_name}"'
        subjects = [r[0] for r in self.con.execute(
            f'SELECT DISTINCT subject_id FROM "{table_name}" WHERE row_id IN ({scope_sql})').fetchall()
            if r[0] is not None]
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {_SCOPE_ROWS} AS SELECT * FROM \"{table_name}\" WHERE "
                         f"subject_id IN ({', '.join(map(str, subjects)) or 'NULL'})")
        return f"temp.{_SCOPE_ROWS}"

    def _units_settled(self, table_name: str, scope_sql: str, patch: Patch, rows: str) -> bool:
        """Whether the items' usual units read from the unpatched database are also this database's:
        every patched row moves a unit count by one at most, twice if relabelled, so a lead larger
        than twice the patched rows of the table cannot change hands."""
        if table_name not in UNIT_OF or table_name not in patch.tables:
            return True
        patched_rows = {(r.table, r.row_id) for group in (patch.hide, patch.add, patch.update) for r in group
                        if r.table == table_name}
        item = UNIT_OF[table_name][0]
        (lead,), = self.con.execute(
            f"SELECT min(margin) FROM temp.{USUAL_UNITS_TABLE} WHERE tbl = '{table_name}' AND item IN "
            f"(SELECT CAST(\"{item}\" AS VARCHAR) FROM {rows} WHERE row_id IN ({scope_sql}))").fetchall()
        return lead is not None and lead > 2 * len(patched_rows)

    def _detached(self, task: Task, template, slots, kinds, seen: set) -> list[Anomaly]:
        """Rows of the question's patient, admission or stay (and named thing) whose link is broken:
        they left the rows the answer ranges over, so the evidence query cannot show them. Looked for
        among the rows the task's patch writes and the rows the source itself leaves detached."""
        entities = {k: slots[n] for n, k in kinds.items() if k in ENTITY_OF_SLOT and _is_int(slots.get(n))}
        named = [(kind, slots[n]) for n, kind in kinds.items() if kind in NAMED_KINDS and n in slots]
        if task.level is Level.POPULATION and not named:
            return []  # a whole cohort's rows: the evidence query already reaches what belongs to it
        written = {}
        for change in task.patch.update:  # only a changed link can leave a row detached
            if change.column in TABLES_BY_NAME[change.table].links:
                written.setdefault(change.table, set()).add(change.row_id)
        for added in task.patch.add:
            written.setdefault(added.table, set()).add(added.row_id)
        out = []
        for table_name in sorted(template.tables):
            t = TABLES_BY_NAME[table_name]
            if t.dictionary or table_name not in self.tables or all(e == table_name for e in t.links.values()):
                continue
            encounters = {ENTITY_OF_SLOT[k][1]: int(v) for k, v in entities.items()
                          if k in (SlotKind.ADMISSION, SlotKind.ICU_STAY)}
            candidates = written.get(table_name, set()) | self._naturally_detached(table_name, task, encounters)
            if not candidates:
                continue
            rows = self.source_rows.rows(table_name, candidates, task.patch)
            # The question's rows: linked to its patient, admission or stay, and named like its named thing.
            linked = [r for r in rows if task.level is Level.POPULATION or any(
                ENTITY_OF_SLOT[k][1] in r and str(r[ENTITY_OF_SLOT[k][1]]) == str(v) for k, v in entities.items())]
            for kind, value in named:
                sources = [src for src in self._sources(kind) if src.events_table == table_name]
                if sources and linked:
                    folded = value.strip().casefold()
                    named_ids = {rid for src in sources
                                 for rid, name in self._row_names(src, [r[ROW_ID] for r in linked], task.patch)
                                 if name is not None and name.strip().casefold() == folded}
                    linked = [r for r in linked if r[ROW_ID] in named_ids]
            found = self.checker.anomalies(table_name, linked, {r[ROW_ID] for r in linked})
            # A row of the question's own admission or stay timed outside it is the question's row gone
            # astray too; a row of the patient's other encounters is not.
            in_encounter = {r[ROW_ID] for r in linked
                            if any(c in r and r[c] == v for c, v in encounters.items())}
            out += [Anomaly(k, table_name, int(rid), detail) for k, rid, detail in found
                    if (table_name, rid) not in seen and
                    (k in DETACHED_KINDS or (k is AnomalyKind.OUTSIDE_ENCOUNTER and rid in in_encounter))]
        return out

    def _row_names(self, source: NameSource, ids: list[int], patch: Patch) -> list[tuple[int, str | None]]:
        """(row id, name) of the event rows ``ids`` that ``source`` names, on the database as ``patch``
        (laid on ``self.con``) leaves it. A row the patch neither adds nor rewrites a column the source
        reads (``_read_columns``) has its unpatched name, read once and kept (the source's own
        detached rows recur across tasks); the others are read under the patch."""
        if set(source.tables[1:]) & patch.tables:
            return self.con.execute(_row_names_sql(source, ids)).fetchall()
        table = source.events_table
        fresh = {a.row_id for a in patch.add if a.table == table} | \
            {u.row_id for u in patch.update if u.table == table and u.column in _read_columns(source)}
        kept = self._names_of_rows.setdefault(source, {})
        unread = sorted({i for i in ids if i not in fresh and i not in kept})
        if unread:
            found: dict[int, list] = {i: [] for i in unread}  # a row the join leaves out has no name
            for row_id, name in self._unpatched.execute(_row_names_sql(source, unread)).fetchall():
                found[row_id].append(name)
            kept.update((i, tuple(names)) for i, names in found.items())
        patched = [i for i in ids if i in fresh]
        out = [(i, name) for i in ids if i not in fresh for name in kept[i]]
        return out + (self.con.execute(_row_names_sql(source, patched)).fetchall() if patched else [])

    def _naturally_detached(self, table_name: str, task: Task, encounters: dict[str, int]) -> set[int]:
        """The source's own rows of this table that a question could reach although the evidence query
        cannot: dangling or foreign links, and rows of the question's admission or stay timed outside it."""
        rows = set(self._natural_detached.get(table_name, set()))
        outside = self._natural_outside(table_name)
        for column, value in encounters.items():
            rows |= outside.get((column, value), set())
        return rows

    def _natural_outside(self, table_name: str) -> dict[tuple[str, int], set[int]]:
        """(hadm_id or stay_id, id) -> row ids of the unpatched source timed outside that encounter."""
        if table_name not in self._outside_by_encounter:
            ids = self.flagged.get(table_name, {}).get(AnomalyKind.OUTSIDE_ENCOUNTER, frozenset())
            by: dict[tuple[str, int], set[int]] = {}
            if ids and table_name in ENCOUNTER_OF:
                link = ENCOUNTER_OF[table_name][1].link
                for rid, value in self.con.execute(
                        f'SELECT row_id, "{link}" FROM "{self.catalog}".main."{table_name}" '
                        f'WHERE row_id IN (SELECT unnest(?))', [sorted(ids)]).fetchall():
                    by.setdefault((link, value), set()).add(rid)
            self._outside_by_encounter[table_name] = by
        return self._outside_by_encounter[table_name]

    def _aside_patches(self, task: Task, anomalies: list[Anomaly]) -> dict[Status, Patch]:
        """Per status that can be set aside, the task's patch plus what sets its rows aside (hidden, or
        converted back to the usual unit). Read with the task's patch laid: the rows as its record has them."""
        out: dict[Status, Patch] = {}
        for status in sorted({a.status for a in anomalies}):
            rows = sorted({(a.table, a.row_id) for a in anomalies if a.status is status})
            if status is Status.UNIT_INCONSISTENCY:
                changes = self._converted_back(rows, task.patch)
                if changes is None:
                    continue
                out[status] = _merged(task.patch, Patch(update=changes))
            elif status is Status.IMPLAUSIBLE_VALUE and not self._recorded_also(rows, task):
                out[status] = _merged(task.patch, Patch(hide=tuple(RowRef(t, r) for t, r in rows)))
        return out

    def _recorded_also(self, rows: list[tuple[str, int]], task: Task) -> bool:
        """Whether the record holds a copy of one of ``rows`` in another table (``RowRoles.recorded_also_in``:
        an ICU stay's end in ``transfers``) that records the value the task's answer rests on (its
        template's measure; any copy where the rows are of another table). A reader would not set such a
        row aside and call what is left the answer: the copy still answers. Read within the task's patched
        block, the rows as it has them."""
        measure = measure_of(self.templates(task.template_id))
        by_table: dict[str, list[int]] = {}
        for table_name, row_id in rows:
            by_table.setdefault(table_name, []).append(row_id)
        for table_name, ids in by_table.items():
            rows_now = self.source_rows.rows(table_name, ids, task.patch)
            about = measure[1] if measure is not None and measure[0] == table_name else None
            for sql, params in copies_of(table_name, rows_now, self.tables, about):
                (n,), = self.con.execute(sql, params).fetchall()
                if n:
                    return True
        return False

    def _set_aside(self, task: Task, template, slots, patches: dict[Status, Patch]) -> dict[Status, Observed]:
        """The answer with each status's rows set aside: one statement carrying its patch each, run on
        the unpatched connection once the task's own block (``_patched``) has ended."""
        sql = template.render_sql(slots)
        out: dict[Status, Observed] = {}
        for status, merged in patches.items():
            out[status] = self.observe(sql, task.answer_type, template, self._without_no_ops(merged),
                                       within_patched=False)
        return out

    def _without_no_ops(self, patch: Patch) -> Patch:
        """``patch`` less the updates of source rows it leaves exactly as the source has them (a value
        converted back to the very number and unit recorded): the same database, asked as such, so an
        answer known for it (the clean task's, or one the proof asked) is not asked again."""
        updated: dict[str, set[int]] = {}
        for u in patch.update:
            if u.row_id >= 0:
                updated.setdefault(u.table, set()).add(u.row_id)
        same = set()
        for t, ids in updated.items():
            before = {r[ROW_ID]: r for r in self.source_rows.rows(t, ids, Patch())}
            after = {r[ROW_ID]: r for r in self.source_rows.rows(t, ids, patch)}
            same |= {(t, i) for i, row in before.items() if after.get(i) == row}
        if not same:
            return patch
        return Patch(hide=patch.hide, add=patch.add,
                     update=tuple(u for u in patch.update if (u.table, u.row_id) not in same))

    def _converted_back(self, rows: list[tuple[str, int]], patch: Patch) -> tuple[ValueChange, ...] | None:
        """Each row in an unusual unit rewritten in its item's usual unit, or None when a conversion is
        not known (then only the unit inconsistency can be reported). The rows are read as ``patch``
        leaves them (``SourceRows``), the usual units as the unpatched source has them (``RowChecker``)."""
        changes = []
        for table_name, row_id in rows:
            item, unit = UNIT_OF[table_name]
            value_col = _VALUE_COLUMN.get(table_name)
            if value_col is None:
                return None
            found = self.source_rows.rows(table_name, [row_id], patch)
            usual = self.checker.usual.get((table_name, str(found[0][item]))) if found else None
            if usual is None or found[0][value_col] is None:
                return None
            item_value, row_unit, value = found[0][item], found[0][unit], found[0][value_col]
            back = next((c for c in conversions_for(table_name, item_value, usual[0])
                         if c.unit.strip().lower() == str(row_unit).strip().lower()), None)
            if back is None:
                return None
            text = written_back(back, float(value))
            changes += [ValueChange(table_name, row_id, value_col, text),
                        ValueChange(table_name, row_id, unit, usual[0])]
            mirror = roles(table_name).mirror_of(value_col)
            if mirror:
                changes.append(ValueChange(table_name, row_id, mirror, text))
        return tuple(changes)


def _touched(patch: Patch, table_name: str) -> set[int]:
    """The row ids of ``table_name`` that ``patch`` hides, rewrites or adds."""
    return {r.row_id for group in (patch.hide, patch.update, patch.add) for r in group if r.table == table_name}


ENTITY_TABLES = frozenset({"patients", "admissions", "icustays"})
_DICTIONARIES = frozenset(name for name, t in TABLES_BY_NAME.items() if t.dictionary)
_SCOPE_ROWS = "_rg_scope_patient_rows"


@functools.cache
def _read_columns(source: NameSource) -> frozenset[str]:
    """The event table's columns a source reads its names, patients and domain from."""
    return frozenset(re.findall(r"\be\.(\w+)", f"{source.events} {source.name} {source.where}")) | {"subject_id"}


def _row_names_sql(source: NameSource, ids) -> str:
    return f"SELECT e.row_id, {source.name} FROM {source.events} WHERE e.row_id IN ({', '.join(map(str, ids))})"


def _by_table(refs) -> dict[str, list[int]]:
    scope: dict[str, list[int]] = {}
    for ref in refs:
        if not TABLES_BY_NAME[ref.table].dictionary:
            scope.setdefault(ref.table, []).append(int(ref.row_id))
    return {t: sorted(set(ids)) for t, ids in scope.items()}


# The value an item's unit describes, per table with units.
_VALUE_COLUMN = {"labevents": "valuenum", "chartevents": "valuenum", "outputevents": "value",
                 "inputevents": "amount", "ingredientevents": "amount", "procedureevents": "value"}


def _merged(base: Patch, extra: Patch) -> Patch:
    """``extra`` applied on top of ``base``: later updates of one cell win, hidden rows stay hidden.
    A hidden row's updates are left out: they change nothing, and without them the patch that sets a
    twin's written rows aside is the one its proof already asked the gold SQL under (``RowsMemo``)."""
    updates = {(u.table, u.row_id, u.column): u for u in base.update}
    updates.update({(u.table, u.row_id, u.column): u for u in extra.update})
    hidden = {(r.table, r.row_id) for r in extra.hide}
    added = tuple(a for a in base.add if (a.table, a.row_id) not in hidden)
    hide = tuple(dict.fromkeys(base.hide + tuple(r for r in extra.hide if r.row_id >= 0)))
    gone = {(r.table, r.row_id) for r in hide}
    return Patch(hide=hide, add=added,
                 update=tuple(u for u in updates.values() if (u.table, u.row_id) not in gone))


def _replace(facts: RecordFacts, **changes) -> RecordFacts:
    import dataclasses

    return dataclasses.replace(facts, **changes)


def _is_int(value: Any) -> bool:
    try:
        int(str(value))
    except (TypeError, ValueError):
        return False
    return True
