"""Diagnoses: ICD diagnoses (ICD-9 and ICD-10) and their titles, counts, first/last, co-occurrence,
and the diagnosis-related group (DRG) of an admission.

A diagnosis is named by its ``d_icd_diagnoses.long_title``. A title resolves to every code carrying
it, in either ICD version (MIMIC-IV codes older admissions in ICD-9 and newer ones in ICD-10; where
both versions share a title they are the same diagnosis), and the codes are combined.
"""

from pipeline.templates.demographics_encounters import AGE_CAP
from pipeline.templates.registry import register
from pipeline.templates.template import Guard, Template
from pipeline.vocabulary import AnswerType as A
from pipeline.vocabulary import Intent, Level, Operation
from pipeline.vocabulary import SlotKind as K

DX = Intent.DIAGNOSES
CODED = ("diagnoses_icd AS x JOIN d_icd_diagnoses AS d ON d.icd_code = x.icd_code "
         "AND d.icd_version = x.icd_version")
IN_ADMISSION = CODED + " WHERE x.subject_id = {subject_id} AND x.hadm_id = {hadm_id}"
TITLED_IN_ADMISSION = IN_ADMISSION + " AND d.long_title = {diagnosis}"
TITLED_FOR_PATIENT = CODED + " WHERE x.subject_id = {subject_id} AND d.long_title = {diagnosis}"
TITLED = CODED + " WHERE d.long_title = {diagnosis}"
ADMISSION_SLOTS = {"subject_id": K.SUBJECT, "hadm_id": K.ADMISSION}
DX_ADMISSION_SLOTS = {"subject_id": K.SUBJECT, "hadm_id": K.ADMISSION, "diagnosis": K.DIAGNOSIS}
ADMISSION_ROW = ("SELECT 'admissions', a.row_id FROM admissions AS a WHERE a.subject_id = {subject_id} "
                 "AND a.hadm_id = {hadm_id}")
CODED_SAMPLER = ("SELECT x.subject_id, x.hadm_id, d.long_title AS diagnosis FROM " + CODED)
# First/last admission with a diagnosis: the coded rows and every admission they could pick from.
ADMISSIONS_WITH_DIAGNOSIS_EVIDENCE = (
    "SELECT 'diagnoses_icd', x.row_id FROM " + TITLED_FOR_PATIENT + " UNION ALL SELECT 'admissions', a.row_id "
    "FROM admissions AS a WHERE a.subject_id = {subject_id} AND a.hadm_id IN (SELECT x.hadm_id FROM "
    + TITLED_FOR_PATIENT + ")")
UNTIMED_ADMISSIONS = Guard("untimed_admissions", "SELECT count(*) > count(a.admittime) FROM admissions AS a "
                                                 "WHERE a.subject_id = {subject_id}")
NOTES = "a diagnosis title resolves to every ICD-9 and ICD-10 code carrying it"
# The admissions (and their patients) coded with the named diagnosis, as a derived table to join:
# DuckDB evaluates a join on it for many fillings at once far faster than a correlated IN.
CODED_ADMISSIONS = ("(SELECT DISTINCT x2.subject_id, x2.hadm_id FROM diagnoses_icd AS x2 JOIN d_icd_diagnoses AS d2 "
                    "ON d2.icd_code = x2.icd_code AND d2.icd_version = x2.icd_version "
                    "WHERE d2.long_title = {diagnosis}) AS h")
BOTH_CODED = ("(SELECT x.hadm_id FROM " + TITLED + " INTERSECT SELECT x.hadm_id FROM "
              + TITLED.replace("{diagnosis}", "{other_diagnosis}") + ") AS both_coded")
DRG = "drgcodes AS g WHERE g.subject_id = {subject_id} AND g.hadm_id = {hadm_id} AND g.drg_type = 'APR'"

register(
    Template(
        id="dx_has_diagnosis", intent=DX, level=Level.PATIENT, operation=Operation.EXISTENCE, answer_type=A.BOOLEAN,
        slots=DX_ADMISSION_SLOTS,
        paraphrases=(
            "Was patient {subject_id} diagnosed with {diagnosis} during admission {hadm_id}?",
            "Is {diagnosis} among the coded diagnoses of admission {hadm_id} of patient {subject_id}?",
        ),
        # Admissions crossed with frequently coded diagnoses: both answers occur.
        sampler=("SELECT a.subject_id, a.hadm_id, c.diagnosis FROM admissions AS a, (SELECT d.long_title AS "
                 "diagnosis FROM " + CODED + " GROUP BY d.long_title ORDER BY count(DISTINCT x.hadm_id) DESC, "
                 "d.long_title LIMIT 40) AS c"),
        gold_sql="SELECT count(*) > 0 FROM " + TITLED_IN_ADMISSION,
        evidence_sql=("SELECT 'diagnoses_icd', x.row_id FROM " + TITLED_IN_ADMISSION + " UNION ALL "
                      + ADMISSION_ROW + " AND NOT EXISTS (SELECT 1 FROM " + TITLED_IN_ADMISSION + ")"),
        notes=NOTES + "; evidence of a 'no' is the admission row"),
    Template(
        id="dx_count_in_admission", intent=DX, level=Level.PATIENT, operation=Operation.COUNT, answer_type=A.NUMBER,
        slots=ADMISSION_SLOTS, unit="diagnoses", decimals=0,
        sampler="SELECT subject_id, hadm_id FROM diagnoses_icd",
        paraphrases=(
            "How many diagnoses were coded for admission {hadm_id} of patient {subject_id}?",
            "Count the ICD diagnosis codes recorded in patient {subject_id}'s admission {hadm_id}.",
        ),
        gold_sql="SELECT count(*) FROM diagnoses_icd AS x WHERE x.subject_id = {subject_id} AND x.hadm_id = {hadm_id}",
        evidence_sql=("SELECT 'diagnoses_icd', x.row_id FROM diagnoses_icd AS x WHERE x.subject_id = {subject_id} "
                      "AND x.hadm_id = {hadm_id}")),
    Template(
        id="dx_primary_diagnosis", intent=DX, level=Level.PATIENT, operation=Operation.RETRIEVAL, answer_type=A.TEXT,
        slots=ADMISSION_SLOTS, sampler="SELECT subject_id, hadm_id FROM diagnoses_icd",
        paraphrases=(
            "What was the primary (first-listed) diagnosis of admission {hadm_id} of patient {subject_id}?",
            "Which diagnosis is coded in first position for patient {subject_id}'s admission {hadm_id}?",
        ),
        gold_sql="SELECT d.long_title FROM " + IN_ADMISSION + " AND x.seq_num = 1",
        evidence_sql="SELECT 'diagnoses_icd', x.row_id FROM " + IN_ADMISSION + " AND x.seq_num = 1",
        notes="the diagnosis with seq_num 1, by title"),
    Template(
        id="dx_first_three_in_order", intent=DX, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT_RANKED, slots=ADMISSION_SLOTS, sampler="SELECT subject_id, hadm_id FROM diagnoses_icd",
        paraphrases=(
            "List the first three coded diagnoses of admission {hadm_id} of patient {subject_id}, in coding order.",
            "In sequence order, what are the three highest-priority diagnoses of patient {subject_id}'s admission "
            "{hadm_id}?",
        ),
        gold_sql="SELECT d.long_title, x.seq_num FROM " + IN_ADMISSION + " AND x.seq_num <= 3",
        evidence_sql="SELECT 'diagnoses_icd', x.row_id FROM " + IN_ADMISSION + " AND x.seq_num <= 3",
        guards=(Guard("fewer_than_three_diagnoses",
                      "SELECT count(*) < 3 FROM " + IN_ADMISSION + " AND x.seq_num <= 3"),),
        notes="ranked by seq_num; two codes sharing a seq_num are a tie and rejected"),
    Template(
        id="dx_icd_code_of_diagnosis", intent=DX, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT, slots=DX_ADMISSION_SLOTS, sampler=CODED_SAMPLER,
        paraphrases=(
            "Which ICD code was recorded for {diagnosis} in admission {hadm_id} of patient {subject_id}?",
            "Give the ICD code under which {diagnosis} was coded for patient {subject_id} in admission {hadm_id}.",
        ),
        gold_sql="SELECT DISTINCT x.icd_code FROM " + TITLED_IN_ADMISSION,
        evidence_sql="SELECT 'diagnoses_icd', x.row_id FROM " + TITLED_IN_ADMISSION,
        notes=NOTES + "; a title coded under two codes in one admission is rejected"),
    Template(
        id="dx_admissions_with_diagnosis", intent=DX, level=Level.PATIENT, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"subject_id": K.SUBJECT, "diagnosis": K.DIAGNOSIS}, unit="admissions",
        decimals=0, sampler="SELECT x.subject_id, d.long_title AS diagnosis FROM " + CODED,
        paraphrases=(
            "In how many of patient {subject_id}'s hospital admissions was {diagnosis} coded?",
            "Count the admissions of patient {subject_id} with a diagnosis of {diagnosis}.",
        ),
        gold_sql="SELECT count(DISTINCT x.hadm_id) FROM " + TITLED_FOR_PATIENT,
        evidence_sql="SELECT 'diagnoses_icd', x.row_id FROM " + TITLED_FOR_PATIENT, notes=NOTES),
    Template(
        id="dx_first_admission_with_diagnosis", intent=DX, level=Level.PATIENT, operation=Operation.FIRST,
        answer_type=A.TIMESTAMP, slots={"subject_id": K.SUBJECT, "diagnosis": K.DIAGNOSIS},
        sampler="SELECT x.subject_id, d.long_title AS diagnosis FROM " + CODED,
        paraphrases=(
            "When was patient {subject_id} first admitted with a diagnosis of {diagnosis}?",
            "What is the admission time of the earliest admission of patient {subject_id} in which {diagnosis} was "
            "coded?",
        ),
        gold_sql=("SELECT min(a.admittime) FROM admissions AS a WHERE a.subject_id = {subject_id} AND a.hadm_id IN "
                  "(SELECT x.hadm_id FROM " + TITLED_FOR_PATIENT + ")"),
        evidence_sql=ADMISSIONS_WITH_DIAGNOSIS_EVIDENCE, guards=(UNTIMED_ADMISSIONS,),
        notes=NOTES),
    Template(
        id="dx_last_admission_with_diagnosis", intent=DX, level=Level.PATIENT, operation=Operation.LAST,
        answer_type=A.TIMESTAMP, slots={"subject_id": K.SUBJECT, "diagnosis": K.DIAGNOSIS},
        sampler="SELECT x.subject_id, d.long_title AS diagnosis FROM " + CODED,
        paraphrases=(
            "When was patient {subject_id} most recently admitted with a diagnosis of {diagnosis}?",
            "What is the admission time of the latest admission of patient {subject_id} in which {diagnosis} was "
            "coded?",
        ),
        gold_sql=("SELECT max(a.admittime) FROM admissions AS a WHERE a.subject_id = {subject_id} AND a.hadm_id IN "
                  "(SELECT x.hadm_id FROM " + TITLED_FOR_PATIENT + ")"),
        evidence_sql=ADMISSIONS_WITH_DIAGNOSIS_EVIDENCE, guards=(UNTIMED_ADMISSIONS,),
        notes=NOTES),
    Template(
        id="dx_apr_drg_severity", intent=DX, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        # An ordinal code: a severity off by one is another severity (with the default tolerance of one
        # unit, answering 3 for every admission scored on 33 of 36 demo tasks).
        answer_type=A.NUMBER, slots=ADMISSION_SLOTS, unit="severity level", decimals=0, tolerance=0.0,
        sampler="SELECT subject_id, hadm_id FROM drgcodes WHERE drg_type = 'APR'",
        paraphrases=(
            "What APR-DRG severity of illness (1-4) was assigned to admission {hadm_id} of patient {subject_id}?",
            "Give the APR-DRG severity level of patient {subject_id}'s hospital admission {hadm_id}.",
        ),
        gold_sql="SELECT g.drg_severity FROM " + DRG,
        evidence_sql="SELECT 'drgcodes', g.row_id FROM " + DRG, notes="drgcodes rows of type APR"),
    Template(
        id="dx_apr_drg_description", intent=DX, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT, slots=ADMISSION_SLOTS,
        sampler="SELECT subject_id, hadm_id FROM drgcodes WHERE drg_type = 'APR'",
        paraphrases=(
            "Which APR diagnosis-related group was admission {hadm_id} of patient {subject_id} billed under?",
            "What is the APR-DRG description of patient {subject_id}'s admission {hadm_id}?",
        ),
        gold_sql="SELECT g.description FROM " + DRG,
        evidence_sql="SELECT 'drgcodes', g.row_id FROM " + DRG, notes="drgcodes rows of type APR"),
    # ------------------------------------------------------------ population
    Template(
        id="dx_pop_patients_with_diagnosis", intent=DX, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"diagnosis": K.DIAGNOSIS}, unit="patients", decimals=0,
        sampler="SELECT d.long_title AS diagnosis FROM " + CODED,
        paraphrases=(
            "How many patients have been diagnosed with {diagnosis}?",
            "Count the patients with at least one admission coded with {diagnosis}.",
        ),
        gold_sql="SELECT count(DISTINCT x.subject_id) FROM " + TITLED,
        evidence_sql="SELECT 'diagnoses_icd', x.row_id FROM " + TITLED, notes=NOTES),
    Template(
        id="dx_pop_cooccurrence_count", intent=DX, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"diagnosis": K.DIAGNOSIS, "other_diagnosis": K.DIAGNOSIS}, unit="admissions",
        decimals=0,
        paraphrases=(
            "In how many admissions were both {diagnosis} and {other_diagnosis} coded?",
            "Count the hospital admissions coded with {diagnosis} as well as {other_diagnosis}.",
        ),
        # Pairs among the five first-listed diagnoses of an admission: co-occurring, and bounded in number.
        sampler=("SELECT d1.long_title AS diagnosis, d2.long_title AS other_diagnosis FROM diagnoses_icd AS x1 "
                 "JOIN diagnoses_icd AS x2 ON x2.hadm_id = x1.hadm_id AND x2.seq_num <= 5 "
                 "JOIN d_icd_diagnoses AS d1 ON d1.icd_code = x1.icd_code AND d1.icd_version = x1.icd_version "
                 "JOIN d_icd_diagnoses AS d2 ON d2.icd_code = x2.icd_code AND d2.icd_version = x2.icd_version "
                 "WHERE x1.seq_num <= 5 AND d1.long_title < d2.long_title"),
        gold_sql="SELECT count(*) FROM " + BOTH_CODED,
        evidence_sql=("SELECT 'diagnoses_icd', x.row_id FROM " + CODED + " JOIN " + BOTH_CODED + " ON "
                      "both_coded.hadm_id = x.hadm_id WHERE d.long_title IN ({diagnosis}, {other_diagnosis})"),
        notes=NOTES + "; an admission counts once"),
    Template(
        id="dx_pop_top_cooccurring", intent=DX, level=Level.POPULATION, operation=Operation.TOP_N,
        answer_type=A.TEXT_RANKED, slots={"diagnosis": K.DIAGNOSIS, "top_n": K.NUMBER},
        paraphrases=(
            "Among admissions coded with {diagnosis}, which {top_n} other diagnoses are coded most often, most "
            "frequent first?",
            "Rank the top {top_n} diagnoses that co-occur with {diagnosis} in the same admission.",
        ),
        # Diagnoses coded in ten or more admissions: rarer ones rank mostly ties.
        sampler=("SELECT d.long_title AS diagnosis, n.top_n FROM " + CODED + ", (VALUES (2), (3)) AS n(top_n) "
                 "GROUP BY d.long_title, n.top_n HAVING count(DISTINCT x.hadm_id) >= 10"),
        gold_sql=("SELECT d.long_title, rank() OVER (ORDER BY count(DISTINCT x.hadm_id) DESC) AS rnk FROM " + CODED +
                  " JOIN " + CODED_ADMISSIONS + " ON h.hadm_id = x.hadm_id WHERE d.long_title <> {diagnosis} "
                  "GROUP BY d.long_title QUALIFY rnk <= {top_n}"),
        evidence_sql=("SELECT 'diagnoses_icd', x.row_id FROM diagnoses_icd AS x JOIN " + CODED_ADMISSIONS +
                      " ON h.hadm_id = x.hadm_id"),
        guards=(Guard("fewer_than_n_diagnoses", "SELECT count(DISTINCT d.long_title) < {top_n} FROM " + CODED +
                      " JOIN " + CODED_ADMISSIONS + " ON h.hadm_id = x.hadm_id WHERE d.long_title <> {diagnosis}"),),
        notes=NOTES + "; ranked by admissions; ties inside the top N or at its cut are rejected"),
    Template(
        id="dx_pop_mean_age_with_diagnosis", intent=DX, level=Level.POPULATION, operation=Operation.MEAN,
        answer_type=A.NUMBER, slots={"diagnosis": K.DIAGNOSIS}, unit="years", decimals=1,
        sampler="SELECT d.long_title AS diagnosis FROM " + CODED,
        paraphrases=(
            "What is the average age at admission over admissions in which {diagnosis} was coded?",
            "Across admissions with a diagnosis of {diagnosis}, what is the mean patient age at admission?",
        ),
        gold_sql=("SELECT avg(p.anchor_age + (year(a.admittime) - p.anchor_year)) FROM admissions AS a "
                  "JOIN patients AS p ON p.subject_id = a.subject_id JOIN " + CODED_ADMISSIONS +
                  " ON h.hadm_id = a.hadm_id"),
        evidence_sql=("SELECT 'diagnoses_icd', x.row_id FROM " + TITLED + " UNION ALL SELECT 'admissions', a.row_id "
                      "FROM admissions AS a JOIN " + CODED_ADMISSIONS + " ON h.hadm_id = a.hadm_id UNION ALL "
                      "SELECT 'patients', p.row_id FROM patients AS p JOIN (SELECT DISTINCT h.subject_id FROM "
                      + CODED_ADMISSIONS + ") AS hp ON hp.subject_id = p.subject_id"),
        guards=(Guard("unknown_ages", "SELECT count(*) > count(p.anchor_age) FROM patients AS p JOIN (SELECT "
                                      "DISTINCT h.subject_id FROM " + CODED_ADMISSIONS + ") AS hp ON hp.subject_id = "
                                      "p.subject_id"),
                Guard("capped_ages", f"SELECT bool_or(p.anchor_age >= {AGE_CAP}) FROM patients AS p JOIN (SELECT "
                                     "DISTINCT h.subject_id FROM " + CODED_ADMISSIONS + ") AS hp ON hp.subject_id = "
                                     "p.subject_id")),
        notes=NOTES + f"; one age per admission; a diagnosis with a patient whose anchor_age is the cap ({AGE_CAP}) "
                      "is left out"),
    Template(
        id="dx_pop_in_hospital_deaths_with_diagnosis", intent=DX, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"diagnosis": K.DIAGNOSIS}, unit="admissions", decimals=0,
        sampler="SELECT d.long_title AS diagnosis FROM " + CODED,
        paraphrases=(
            "How many admissions coded with {diagnosis} ended with the patient's death in hospital?",
            "Count the in-hospital deaths among admissions with a diagnosis of {diagnosis}.",
        ),
        gold_sql=("SELECT count(*) FILTER (WHERE a.hospital_expire_flag = 1) FROM admissions AS a JOIN "
                  + CODED_ADMISSIONS + " ON h.hadm_id = a.hadm_id"),
        evidence_sql=("SELECT 'diagnoses_icd', x.row_id FROM " + TITLED + " UNION ALL SELECT 'admissions', a.row_id "
                      "FROM admissions AS a JOIN " + CODED_ADMISSIONS + " ON h.hadm_id = a.hadm_id"),
        guards=(Guard("unknown_outcomes", "SELECT count(*) > count(a.hospital_expire_flag) FROM admissions AS a JOIN "
                                          + CODED_ADMISSIONS + " ON h.hadm_id = a.hadm_id"),),
        notes=NOTES + "; hospital_expire_flag = 1"),
)
