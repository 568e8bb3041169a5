"""Real Clean-Noise tasks built on a real database, for the contract and release tests.

Twelve small question templates (each intent at patient and population level) are filled with slot
values drawn from the database, their gold SQL is executed for the answer and their evidence rows
are collected; twins are made with real patches (hidden evidence rows, an implausible value) or a
changed question (a non-existent patient or value), and each twin's proof is obtained by running the
gold SQL on the patched database (``pipeline.patching.patched``) or by checking the entity is absent.

This stands in for the template and noise stages so the release can be tested on real data without
depending on them; the end-to-end tests use the real stages.
"""

import functools
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.patching import patched
from pipeline.source_db import read_source_info
from pipeline.task_model import (AddedRow, AnswerValue, ColumnValue, NamedValue, Outcome, Patch, Proof, RowRef, Task,
                                 ValueChange)
from pipeline.vocabulary import AnswerType, Intent, Level, NoiseLevel, NoiseType, Status, Variant

FAKE_SUBJECT = 99_999_999
FAKE_VALUE = "NO SUCH VALUE 0000"


@dataclass(frozen=True)
class Mini:
    id: str
    intent: Intent
    level: Level
    answer_type: AnswerType
    question: str
    sql: str  # {slot} placeholders, already quoted where text
    evidence: str  # SELECT table, row_id ...
    slots_sql: str  # one row per slot combination, columns named like the slots
    unit: str | None = None
    value_column: tuple[str, str] | None = None  # (table, column) an implausible value goes into


P, Q = Level.PATIENT, Level.POPULATION
N, S = AnswerType.NUMBER, AnswerType.TEXT_SET

MINIS = (
    Mini("t_admissions", Intent.DEMOGRAPHICS_ENCOUNTERS, P, N,
         "How many hospital admissions does patient {subject_id} have?",
         "SELECT count(*) FROM admissions WHERE subject_id = {subject_id}",
         "SELECT 'admissions', row_id FROM admissions WHERE subject_id = {subject_id}",
         "SELECT DISTINCT subject_id FROM admissions"),
    Mini("t_diagnoses", Intent.DIAGNOSES, P, N,
         "How many diagnosis codes were recorded for patient {subject_id}?",
         "SELECT count(*) FROM diagnoses_icd WHERE subject_id = {subject_id}",
         "SELECT 'diagnoses_icd', row_id FROM diagnoses_icd WHERE subject_id = {subject_id}",
         "SELECT DISTINCT subject_id FROM diagnoses_icd"),
    Mini("t_procedures", Intent.PROCEDURES, P, N,
         "How many ICD procedures were recorded for patient {subject_id}?",
         "SELECT count(*) FROM procedures_icd WHERE subject_id = {subject_id}",
         "SELECT 'procedures_icd', row_id FROM procedures_icd WHERE subject_id = {subject_id}",
         "SELECT DISTINCT subject_id FROM procedures_icd"),
    Mini("t_routes", Intent.MEDICATIONS, P, S,
         "By which routes were drugs prescribed to patient {subject_id}?",
         "SELECT DISTINCT route FROM prescriptions WHERE subject_id = {subject_id} AND route IS NOT NULL",
         "SELECT 'prescriptions', row_id FROM prescriptions WHERE subject_id = {subject_id} AND route IS NOT NULL",
         "SELECT subject_id FROM prescriptions GROUP BY 1 HAVING count(DISTINCT route) <= 6"),
    Mini("t_lab_max", Intent.LABORATORY, P, N,
         "What was the highest potassium value of patient {subject_id}?",
         "SELECT max(valuenum) FROM labevents WHERE subject_id = {subject_id} AND itemid = 50971",
         "SELECT 'labevents', row_id FROM labevents WHERE subject_id = {subject_id} AND itemid = 50971 "
         "AND valuenum = (SELECT max(valuenum) FROM labevents WHERE subject_id = {subject_id} AND itemid = 50971)",
         "SELECT DISTINCT subject_id FROM labevents WHERE itemid = 50971 AND valuenum IS NOT NULL",
         unit="mEq/L", value_column=("labevents", "valuenum")),
    Mini("t_output_total", Intent.VITALS_IO, P, N,
         "What total output volume (mL) was recorded for patient {subject_id}?",
         "SELECT sum(value) FROM outputevents WHERE subject_id = {subject_id}",
         "SELECT 'outputevents', row_id FROM outputevents WHERE subject_id = {subject_id}",
         "SELECT DISTINCT subject_id FROM outputevents", unit="mL"),
    Mini("t_admission_type", Intent.DEMOGRAPHICS_ENCOUNTERS, Q, N,
         "How many admissions had the admission type {admission_type}?",
         "SELECT count(*) FROM admissions WHERE admission_type = '{admission_type}'",
         "SELECT 'admissions', row_id FROM admissions WHERE admission_type = '{admission_type}'",
         "SELECT DISTINCT admission_type FROM admissions"),
    Mini("t_icd_patients", Intent.DIAGNOSES, Q, N,
         "How many patients were diagnosed with ICD code {icd_code}?",
         "SELECT count(DISTINCT subject_id) FROM diagnoses_icd WHERE icd_code = '{icd_code}'",
         "SELECT 'diagnoses_icd', row_id FROM diagnoses_icd WHERE icd_code = '{icd_code}'",
         "SELECT icd_code FROM diagnoses_icd GROUP BY 1 HAVING count(*) BETWEEN 5 AND 60"),
    Mini("t_proc_patients", Intent.PROCEDURES, Q, N,
         "How many patients had ICD procedure {icd_code}?",
         "SELECT count(DISTINCT subject_id) FROM procedures_icd WHERE icd_code = '{icd_code}'",
         "SELECT 'procedures_icd', row_id FROM procedures_icd WHERE icd_code = '{icd_code}'",
         "SELECT icd_code FROM procedures_icd GROUP BY 1 HAVING count(*) BETWEEN 2 AND 60"),
    Mini("t_drug_orders", Intent.MEDICATIONS, Q, N,
         "How many prescriptions of {drug} were written?",
         "SELECT count(*) FROM prescriptions WHERE drug = '{drug}'",
         "SELECT 'prescriptions', row_id FROM prescriptions WHERE drug = '{drug}'",
         "SELECT drug FROM prescriptions WHERE drug NOT LIKE '%''%' GROUP BY 1 HAVING count(*) BETWEEN 5 AND 80"),
    Mini("t_lab_patients", Intent.LABORATORY, Q, N,
         "How many patients had a {label} measurement?",
         "SELECT count(DISTINCT subject_id) FROM labevents JOIN d_labitems USING (itemid) WHERE label = '{label}'",
         "SELECT 'labevents', labevents.row_id FROM labevents JOIN d_labitems USING (itemid) WHERE label = '{label}'",
         "SELECT label FROM labevents JOIN d_labitems USING (itemid) WHERE label NOT LIKE '%''%' "
         "GROUP BY 1 HAVING count(*) BETWEEN 5 AND 80"),
    Mini("t_omr_patients", Intent.VITALS_IO, Q, N,
         "How many patients had {result_name} recorded outside the ICU?",
         "SELECT count(DISTINCT subject_id) FROM omr WHERE result_name = '{result_name}'",
         "SELECT 'omr', row_id FROM omr WHERE result_name = '{result_name}'",
         "SELECT DISTINCT result_name FROM omr"),
)


def _id(*parts) -> str:
    return hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:20]


def _answer(mini: Mini, rows: list[tuple]) -> AnswerValue | None:
    if mini.answer_type is AnswerType.TEXT_SET:
        return AnswerValue(items=tuple(sorted({str(r[0]) for r in rows})))
    value = rows[0][0] if rows else None
    if value is None:
        return None
    return AnswerValue(number=round(float(value), 4))


def _run(con, mini: Mini, slots: dict) -> AnswerValue | None:
    return _answer(mini, con.execute(mini.sql.format(**slots)).fetchall())


def _proof(passed: bool, check: str, detail: str) -> Proof:
    return Proof(check=check, passed=passed, detail=detail)


def _twin(clean: Task, noise: NoiseType, status: Status, *, patch: Patch = Patch(), question: str | None = None,
          params: tuple[NamedValue, ...] = (), proof: Proof) -> Task:
    from pipeline.vocabulary import NOISE_LEVEL_OF

    return Task(
        task_id="n" + _id(clean.task_id, noise, params), clean_task_id=clean.task_id, variant=Variant.NOISE,
        intent=clean.intent, level=clean.level, template_id=clean.template_id, paraphrase=clean.paraphrase,
        question=question or clean.question, slots=clean.slots, subject_id=clean.subject_id,
        gold_sql=clean.gold_sql, answer_type=clean.answer_type, answer=None, unit=clean.unit,
        tolerance=clean.tolerance, evidence=clean.evidence, expected_status=status,
        accepted_outcomes=(Outcome(status),), noise_level=NOISE_LEVEL_OF[noise], noise_type=noise,
        noise_params=params, patch=patch, proof=proof, base_fingerprint=clean.base_fingerprint)


def build_demo_tasks(db_path: Path, *, per_template: int = 6, seed: int = 0) -> list[Task]:
    """Clean tasks and their twins on the database at ``db_path`` (all six intents, both levels)."""
    tasks: list[Task] = []
    with duckdb.connect(str(db_path), read_only=True) as con:
        fingerprint = read_source_info(con).fingerprint
        for mini in MINIS:
            slot_rows = con.execute(f"SELECT * FROM ({mini.slots_sql}) ORDER BY hash(CAST(COLUMNS(*) AS VARCHAR) "
                                    f"|| '{seed}') LIMIT {per_template}").fetchall()
            names = [d[0] for d in con.description]
            for values in slot_rows:
                slots = dict(zip(names, (str(v) for v in values)))
                answer = _run(con, mini, slots)
                if answer is None:
                    continue
                evidence = tuple(RowRef(t, rid) for t, rid in
                                 con.execute(mini.evidence.format(**slots) + " ORDER BY 2").fetchall())
                subject = int(slots["subject_id"]) if "subject_id" in slots else None
                clean = Task(
                    task_id="c" + _id(mini.id, sorted(slots.items()), seed), clean_task_id=None,
                    variant=Variant.CLEAN, intent=mini.intent, level=mini.level, template_id=mini.id,
                    paraphrase=0, question=mini.question.format(**slots),
                    slots=tuple(NamedValue(k, v) for k, v in sorted(slots.items())), subject_id=subject,
                    gold_sql=mini.sql.format(**slots), answer_type=mini.answer_type, answer=answer,
                    unit=mini.unit, tolerance=0.01 if mini.answer_type is N else None, evidence=evidence,
                    expected_status=Status.ANSWERED, accepted_outcomes=(Outcome(Status.ANSWERED, answer),),
                    base_fingerprint=fingerprint)
                tasks.append(clean)
                tasks += _twins(con, mini, clean, slots)
    return tasks


def _twins(con, mini: Mini, clean: Task, slots: dict) -> list[Task]:
    out = []
    # record level: the evidence rows are hidden, so nothing supports an answer any more.
    if 0 < len(clean.evidence) <= 400:
        patch = Patch(hide=clean.evidence)
        with patched(con, patch):
            after = _run(con, mini, slots)
        changed = after != clean.answer
        out.append(_twin(clean, NoiseType.MISSING_EVIDENCE, Status.NO_EVIDENCE, patch=patch,
                         params=(NamedValue("hidden_rows", str(len(clean.evidence))),),
                         proof=_proof(changed, "answer_changed", f"gold answer {clean.answer} -> {after}")))
    # query level: the question names a patient or value the record does not have.
    key = "subject_id" if "subject_id" in slots else next(iter(slots))
    fake = str(FAKE_SUBJECT) if key == "subject_id" else FAKE_VALUE
    fake_slots = {**slots, key: fake}
    table = mini.evidence.split("FROM ")[1].split()[0]
    column = "subject_id" if key == "subject_id" else key
    if key == "label":
        table = "d_labitems"
    present = con.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?", [fake if key != "subject_id"
                                                                               else FAKE_SUBJECT]).fetchone()[0]
    out.append(_twin(clean, NoiseType.NONEXISTENT_ENTITY, Status.INVALID_PREMISE,
                     question=mini.question.format(**fake_slots), params=(NamedValue(key, fake),),
                     proof=_proof(present == 0, "entity_absent", f"{present} rows of {table} have {column} = {fake}")))
    # record level: a second measurement at the same time contradicts the one the answer rests on.
    if mini.value_column and clean.evidence and clean.answer and clean.answer.number is not None:
        t, col = mini.value_column
        ref = clean.evidence[0]
        row = con.execute(f"SELECT * EXCLUDE (row_id) FROM {t} WHERE row_id = ?", [ref.row_id]).fetchone()
        names = [d[0] for d in con.description]
        values = {n: (None if v is None else str(v)) for n, v in zip(names, row)}
        values[col] = repr(clean.answer.number + 1.5)
        patch = Patch(add=(AddedRow(t, -1, tuple(ColumnValue(n, v) for n, v in values.items())),))
        with patched(con, patch):
            after = _run(con, mini, slots)
        out.append(_twin(clean, NoiseType.CONFLICTING_DUPLICATE, Status.CONFLICTING_EVIDENCE, patch=patch,
                         params=(NamedValue("value", values[col]),),
                         proof=_proof(after != clean.answer, "answer_changed", f"gold answer {clean.answer} -> {after}")))
    # value level: the value the answer rests on becomes physiologically impossible.
    if mini.value_column and clean.evidence and clean.answer and clean.answer.number is not None:
        t, col = mini.value_column
        ref = clean.evidence[0]
        value = clean.answer.number * 1000 if clean.answer.number else 1e6
        patch = Patch(update=(ValueChange(t, ref.row_id, col, repr(value)),))
        with patched(con, patch):
            after = _run(con, mini, slots)
        out.append(_twin(clean, NoiseType.IMPLAUSIBLE_VALUE, Status.IMPLAUSIBLE_VALUE, patch=patch,
                         params=(NamedValue("value", repr(value)),),
                         proof=_proof(after != clean.answer and not math.isnan(value), "answer_changed",
                                      f"gold answer {clean.answer} -> {after}")))
    return out


@functools.cache
def demo_tasks(db_path: Path, per_template: int = 6, seed: int = 0) -> tuple[Task, ...]:
    """Built once per session per database (the tests only read them)."""
    return tuple(build_demo_tasks(db_path, per_template=per_template, seed=seed))


def observed_noise_shares(tasks) -> dict[str, float]:
    twins = [t for t in tasks if t.variant is Variant.NOISE]
    counts: dict[str, int] = {}
    for t in twins:
        counts[t.noise_type.value] = counts.get(t.noise_type.value, 0) + 1
    return {k: v / len(twins) for k, v in sorted(counts.items())}


__all__ = ["MINIS", "NoiseLevel", "build_demo_tasks", "demo_tasks", "observed_noise_shares"]
