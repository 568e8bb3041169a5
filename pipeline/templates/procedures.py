"""Procedures: ICD procedures of an admission (ICD-9 and ICD-10), billed HCPCS/CPT services, and ICU
procedure events (lines, ventilation, imaging, ...).

An ICD procedure is named by its ``d_icd_procedures.long_title`` and resolves to every code carrying
it in either version. An ICU procedure event is named by its ``d_items.label``; a label shared by
several procedure items would combine them (no current one is).
"""

from pipeline.templates.registry import register
from pipeline.templates.template import Guard, Template
from pipeline.vocabulary import AnswerType as A
from pipeline.vocabulary import Intent, Level, Operation
from pipeline.vocabulary import SlotKind as K

PROC = Intent.PROCEDURES
CODED = ("procedures_icd AS x JOIN d_icd_procedures AS d ON d.icd_code = x.icd_code "
         "AND d.icd_version = x.icd_version")
IN_ADMISSION = CODED + " WHERE x.subject_id = {subject_id} AND x.hadm_id = {hadm_id}"
TITLED_FOR_PATIENT = CODED + " WHERE x.subject_id = {subject_id} AND d.long_title = {procedure}"
TITLED = CODED + " WHERE d.long_title = {procedure}"
ADMISSION_SLOTS = {"subject_id": K.SUBJECT, "hadm_id": K.ADMISSION}
ADMISSION_ROW = ("SELECT 'admissions', a.row_id FROM admissions AS a WHERE a.subject_id = {subject_id} "
                 "AND a.hadm_id = {hadm_id}")
# Name resolution is a join, not an IN (subquery): DuckDB decorrelates a join on the slot far better
# when the engine evaluates many fillings at once.
NAMED = ("procedureevents AS e JOIN d_items AS di ON di.itemid = e.itemid WHERE di.label = {procedure} "
         "AND di.linksto = 'procedureevents'")
IN_STAY = NAMED + " AND e.subject_id = {subject_id} AND e.stay_id = {stay_id}"
FIRST_START = ("(SELECT min(e2.starttime) FROM procedureevents AS e2 JOIN d_items AS di2 ON di2.itemid = e2.itemid "
               "WHERE di2.label = {procedure} AND di2.linksto = 'procedureevents' AND e2.subject_id = {subject_id} "
               "AND e2.stay_id = {stay_id})")
STAY_SLOTS = {"subject_id": K.SUBJECT, "stay_id": K.ICU_STAY, "procedure": K.PROCEDURE}
# Procedure events a clinician calls procedures: not the "communication" items ("Family updated by RN").
PROCEDURE_ITEM = "i.category <> '7-Communication'"
EVENT_SAMPLER = ("SELECT e.subject_id, e.stay_id, i.label AS procedure FROM procedureevents AS e "
                 "JOIN d_items AS i ON i.itemid = e.itemid WHERE " + PROCEDURE_ITEM)
# Events that last: charted with a value in minutes, hours or days. The others (an X-ray, an EKG, an
# extubation; valueuom 'None') are points in time that MIMIC-IV ends one minute after they start, a
# charting convention and not a duration: asked how long they lasted, 0.02 h is no answer a reader
# would sign (and was the answer of 40 of the demo's 67 duration tasks).
TIMED_ITEM = PROCEDURE_ITEM + " AND e.valueuom IN ('min', 'hour', 'day')"
TIMED_EVENT_SAMPLER = ("SELECT e.subject_id, e.stay_id, i.label AS procedure FROM procedureevents AS e "
                       "JOIN d_items AS i ON i.itemid = e.itemid WHERE " + TIMED_ITEM)
# The sampler picks a timed row; a label whose rows are also point events somewhere is still no duration.
POINT_EVENTS = "e.valueuom NOT IN ('min', 'hour', 'day')"
FIRST_IN_STAY = IN_STAY + " AND e.starttime = " + FIRST_START
HOURS = "date_diff('second', e.starttime, e.endtime) / 3600.0"
ICD_NOTES = "an ICD procedure title resolves to every ICD-9 and ICD-10 code carrying it"
ICU_NOTES = "an ICU procedure is a procedureevents item named by its d_items label"
UNIT_STAYS_WITH = ("procedureevents AS e JOIN icustays AS s ON s.stay_id = e.stay_id "
                   "WHERE s.first_careunit = {careunit}")
NAMED_IN_UNIT = ("procedureevents AS e JOIN d_items AS di ON di.itemid = e.itemid JOIN icustays AS s ON s.stay_id = "
                 "e.stay_id WHERE di.label = {procedure} AND di.linksto = 'procedureevents' AND s.first_careunit = "
                 "{careunit}")

register(
    Template(
        id="proc_icd_procedures_in_admission", intent=PROC, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT_SET, slots=ADMISSION_SLOTS, sampler="SELECT subject_id, hadm_id FROM procedures_icd",
        paraphrases=(
            "Which ICD procedures were recorded for patient {subject_id} during admission {hadm_id}?",
            "List the coded procedures of hospital admission {hadm_id} of patient {subject_id}.",
        ),
        gold_sql="SELECT d.long_title FROM " + IN_ADMISSION,
        evidence_sql="SELECT 'procedures_icd', x.row_id FROM " + IN_ADMISSION, notes="by title"),
    Template(
        id="proc_icd_count_in_admission", intent=PROC, level=Level.PATIENT, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots=ADMISSION_SLOTS, unit="procedures", decimals=0,
        sampler="SELECT subject_id, hadm_id FROM admissions",
        paraphrases=(
            "How many ICD procedure codes were recorded for admission {hadm_id} of patient {subject_id}?",
            "Count the coded procedures of patient {subject_id} in hospital admission {hadm_id}.",
        ),
        gold_sql=("SELECT count(*) FROM procedures_icd AS x WHERE x.subject_id = {subject_id} "
                  "AND x.hadm_id = {hadm_id}"),
        evidence_sql=("SELECT 'procedures_icd', x.row_id FROM procedures_icd AS x WHERE x.subject_id = {subject_id} "
                      "AND x.hadm_id = {hadm_id} UNION ALL " + ADMISSION_ROW + " AND NOT EXISTS (SELECT 1 FROM "
                      "procedures_icd AS x WHERE x.hadm_id = {hadm_id})"),
        notes="evidence of a zero is the admission row"),
    Template(
        id="proc_icd_first_date", intent=PROC, level=Level.PATIENT, operation=Operation.FIRST,
        answer_type=A.TIMESTAMP, slots={"subject_id": K.SUBJECT, "procedure": K.PROCEDURE},
        sampler="SELECT x.subject_id, d.long_title AS procedure FROM " + CODED,
        paraphrases=(
            "On what date did patient {subject_id} first undergo {procedure}?",
            "When was {procedure} first recorded as performed on patient {subject_id}?",
        ),
        gold_sql="SELECT min(x.chartdate) FROM " + TITLED_FOR_PATIENT,
        evidence_sql="SELECT 'procedures_icd', x.row_id FROM " + TITLED_FOR_PATIENT,
        notes=ICD_NOTES + "; procedures_icd dates have no time: the answer is that day at 00:00:00"),
    Template(
        id="proc_icd_last_in_admission", intent=PROC, level=Level.PATIENT, operation=Operation.LAST,
        answer_type=A.TEXT, slots=ADMISSION_SLOTS, sampler="SELECT subject_id, hadm_id FROM procedures_icd",
        paraphrases=(
            "Which ICD procedure was performed last (latest date) during admission {hadm_id} of patient "
            "{subject_id}?",
            "What is the most recently dated coded procedure of patient {subject_id} in admission {hadm_id}?",
        ),
        gold_sql=("SELECT DISTINCT d.long_title FROM " + IN_ADMISSION + " AND x.chartdate = (SELECT max(chartdate) "
                  "FROM procedures_icd WHERE subject_id = {subject_id} AND hadm_id = {hadm_id})"),
        evidence_sql=("SELECT 'procedures_icd', x.row_id FROM " + IN_ADMISSION + " AND x.chartdate = (SELECT "
                      "max(chartdate) FROM procedures_icd WHERE subject_id = {subject_id} AND hadm_id = {hadm_id})"),
        notes="two different procedures on the latest date are a tie and rejected"),
    Template(
        id="proc_hcpcs_in_admission", intent=PROC, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT_SET, slots=ADMISSION_SLOTS, sampler="SELECT subject_id, hadm_id FROM hcpcsevents",
        paraphrases=(
            "Which HCPCS service descriptions were billed for admission {hadm_id} of patient {subject_id}?",
            "List the billed HCPCS service descriptions of patient {subject_id}'s admission {hadm_id}.",
        ),
        gold_sql=("SELECT h.short_description FROM hcpcsevents AS h WHERE h.subject_id = {subject_id} "
                  "AND h.hadm_id = {hadm_id}"),
        evidence_sql=("SELECT 'hcpcsevents', h.row_id FROM hcpcsevents AS h WHERE h.subject_id = {subject_id} "
                      "AND h.hadm_id = {hadm_id}"),
        notes="hcpcsevents.short_description"),
    Template(
        id="proc_icu_had_event", intent=PROC, level=Level.PATIENT, operation=Operation.EXISTENCE,
        answer_type=A.BOOLEAN, slots=STAY_SLOTS,
        paraphrases=(
            "Did patient {subject_id} have a {procedure} procedure event during ICU stay {stay_id}?",
            "Was {procedure} recorded as a procedure for patient {subject_id} in ICU stay {stay_id}?",
        ),
        # ICU stays crossed with the procedure events recorded in many stays: both answers occur.
        sampler=("SELECT s.subject_id, s.stay_id, c.procedure FROM icustays AS s, (SELECT i.label AS procedure "
                 "FROM procedureevents AS e JOIN d_items AS i ON i.itemid = e.itemid WHERE " + PROCEDURE_ITEM +
                 " GROUP BY i.label ORDER BY count(DISTINCT e.stay_id) DESC, i.label LIMIT 25) AS c"),
        gold_sql="SELECT count(*) > 0 FROM " + IN_STAY,
        evidence_sql=("SELECT 'procedureevents', e.row_id FROM " + IN_STAY + " UNION ALL SELECT 'icustays', "
                      "s.row_id FROM icustays AS s WHERE s.subject_id = {subject_id} AND s.stay_id = {stay_id} AND "
                      "NOT EXISTS (SELECT 1 FROM " + IN_STAY + ")"),
        notes=ICU_NOTES + "; evidence of a 'no' is the ICU stay row"),
    Template(
        id="proc_icu_event_count", intent=PROC, level=Level.PATIENT, operation=Operation.COUNT, answer_type=A.NUMBER,
        slots=STAY_SLOTS, unit="events", decimals=0, sampler=EVENT_SAMPLER,
        paraphrases=(
            "How many {procedure} procedure events were recorded for patient {subject_id} in ICU stay {stay_id}?",
            "Count the {procedure} events of patient {subject_id} during ICU stay {stay_id}.",
        ),
        gold_sql="SELECT count(*) FROM " + IN_STAY,
        evidence_sql="SELECT 'procedureevents', e.row_id FROM " + IN_STAY, notes=ICU_NOTES),
    Template(
        id="proc_icu_first_start", intent=PROC, level=Level.PATIENT, operation=Operation.FIRST,
        answer_type=A.TIMESTAMP, slots=STAY_SLOTS, sampler=EVENT_SAMPLER,
        paraphrases=(
            "When did the first {procedure} of patient {subject_id} start during ICU stay {stay_id}?",
            "At what time was {procedure} first started for patient {subject_id} in ICU stay {stay_id}?",
        ),
        gold_sql="SELECT min(e.starttime) FROM " + IN_STAY,
        evidence_sql="SELECT 'procedureevents', e.row_id FROM " + FIRST_IN_STAY, notes=ICU_NOTES),
    Template(
        id="proc_icu_first_duration", intent=PROC, level=Level.PATIENT, operation=Operation.FIRST,
        answer_type=A.NUMBER, slots=STAY_SLOTS, unit="hours", decimals=2,
        sampler=TIMED_EVENT_SAMPLER,
        paraphrases=(
            "How many hours did the first {procedure} of patient {subject_id} in ICU stay {stay_id} last?",
            "What was the duration in hours of patient {subject_id}'s earliest {procedure} during ICU stay "
            "{stay_id}?",
        ),
        gold_sql=f"SELECT {HOURS} FROM " + FIRST_IN_STAY,
        evidence_sql="SELECT 'procedureevents', e.row_id FROM " + FIRST_IN_STAY,
        guards=(Guard("point_events", "SELECT count(*) > 0 FROM " + IN_STAY + " AND " + POINT_EVENTS),),
        notes=ICU_NOTES + "; duration = endtime - starttime; two events starting together are a tie and rejected"),
    Template(
        id="proc_icu_events_before_first", intent=PROC, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT_SET, slots=STAY_SLOTS, sampler=EVENT_SAMPLER,
        paraphrases=(
            "Which other ICU procedure events did patient {subject_id} have in ICU stay {stay_id} before the first "
            "{procedure} started?",
            "Before the first {procedure} of ICU stay {stay_id}, which procedure events had been started for "
            "patient {subject_id}?",
        ),
        gold_sql=("SELECT DISTINCT i.label FROM procedureevents AS e JOIN d_items AS i ON i.itemid = e.itemid "
                  "WHERE e.subject_id = {subject_id} AND e.stay_id = {stay_id} AND e.starttime < " + FIRST_START),
        evidence_sql=("SELECT 'procedureevents', e.row_id FROM procedureevents AS e WHERE e.subject_id = {subject_id} "
                      "AND e.stay_id = {stay_id} AND e.starttime < " + FIRST_START),
        notes=ICU_NOTES + "; window: the stay's events started strictly before the named procedure first started"),
    # ------------------------------------------------------------ population
    Template(
        id="proc_pop_patients_with_icd_procedure", intent=PROC, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"procedure": K.PROCEDURE}, unit="patients", decimals=0,
        sampler="SELECT d.long_title AS procedure FROM " + CODED,
        paraphrases=(
            "How many patients underwent {procedure}?",
            "Count the patients with a coded procedure of {procedure}.",
        ),
        gold_sql="SELECT count(DISTINCT x.subject_id) FROM " + TITLED,
        evidence_sql="SELECT 'procedures_icd', x.row_id FROM " + TITLED, notes=ICD_NOTES),
    Template(
        id="proc_pop_stays_with_event_in_unit", intent=PROC, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"careunit": K.CATEGORY, "procedure": K.PROCEDURE}, unit="ICU stays",
        decimals=0,
        sampler=("SELECT s.first_careunit AS careunit, i.label AS procedure FROM procedureevents AS e "
                 "JOIN icustays AS s ON s.stay_id = e.stay_id JOIN d_items AS i ON i.itemid = e.itemid WHERE "
                 + PROCEDURE_ITEM),
        paraphrases=(
            "How many ICU stays that began in the {careunit} had at least one {procedure} event?",
            "Count the {careunit} ICU stays (by first care unit) with a {procedure} procedure event.",
        ),
        gold_sql="SELECT count(DISTINCT e.stay_id) FROM " + NAMED_IN_UNIT,
        evidence_sql="SELECT 'procedureevents', e.row_id FROM " + NAMED_IN_UNIT,
        notes=ICU_NOTES + "; stays by icustays.first_careunit"),
    Template(
        id="proc_pop_top_icu_events_in_unit", intent=PROC, level=Level.POPULATION, operation=Operation.TOP_N,
        answer_type=A.TEXT_RANKED, slots={"careunit": K.CATEGORY, "top_n": K.NUMBER},
        sampler=("SELECT s.first_careunit AS careunit, n.top_n FROM icustays AS s, (VALUES (2), (3)) AS n(top_n)"),
        paraphrases=(
            "Which {top_n} ICU procedure events were recorded in the most ICU stays that began in the {careunit}, "
            "most frequent first?",
            "Rank the top {top_n} procedure events of {careunit} ICU stays by number of stays.",
        ),
        gold_sql=("SELECT i.label, rank() OVER (ORDER BY count(DISTINCT e.stay_id) DESC) AS rnk FROM "
                  "procedureevents AS e JOIN d_items AS i ON i.itemid = e.itemid JOIN icustays AS s "
                  "ON s.stay_id = e.stay_id WHERE s.first_careunit = {careunit} GROUP BY i.label "
                  "QUALIFY rnk <= {top_n}"),
        evidence_sql="SELECT 'procedureevents', e.row_id FROM " + UNIT_STAYS_WITH,
        guards=(Guard("fewer_than_n_events", "SELECT count(DISTINCT e.itemid) < {top_n} FROM " + UNIT_STAYS_WITH),),
        notes=ICU_NOTES + "; ranked by stays; ties inside the top N or at its cut are rejected"),
    Template(
        id="proc_pop_mean_event_duration", intent=PROC, level=Level.POPULATION, operation=Operation.MEAN,
        answer_type=A.NUMBER, slots={"procedure": K.PROCEDURE}, unit="hours", decimals=2,
        sampler=("SELECT i.label AS procedure FROM procedureevents AS e JOIN d_items AS i ON i.itemid = e.itemid "
                 "WHERE " + TIMED_ITEM),
        paraphrases=(
            "What is the mean duration in hours of {procedure} procedure events across all ICU stays?",
            "On average, how many hours does a recorded {procedure} event last?",
        ),
        gold_sql=f"SELECT avg({HOURS}) FROM " + NAMED,
        evidence_sql="SELECT 'procedureevents', e.row_id FROM " + NAMED,
        guards=(Guard("untimed_events", "SELECT count(*) > count(" + HOURS + ") FROM " + NAMED),
                Guard("point_events", "SELECT count(*) > 0 FROM " + NAMED + " AND " + POINT_EVENTS)),
        notes=ICU_NOTES + "; duration = endtime - starttime"),
)
