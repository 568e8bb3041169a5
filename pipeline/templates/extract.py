"""The extraction engine: sample slot fillings, execute gold SQL, keep only trustworthy answers.

For each template, in one pass of a few DuckDB queries (never a table pulled into Python):

1. The template's sampler gives candidate fillings; the engine orders them by
   ``md5(seed | template id | slot values)`` (then by the values, so the order is total; the
   template id keeps templates sharing a sampler from asking about the same fillings) and reads the
   first chunk. Same database and seed, same candidates, same order.
2. The chunk becomes a small temporary table; the gold SQL is evaluated for every candidate at once
   as a ``LATERAL`` join with the slots as column references, and so are the guards, the unit and
   the evidence. The table is filled with the same literals the stored gold SQL contains, so a
   column reference means exactly what the literal means.
3. Candidates are accepted in order until ``tasks_per_template`` are; a rejected candidate is
   counted under its first problem: an answer problem from ``pipeline.answers`` (no rows, NULL, a
   tie), a guard's reason, an ambiguous unit, or missing/too much evidence. When a chunk runs out,
   the next (twice as large) is read.
4. The first accepted filling of every template is re-executed on its own with the literal gold
   SQL; an answer different from the batched one is a bug and raises, naming the template.

A filling's task id hashes the template id, the slot texts and the seed; its paraphrase is chosen
from the same hash, and so is whether a question about the patient's only admission (or ICU stay)
leaves its id unsaid (``pipeline.templates.references``: then "the hospital admission" is no sign of
an ambiguous twin). Intents whose tables are missing from the database are skipped and reported.
"""

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from pipeline.answers import AnswerShapeError, Unanswerable, normalise
from pipeline.capabilities import INTENT_TABLES
from pipeline.duckdb_memory import open_read_only
from pipeline.progress import Progress, ProgressEvent, emit
from pipeline.schema import TABLES_BY_NAME
from pipeline.source_db import read_source_info
from pipeline.task_model import AnswerValue, NamedValue, Outcome, RowRef, Task
from pipeline.templates.references import SIBLINGS, render_vaguely, vague_for
from pipeline.templates.registry import REGISTRY
from pipeline.templates.template import Template, slot_text, sql_literal
from pipeline.vocabulary import Intent, Level, SlotKind, Status, Variant

DEFAULT_TASKS_PER_TEMPLATE = 40
DEFAULT_MAX_EVIDENCE_ROWS = 5000  # a patch hiding a task's evidence must stay small
UNIT_NOT_UNIQUE = "unit_not_unique"
NO_EVIDENCE_ROWS = "no_evidence_rows"
EVIDENCE_TOO_LARGE = "evidence_too_large"
RESTS_ON_SOURCE_ANOMALY = "rests_on_source_anomaly"  # the evidence touches a row the source audit flags
PROGRESS_STAGE, PROGRESS_UNIT = "templates", "template"
_CANDIDATES = "__rg_candidates"
_UNIT_WRAPPER = ("(SELECT CASE WHEN count(*) > 0 AND count(*) = count(__u) AND count(DISTINCT __u) = 1 "
                 "THEN min(__u) END FROM ({sql}) AS __units(__u))")


class ExtractionError(RuntimeError):
    """The engine found a template it cannot evaluate consistently (names the template)."""


@dataclass(frozen=True)
class Evaluation:
    """What one slot filling gives on a database: an answer with its unit and evidence, or problems."""

    answer: AnswerValue | None
    unit: str | None
    evidence: tuple[RowRef, ...]
    problems: tuple[str, ...]

    @property
    def accepted(self) -> bool:
        return not self.problems


@dataclass
class ExtractionResult:
    tasks: list[Task]
    rejections: dict[str, Counter]  # template id -> rejection reason -> fillings rejected
    examined: dict[str, int]  # template id -> candidate fillings looked at
    skipped: dict[str, str] = field(default_factory=dict)  # intent -> why it was not extracted
    base_fingerprint: str = ""

    def counts(self, key: Callable[[Task], object]) -> Counter:
        return Counter(key(t) for t in self.tasks)


# ---------------------------------------------------------------- evaluating one or many fillings


def _evidence_rows(template: Template, rows: Iterable[tuple]) -> tuple[RowRef, ...]:
    refs = set()
    for r in rows:
        if len(r) != 2 or r[0] not in TABLES_BY_NAME or not isinstance(r[1], int):
            raise ExtractionError(f"template {template.id!r}: evidence_sql must return (table_name, row_id) of "
                                  f"MIMIC-IV tables; got {r!r}")
        refs.add(RowRef(r[0], r[1]))
    return tuple(sorted(refs, key=lambda ref: (ref.table, ref.row_id)))


def _judge(template: Template, gold_rows: list[tuple], guard_values: tuple, unit: str | None,
           evidence: tuple[RowRef, ...], max_evidence_rows: int, evidence_count: int | None = None,
           flagged: Mapping[str, frozenset[int]] | None = None) -> Evaluation:
    """``evidence_count`` stands in for ``len(evidence)`` when too many rows to fetch were only counted.
    ``flagged``: table -> row ids the source audit flags (a filling resting on one is not clean)."""
    problems: list[str] = []
    answer = None
    try:
        answer = normalise(template.answer_type, gold_rows, decimals=template.decimals)
    except Unanswerable as e:
        problems.append(e.problem.value)
    except AnswerShapeError as e:
        raise ExtractionError(f"template {template.id!r}: {e}") from None
    # A guard that cannot decide (NULL) rejects: trust is the default we cannot prove.
    problems += [g.reason for g, v in zip(template.guards, guard_values) if v is not False]
    if template.unit_sql and unit is None:
        problems.append(UNIT_NOT_UNIQUE)
    count = len(evidence) if evidence_count is None else evidence_count
    if not count:
        problems.append(NO_EVIDENCE_ROWS)
    elif count > max_evidence_rows:
        problems.append(EVIDENCE_TOO_LARGE)
    if flagged and any(ref.row_id in flagged.get(ref.table, ()) for ref in evidence):
        problems.append(RESTS_ON_SOURCE_ANOMALY)
    return Evaluation(answer if not problems else None, template.unit or unit, evidence, tuple(problems))


def _check_columns(template: Template) -> list[str]:
    cols = [f"({g.sql}) AS __guard_{i}" for i, g in enumerate(template.guards)]
    if template.unit_sql:
        cols.append(_UNIT_WRAPPER.format(sql=template.unit_sql) + " AS __unit")
    return cols


def evaluate_slots(con: duckdb.DuckDBPyConnection, template: Template, slots: Mapping[str, str], *,
                   max_evidence_rows: int = DEFAULT_MAX_EVIDENCE_ROWS) -> Evaluation:
    """Evaluate one filling with the literal SQL, as a task stores it (works on a patched connection)."""
    gold_rows = con.execute(template.render_sql(slots)).fetchall()
    guard_values, unit = (), None
    checks = _check_columns(template)
    if checks:
        row = con.execute("SELECT " + ", ".join(template.fill(c, slots) for c in checks)).fetchone()
        guard_values, unit = row[:len(template.guards)], (row[-1] if template.unit_sql else None)
    evidence = _evidence_rows(template, con.execute(template.render_evidence_sql(slots)).fetchall())
    return _judge(template, gold_rows, tuple(guard_values), unit, evidence, max_evidence_rows)


def _sampler_sql(template: Template, seed: int) -> str:
    cols = [f'"{name}"' for name in template.slots]
    listed = ", ".join(cols)
    not_null = " AND ".join(f"{c} IS NOT NULL" for c in cols)
    hashed = ", ".join(f"CAST({c} AS VARCHAR)" for c in cols)
    return (f"SELECT {listed} FROM (SELECT DISTINCT {listed} FROM ({template.sampler}) AS __s "
            f"WHERE {not_null}) AS __d ORDER BY md5(concat_ws('|', '{int(seed)}', '{template.id}', {hashed})), "
            f"{listed}")


def _load_candidates(con: duckdb.DuckDBPyConnection, template: Template, texts: list[tuple[str, ...]]) -> None:
    # The rows are the very literals the stored gold SQL will contain, so a column reference in the
    # batched SQL has the literal's type and value by construction.
    names = list(template.slots)
    kinds = [template.slots[n] for n in names]
    rows = ", ".join("(" + ", ".join([str(k)] + [sql_literal(kind, v) for kind, v in zip(kinds, row)]) + ")"
                     for k, row in enumerate(texts))
    columns = ", ".join(["__k"] + [f'"{n}"' for n in names])
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_CANDIDATES} AS SELECT * FROM (VALUES {rows}) AS __v({columns})")


def _evaluate_batch(con: duckdb.DuckDBPyConnection, template: Template, n: int, wanted: int,
                    max_evidence_rows: int, flagged: Mapping[str, frozenset[int]] | None = None
                    ) -> list[Evaluation | None]:
    """Evaluations of candidates ``0..n-1`` in order, ``None`` past the point where ``wanted`` were accepted.

    Answers and guards are evaluated for the whole chunk; evidence (the costly part for population
    questions) only for candidates that passed them, a slice at a time, until ``wanted`` are accepted.
    """
    over = lambda sql: template.over_columns(sql, "__c")  # noqa: E731
    gold: dict[int, list[tuple]] = {k: [] for k in range(n)}
    for k, *row in con.execute(f"SELECT __c.__k, __g.* FROM {_CANDIDATES} AS __c, "
                               f"LATERAL ({over(template.gold_sql)}) AS __g").fetchall():
        gold[k].append(tuple(row))
    guards: dict[int, tuple] = {k: () for k in range(n)}
    units: dict[int, str | None] = {k: None for k in range(n)}
    checks = _check_columns(template)
    if checks:
        for k, *row in con.execute(f"SELECT __c.__k, {', '.join(over(c) for c in checks)} "
                                   f"FROM {_CANDIDATES} AS __c").fetchall():
            guards[k] = tuple(row[:len(template.guards)])
            units[k] = row[-1] if template.unit_sql else None
    # Judged without evidence first: a placeholder row stands in, so only answer, guard and unit problems show.
    placeholder = (RowRef("admissions", 0),)
    passing = [k for k in range(n) if _judge(template, gold[k], guards[k], units[k], placeholder,
                                             max_evidence_rows).accepted]
    evaluations: list[Evaluation | None] = [None] * n
    accepted, start = 0, 0
    while accepted < wanted and start < len(passing):
        ks = passing[start:start + wanted - accepted]
        start += len(ks)
        evidence: dict[int, list[tuple]] = {k: [] for k in ks}
        counts: dict[int, int] = {k: 0 for k in ks}
        # Distinct rows counted in SQL: a filling over the limit sends one row to Python, not all of them.
        for k, table, row_id, count in con.execute(
                f"SELECT __k, __table, __row_id, __n FROM (SELECT *, count(*) OVER (PARTITION BY __k) AS __n, "
                f"row_number() OVER (PARTITION BY __k ORDER BY __table, __row_id) AS __i FROM (SELECT DISTINCT "
                f"__c.__k, __e.* FROM {_CANDIDATES} AS __c, LATERAL ({over(template.evidence_sql)}) AS "
                f"__e(__table, __row_id) WHERE __c.__k IN ({', '.join(map(str, ks))}))) "
                f"WHERE __n <= {int(max_evidence_rows)} OR __i = 1").fetchall():
            evidence[k].append((table, row_id))
            counts[k] = count
        for k in ks:
            rows = evidence[k] if counts[k] <= max_evidence_rows else []
            evaluations[k] = _judge(template, gold[k], guards[k], units[k], _evidence_rows(template, rows),
                                    max_evidence_rows, evidence_count=counts[k], flagged=flagged)
            accepted += evaluations[k].accepted
    last = passing[start - 1] if accepted >= wanted else n - 1
    for k in range(min(last + 1, n)):
        if evaluations[k] is None:  # failed before evidence: judge it for its problem
            evaluations[k] = _judge(template, gold[k], guards[k], units[k], placeholder, max_evidence_rows)
    return evaluations


# ---------------------------------------------------------------- tasks


def task_id_for(template: Template, slots: Mapping[str, str], seed: int) -> str:
    digest = hashlib.sha256(json.dumps([template.id, seed, [[n, slots[n]] for n in template.slots]],
                                       ensure_ascii=False).encode()).hexdigest()
    return f"{template.id}:{digest[:12]}"


def paraphrase_for(template: Template, task_id: str, seed: int) -> int:
    digest = hashlib.sha256(f"paraphrase|{seed}|{task_id}".encode()).hexdigest()
    return int(digest, 16) % len(template.paraphrases)


class _OnlyOnes:
    """Per admission or stay slot kind of a template: is it the patient's only admission (stay)? The
    patients with exactly one are read once per kind, in one query."""

    def __init__(self, con: duckdb.DuckDBPyConnection, template: Template):
        self.con, self.template = con, template
        self._single: dict[SlotKind, frozenset[int]] = {}

    def __call__(self, slots: Mapping[str, str]) -> dict[SlotKind, bool]:
        subject = slots.get("subject_id")
        if subject is None or self.template.level is not Level.PATIENT:
            return {}
        out = {}
        for kind in sorted({SlotKind(k) for k in self.template.slots.values()} & set(SIBLINGS)):
            if kind not in self._single:
                table, _ = SIBLINGS[kind]
                self._single[kind] = frozenset(s for (s,) in self.con.execute(
                    f"SELECT subject_id FROM {table} GROUP BY subject_id HAVING count(*) = 1").fetchall())
            out[kind] = int(subject) in self._single[kind]
        return out


def _task(template: Template, slots: dict[str, str], ev: Evaluation, seed: int, fingerprint: str,
          only_one: Mapping[SlotKind, bool] | None = None) -> Task:
    task_id = task_id_for(template, slots, seed)
    paraphrase = paraphrase_for(template, task_id, seed)
    vague = vague_for(template, slots, paraphrase, task_id, seed, only_one or {})
    question = (render_vaguely(template, slots, paraphrase, vague) if vague else None) \
        or template.render_question(slots, paraphrase)
    return Task(
        task_id=task_id, clean_task_id=None, variant=Variant.CLEAN, intent=template.intent, level=template.level,
        template_id=template.id, paraphrase=paraphrase, question=question,
        slots=tuple(NamedValue(n, slots[n]) for n in template.slots),
        subject_id=int(slots["subject_id"]) if template.level is Level.PATIENT else None,
        gold_sql=template.render_sql(slots), answer_type=template.answer_type, answer=ev.answer,
        unit=ev.unit, tolerance=template.tolerance, evidence=ev.evidence, expected_status=Status.ANSWERED,
        accepted_outcomes=(Outcome(Status.ANSWERED, ev.answer),), base_fingerprint=fingerprint,
    )


def extract_template(con: duckdb.DuckDBPyConnection, template: Template, *,
                     tasks_per_template: int = DEFAULT_TASKS_PER_TEMPLATE, seed: int = 0, fingerprint: str = "",
                     max_evidence_rows: int = DEFAULT_MAX_EVIDENCE_ROWS,
                     flagged: Mapping[str, frozenset[int]] | None = None) -> tuple[list[Task], Counter, int]:
    """Up to ``tasks_per_template`` clean tasks of one template, its rejections and fillings examined."""
    tasks: list[Task] = []
    rejections: Counter = Counter()
    examined = 0
    sampler = _sampler_sql(template, seed)
    only_ones = _OnlyOnes(con, template)
    # Most fillings are accepted: a first chunk half again the target wastes little evaluation.
    chunk, offset = tasks_per_template + tasks_per_template // 2 + 10, 0
    try:
        while len(tasks) < tasks_per_template:
            try:
                rows = con.execute(f"{sampler} LIMIT {chunk} OFFSET {offset}").fetchall()
            except duckdb.Error as e:
                raise ExtractionError(f"template {template.id!r}: sampler failed: {e}") from None
            if not rows:
                break
            texts = [tuple(slot_text(v) for v in r) for r in rows]
            _load_candidates(con, template, texts)
            try:
                evaluations = _evaluate_batch(con, template, len(texts), tasks_per_template - len(tasks),
                                              max_evidence_rows, flagged)
            except duckdb.Error as e:
                raise ExtractionError(f"template {template.id!r}: batched evaluation failed: {e}") from None
            for values, ev in zip(texts, evaluations):
                if ev is None:
                    break
                examined += 1
                slots = dict(zip(template.slots, values))
                if not ev.accepted:
                    rejections[ev.problems[0]] += 1
                    continue
                if not tasks:
                    _spot_check(con, template, slots, ev)
                tasks.append(_task(template, slots, ev, seed, fingerprint, only_ones(slots)))
                if len(tasks) == tasks_per_template:
                    break
            if len(rows) < chunk:
                break
            offset += chunk
            chunk *= 2
    finally:
        con.execute(f"DROP TABLE IF EXISTS temp.main.{_CANDIDATES}")
    return tasks, rejections, examined


def _spot_check(con, template: Template, slots: dict[str, str], batched: Evaluation) -> None:
    # The stored gold SQL is the literal one: it must give what the batched evaluation gave.
    single = normalise(template.answer_type, con.execute(template.render_sql(slots)).fetchall(),
                       decimals=template.decimals)
    if single != batched.answer:
        raise ExtractionError(f"template {template.id!r}: the literal gold SQL gives {single} for slots {slots}, "
                              f"the batched evaluation {batched.answer}")


@dataclass(frozen=True)
class Mismatch:
    task_id: str
    stored: AnswerValue | None
    now: AnswerValue | str  # the re-executed answer, or why there is none


def recheck_answers(con: duckdb.DuckDBPyConnection, tasks: Iterable[Task], *,
                    per_template: int | None = None) -> tuple[int, list[Mismatch]]:
    """Re-execute stored gold SQL (the first ``per_template`` tasks of each template, or all) and compare.

    Returns how many tasks were re-executed and those whose answer is no longer the stored one.
    """
    seen: Counter = Counter()
    checked, mismatches = 0, []
    for task in tasks:
        if per_template is not None and seen[task.template_id] >= per_template:
            continue
        seen[task.template_id] += 1
        checked += 1
        try:
            decimals = REGISTRY.get(task.template_id).decimals
            now = normalise(task.answer_type, con.execute(task.gold_sql).fetchall(), decimals=decimals)
        except (Unanswerable, KeyError, duckdb.Error) as e:
            mismatches.append(Mismatch(task.task_id, task.answer, str(e)))
            continue
        if now != task.answer:
            mismatches.append(Mismatch(task.task_id, task.answer, now))
    return checked, mismatches


def present_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "UNION SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}


def extract_clean_tasks(con_or_db_path: duckdb.DuckDBPyConnection | str | Path, *,
                        intents: Iterable[Intent | str] | None = None,
                        tasks_per_template: int = DEFAULT_TASKS_PER_TEMPLATE,
                        seed: int = 0, templates: Iterable[Template] | None = None,
                        max_evidence_rows: int = DEFAULT_MAX_EVIDENCE_ROWS,
                        progress: Progress | None = None,
                        flagged: Mapping[str, frozenset[int]] | None = None) -> ExtractionResult:
    """Clean tasks from the source database: up to ``tasks_per_template`` per registered template.

    ``intents`` restricts the intents (default: all); ``templates`` replaces the registry (tests).
    ``progress`` receives a ``ProgressEvent`` (stage ``templates``, unit ``template``) before the
    first template and after each one, and a plain message for each intent skipped.
    ``flagged`` (table -> row ids, ``pipeline.source_audit.flagged_row_set``): rows the source audit
    flags; a filling whose evidence touches one is rejected (``rests_on_source_anomaly``). Default:
    the audit's predicates are run on the database first, so clean tasks never rest on the source's
    own anomalies; ``{}`` turns that off.
    Tasks come in intent order, then template order, then acceptance order. An intent whose tables
    are missing is skipped and named in ``result.skipped``.
    """
    if tasks_per_template < 1:
        raise ValueError("tasks_per_template must be at least 1")
    if isinstance(con_or_db_path, duckdb.DuckDBPyConnection):
        return _extract(con_or_db_path, intents, tasks_per_template, seed, templates, max_evidence_rows, progress,
                        flagged)
    path = Path(con_or_db_path)
    if not path.exists():
        raise FileNotFoundError(f"source database {path} does not exist")
    with open_read_only(path) as con:
        return _extract(con, intents, tasks_per_template, seed, templates, max_evidence_rows, progress, flagged)


def _extract(con, intents, tasks_per_template, seed, templates, max_evidence_rows, progress,
             flagged=None) -> ExtractionResult:
    fingerprint = read_source_info(con).fingerprint
    if flagged is None:
        from pipeline.noise.anomalies import flag_rows

        flagged = {t: frozenset().union(*kinds.values()) for t, kinds in flag_rows(con, present_tables(con)).items()}
    wanted = list(Intent) if intents is None else [i for i in Intent if i in {Intent(x) for x in intents}]
    pool = list(REGISTRY) if templates is None else list(templates)
    present = present_tables(con)
    result = ExtractionResult([], {}, {}, {}, fingerprint)
    work = []
    for intent in wanted:
        chosen = [t for t in pool if t.intent is intent]
        missing = sorted(INTENT_TABLES[intent] - present)
        if missing:
            result.skipped[intent.value] = (f"{intent.value}: the database lacks {', '.join(missing)}; "
                                            f"its {len(chosen)} templates were skipped")
            emit(progress, result.skipped[intent.value])
            continue
        work += chosen
    if work:
        emit(progress, ProgressEvent(PROGRESS_STAGE, PROGRESS_UNIT, 0, len(work)))
    for done, template in enumerate(work, 1):
        tasks, rejected, examined = extract_template(
            con, template, tasks_per_template=tasks_per_template, seed=seed, fingerprint=fingerprint,
            max_evidence_rows=max_evidence_rows, flagged=flagged)
        result.tasks += tasks
        result.rejections[template.id] = rejected
        result.examined[template.id] = examined
        emit(progress, ProgressEvent(PROGRESS_STAGE, PROGRESS_UNIT, done, len(work), template.id,
                                     f"{len(tasks)} tasks, {sum(rejected.values())} fillings rejected"))
    ids = Counter(t.task_id for t in result.tasks)
    dupes = [i for i, c in ids.items() if c > 1]
    if dupes:
        raise ExtractionError(f"task ids repeat: {dupes[:5]}")
    return result
