"""A small but real release folder built from the real demo database, for the environment's tests.

Clean tasks have real gold SQL executed on the demo (answers normalised by ``pipeline.answers``);
twins have real patches (evidence rows hidden, a duplicate added with another value, a value made
impossible, a value converted to another unit) or a real query-level change (a patient id that does
not exist), and each twin's proof is a real check that the gold SQL gives another answer, or none,
on the twin's database. The folder follows the release layout of docs/architecture.md: tasks per
split as Parquet (``tasks_to_arrow``), ``manifest.json`` with file hashes and ``base_database``,
and ``base.duckdb``.

Used until the full pipeline (templates, noise, release) can build a demo release of its own.
"""

import hashlib
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from pipeline.answers import Unanswerable, normalise
from pipeline.patching import patched
from pipeline.source_db import read_source_info
from pipeline.task_model import (AddedRow, AnswerValue, ColumnValue, NamedValue, Outcome, Patch, Proof, RowRef, Task,
                                 ValueChange, tasks_to_arrow)
from pipeline.vocabulary import AnswerType, Intent, Level, NOISE_LEVEL_OF, NoiseType, Split, Status, Variant

# One laboratory family per split: (split, admission with many potassium results, its patient).
LAB_FAMILIES = ((Split.TRAIN, 28258130, 10039708), (Split.VALIDATION, 22987108, 10007818),
                (Split.TEST, 26486158, 10014354))
HEART_RATE_STAY = (Split.TRAIN, 33281088, 10039708)
MISSING_SUBJECT = 99999999

POTASSIUM_SQL = ("SELECT max(l.valuenum) FROM labevents l JOIN d_labitems d ON d.itemid = l.itemid "
                 "WHERE l.subject_id = {subject_id} AND l.hadm_id = {hadm_id} AND d.label = 'Potassium' "
                 "AND d.fluid = 'Blood'")
POTASSIUM_EVIDENCE = ("SELECT row_id FROM labevents WHERE subject_id = {subject_id} AND hadm_id = {hadm_id} "
                      "AND itemid = 50971 AND valuenum IS NOT NULL ORDER BY row_id")
HEART_RATE_SQL = ("SELECT max(c.valuenum) FROM chartevents c JOIN d_items d ON d.itemid = c.itemid "
                  "WHERE c.stay_id = {stay_id} AND d.label = 'Heart Rate'")
HEART_RATE_EVIDENCE = "SELECT row_id FROM chartevents WHERE stay_id = {stay_id} AND itemid = 220045 ORDER BY row_id"
GENDER_SQL = "SELECT gender FROM patients WHERE subject_id = {subject_id}"
FIRST_ADMISSION_SQL = "SELECT min(admittime) FROM admissions WHERE subject_id = {subject_id}"
ICU_SQL = "SELECT count(*) > 0 FROM icustays WHERE subject_id = {subject_id}"
ROUTES_SQL = "SELECT DISTINCT route FROM prescriptions WHERE hadm_id = {hadm_id} AND route IS NOT NULL"
TOP_LABS_SQL = ("SELECT d.label, rank() OVER (ORDER BY count(*) DESC) AS r FROM labevents l "
                "JOIN d_labitems d ON d.itemid = l.itemid WHERE l.hadm_id = {hadm_id} GROUP BY d.label "
                "QUALIFY r <= 3")
URGENT_SQL = "SELECT count(*) FROM admissions WHERE admission_type = 'URGENT'"


def _rows(con, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()


def _answer(con, answer_type: AnswerType, sql: str) -> AnswerValue | None:
    try:
        return normalise(answer_type, _rows(con, sql))
    except Unanswerable:
        return None


class _Builder:
    def __init__(self, con: duckdb.DuckDBPyConnection, fingerprint: str):
        self.con, self.fingerprint = con, fingerprint
        self.tasks: list[Task] = []

    def clean(self, task_id: str, split: Split, intent: Intent, level: Level, question: str, sql_template: str,
              slots: dict[str, object], answer_type: AnswerType, *, unit: str | None = None,
              tolerance: float | None = None, evidence: tuple[RowRef, ...] = ()) -> Task:
        sql = sql_template.format(**slots)
        answer = normalise(answer_type, _rows(self.con, sql))
        task = Task(
            task_id=task_id, clean_task_id=None, variant=Variant.CLEAN, intent=intent, level=level,
            template_id=f"fixture_{task_id.split('-')[1]}", paraphrase=0, question=question.format(**slots),
            slots=tuple(NamedValue(k, str(v)) for k, v in slots.items()),
            subject_id=int(slots["subject_id"]) if "subject_id" in slots else None, gold_sql=sql,
            answer_type=answer_type, answer=answer, unit=unit, tolerance=tolerance, evidence=evidence,
            expected_status=Status.ANSWERED, accepted_outcomes=(Outcome(Status.ANSWERED, answer),),
            base_fingerprint=self.fingerprint, split=split)
        self.tasks.append(task)
        return task

    def twin(self, clean: Task, noise_type: NoiseType, status: Status, patch: Patch, *,
             extra: tuple[Outcome, ...] = (), params: dict[str, str] | None = None,
             question: str | None = None, gold_sql: str | None = None,
             slots: dict[str, object] | None = None) -> Task:
        gold = gold_sql or clean.gold_sql
        with patched(self.con, patch):
            noisy = _answer(self.con, clean.answer_type, gold)
        assert noisy != clean.answer, f"{clean.task_id}/{noise_type}: the noise does not change the answer"
        proof = Proof("answer_changed", True, f"gold SQL on the twin's database gives {noisy!r}, "
                                              f"clean answer {clean.answer!r}")
        twin = replace(
            clean, task_id=f"{clean.task_id}~{noise_type.value}", clean_task_id=clean.task_id, variant=Variant.NOISE,
            question=question or clean.question, gold_sql=gold, answer=None, expected_status=status,
            slots=tuple(NamedValue(k, str(v)) for k, v in slots.items()) if slots else clean.slots,
            accepted_outcomes=(Outcome(status),) + extra, noise_level=NOISE_LEVEL_OF[noise_type],
            noise_type=noise_type, noise_params=tuple(NamedValue(k, v) for k, v in (params or {}).items()),
            patch=patch, proof=proof)
        self.tasks.append(twin)
        return twin

    def max_row(self, table: str, row_ids: tuple[int, ...]) -> tuple:
        ids = ", ".join(map(str, row_ids))
        return _rows(self.con, f"SELECT row_id, valuenum FROM {table} WHERE row_id IN ({ids}) "
                               f"ORDER BY valuenum DESC, row_id LIMIT 1")[0]


def _evidence(con, table: str, sql: str) -> tuple[RowRef, ...]:
    return tuple(RowRef(table, r[0]) for r in _rows(con, sql))


def _lab_family(b: _Builder, split: Split, hadm_id: int, subject_id: int) -> None:
    slots = {"subject_id": subject_id, "hadm_id": hadm_id}
    evidence = _evidence(b.con, "labevents", POTASSIUM_EVIDENCE.format(**slots))
    clean = b.clean(f"fx-potassium-{hadm_id}", split, Intent.LABORATORY, Level.PATIENT,
                    "What was the highest blood potassium of patient {subject_id} during admission {hadm_id}?",
                    POTASSIUM_SQL, slots, AnswerType.NUMBER, unit="mEq/L", tolerance=0.01, evidence=evidence)
    top_row, top_value = b.max_row("labevents", tuple(r.row_id for r in evidence))
    b.twin(clean, NoiseType.MISSING_EVIDENCE, Status.NO_EVIDENCE, Patch(hide=evidence))
    duplicate = _rows(b.con, f"SELECT labevent_id, specimen_id, itemid, charttime, storetime, valueuom, "
                             f"ref_range_lower, ref_range_upper FROM labevents WHERE row_id = {top_row}")[0]
    columns = ("labevent_id", "specimen_id", "itemid", "charttime", "storetime", "valueuom", "ref_range_lower",
               "ref_range_upper")
    conflicting = round(top_value + 1.7, 1)
    added = AddedRow("labevents", -1, tuple(ColumnValue(c, None if v is None else str(v)) for c, v in
                                            zip(columns, duplicate))
                     + (ColumnValue("subject_id", str(subject_id)), ColumnValue("hadm_id", str(hadm_id)),
                        ColumnValue("value", str(conflicting)), ColumnValue("valuenum", str(conflicting))))
    b.twin(clean, NoiseType.CONFLICTING_DUPLICATE, Status.CONFLICTING_EVIDENCE, Patch(add=(added,)),
           params={"value": str(conflicting)})
    b.twin(clean, NoiseType.IMPLAUSIBLE_VALUE, Status.IMPLAUSIBLE_VALUE,
           Patch(update=(ValueChange("labevents", top_row, "valuenum", "45.0"),
                         ValueChange("labevents", top_row, "value", "45.0"))), params={"value": "45.0"})
    converted = round(top_value * 3.9098, 2)
    b.twin(clean, NoiseType.UNIT_MISMATCH, Status.UNIT_INCONSISTENCY,
           Patch(update=(ValueChange("labevents", top_row, "valuenum", str(converted)),
                         ValueChange("labevents", top_row, "value", str(converted)),
                         ValueChange("labevents", top_row, "valueuom", "mg/dL"))),
           extra=(Outcome(Status.ANSWERED, clean.answer),), params={"unit": "mg/dL", "value": str(converted)})
    gender = b.clean(f"fx-gender-{subject_id}", split, Intent.DEMOGRAPHICS_ENCOUNTERS, Level.PATIENT,
                     "What is the recorded gender of patient {subject_id}?", GENDER_SQL,
                     {"subject_id": subject_id}, AnswerType.TEXT)
    fake = {"subject_id": MISSING_SUBJECT}
    b.twin(gender, NoiseType.NONEXISTENT_ENTITY, Status.INVALID_PREMISE, Patch(),
           question=gender.question.replace(str(subject_id), str(MISSING_SUBJECT)),
           gold_sql=GENDER_SQL.format(**fake), slots=fake, params={"subject_id": str(MISSING_SUBJECT)})
    b.clean(f"fx-routes-{hadm_id}", split, Intent.MEDICATIONS, Level.PATIENT,
            "By which routes were drugs prescribed to patient {subject_id} during admission {hadm_id}?",
            ROUTES_SQL, slots, AnswerType.TEXT_SET)
    b.clean(f"fx-firstadmit-{subject_id}", split, Intent.DEMOGRAPHICS_ENCOUNTERS, Level.PATIENT,
            "When was patient {subject_id} first admitted to the hospital?", FIRST_ADMISSION_SQL,
            {"subject_id": subject_id}, AnswerType.TIMESTAMP)
    b.clean(f"fx-icu-{subject_id}", split, Intent.DEMOGRAPHICS_ENCOUNTERS, Level.PATIENT,
            "Did patient {subject_id} ever stay in an ICU?", ICU_SQL, {"subject_id": subject_id}, AnswerType.BOOLEAN)
    if _answer(b.con, AnswerType.TEXT_RANKED, TOP_LABS_SQL.format(**slots)) is not None:
        b.clean(f"fx-toplabs-{hadm_id}", split, Intent.LABORATORY, Level.PATIENT,
                "Which three lab tests were measured most often for patient {subject_id} in admission {hadm_id}, "
                "most frequent first?", TOP_LABS_SQL, slots, AnswerType.TEXT_RANKED)


def _vitals_family(b: _Builder, split: Split, stay_id: int, subject_id: int) -> None:
    slots = {"subject_id": subject_id, "stay_id": stay_id}
    evidence = _evidence(b.con, "chartevents", HEART_RATE_EVIDENCE.format(**slots))
    clean = b.clean(f"fx-heartrate-{stay_id}", split, Intent.VITALS_IO, Level.PATIENT,
                    "What was the highest heart rate of patient {subject_id} during ICU stay {stay_id}?",
                    HEART_RATE_SQL, slots, AnswerType.NUMBER, unit="bpm", tolerance=0.5, evidence=evidence)
    top_row, _ = b.max_row("chartevents", tuple(r.row_id for r in evidence))
    b.twin(clean, NoiseType.IMPLAUSIBLE_VALUE, Status.IMPLAUSIBLE_VALUE,
           Patch(update=(ValueChange("chartevents", top_row, "valuenum", "999.0"),
                         ValueChange("chartevents", top_row, "value", "999"))), params={"value": "999"})


def build_demo_release(source_db: Path, root: Path, version: str = "demo-fixture") -> Path:
    """Write a release folder at ``root / version`` from the demo database at ``source_db``."""
    release = root / version
    (release / "tasks").mkdir(parents=True)
    con = duckdb.connect(str(source_db), read_only=True)
    try:
        info = read_source_info(con)
        b = _Builder(con, info.fingerprint)
        for split, hadm_id, subject_id in LAB_FAMILIES:
            _lab_family(b, split, hadm_id, subject_id)
        _vitals_family(b, *HEART_RATE_STAY)
        b.clean("fx-urgent-population", Split.TRAIN, Intent.DEMOGRAPHICS_ENCOUNTERS, Level.POPULATION,
                "How many hospital admissions had the admission type URGENT?", URGENT_SQL, {}, AnswerType.NUMBER,
                unit="admissions", tolerance=0.0)
    finally:
        con.close()
    base = release / "base.duckdb"
    try:
        os.link(source_db, base)  # same bytes, no copy; a release ships its own file
    except OSError:
        shutil.copyfile(source_db, base)
    files = {}
    for split in Split:
        tasks = [t for t in b.tasks if t.split == split]
        path = release / "tasks" / f"{split.value}.parquet"
        pq.write_table(tasks_to_arrow(tasks), path)
        files[f"tasks/{split.value}.parquet"] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                                                 "rows": len(tasks)}
    manifest = {
        "version": version, "created": "2024-01-01T00:00:00Z",
        "source": {"kind": info.kind, "fingerprint": info.fingerprint}, "seed": 0,
        "config": {"builder": "tests/robustgym/release_fixture.py"}, "generator_version": "fixture",
        "counts": {s.value: sum(t.split == s for t in b.tasks) for s in Split}, "files": files,
        "schema": "pipeline.task_model.arrow_schema", "base_database": "base.duckdb", "rebuild_command": None,
    }
    (release / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return release
