"""Demographics and encounters: age, gender, admissions, admission type, length of stay, transfers,
ICU stays, discharge location, death.

Age at an admission is MIMIC-IV's shifted age: ``anchor_age + year(admittime) - anchor_year``.
Care units are the ``transfers.careunit`` names; ICU stays start in ``icustays.first_careunit``.
"""

from pipeline.templates.registry import register
from pipeline.templates.template import Guard, Measure, Template
from pipeline.vocabulary import AnswerType as A
from pipeline.vocabulary import Intent, Level, Operation
from pipeline.vocabulary import SlotKind as K

DEM = Intent.DEMOGRAPHICS_ENCOUNTERS
ADMISSION = "admissions AS a WHERE a.subject_id = {subject_id} AND a.hadm_id = {hadm_id}"
ADMISSION_SLOTS = {"subject_id": K.SUBJECT, "hadm_id": K.ADMISSION}
ADMISSION_ROW = "SELECT 'admissions', a.row_id FROM " + ADMISSION
ADMISSION_SAMPLER = "SELECT subject_id, hadm_id FROM admissions"
STAY = "icustays AS i WHERE i.subject_id = {subject_id} AND i.stay_id = {stay_id}"
STAY_SLOTS = {"subject_id": K.SUBJECT, "stay_id": K.ICU_STAY}
AGE = "p.anchor_age + (year(a.admittime) - p.anchor_year)"
# MIMIC-IV writes one anchor_age, 91, for every patient older than 89 (de-identification): an age read from
# it is a floor, not the patient's age, and a question about it has no answer the record supports.
AGE_CAP = 91
# Transfers of an admission that place the patient in a unit (discharge rows have no unit).
STAYS_IN_UNITS = ("transfers AS t WHERE t.subject_id = {subject_id} AND t.hadm_id = {hadm_id} "
                  "AND t.eventtype <> 'discharge'")
TYPE_ADMISSIONS = "admissions AS a WHERE a.admission_type = {admission_type}"
UNIT_STAYS = "icustays AS i WHERE i.first_careunit = {careunit}"

register(
    Template(
        id="dem_age_at_admission", intent=DEM, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.NUMBER, slots=ADMISSION_SLOTS, unit="years", decimals=0, sampler=ADMISSION_SAMPLER,
        paraphrases=(
            "How old was patient {subject_id} at hospital admission {hadm_id}?",
            "What was the age of patient {subject_id} when admitted for admission {hadm_id}?",
        ),
        gold_sql=(f"SELECT {AGE} FROM patients AS p JOIN admissions AS a ON a.subject_id = p.subject_id "
                  "WHERE a.subject_id = {subject_id} AND a.hadm_id = {hadm_id}"),
        evidence_sql=("SELECT 'patients', p.row_id FROM patients AS p WHERE p.subject_id = {subject_id} "
                      "UNION ALL " + ADMISSION_ROW),
        measure=Measure("patients", "anchor_age", None),
        guards=(Guard("capped_age", f"SELECT bool_or(p.anchor_age >= {AGE_CAP}) FROM patients AS p "
                                    "WHERE p.subject_id = {subject_id}"),),
        notes=f"age = anchor_age + year(admittime) - anchor_year (MIMIC-IV's shifted ages); patients whose "
              f"anchor_age is the cap ({AGE_CAP}, every age over 89) are left out"),
    Template(
        id="dem_gender", intent=DEM, level=Level.PATIENT, operation=Operation.RETRIEVAL, answer_type=A.TEXT,
        slots={"subject_id": K.SUBJECT}, sampler="SELECT subject_id FROM patients",
        paraphrases=(
            "What is the recorded gender of patient {subject_id}?",
            "Which gender is documented for patient {subject_id}?",
        ),
        gold_sql="SELECT p.gender FROM patients AS p WHERE p.subject_id = {subject_id}",
        evidence_sql="SELECT 'patients', p.row_id FROM patients AS p WHERE p.subject_id = {subject_id}"),
    Template(
        id="dem_admission_count", intent=DEM, level=Level.PATIENT, operation=Operation.COUNT, answer_type=A.NUMBER,
        slots={"subject_id": K.SUBJECT}, unit="admissions", decimals=0, sampler="SELECT subject_id FROM patients",
        paraphrases=(
            "How many hospital admissions does patient {subject_id} have?",
            "Count the hospital admissions recorded for patient {subject_id}.",
        ),
        gold_sql="SELECT count(*) FROM admissions AS a WHERE a.subject_id = {subject_id}",
        evidence_sql=("SELECT 'admissions', a.row_id FROM admissions AS a WHERE a.subject_id = {subject_id} "
                      "UNION ALL SELECT 'patients', p.row_id FROM patients AS p WHERE p.subject_id = {subject_id} "
                      "AND NOT EXISTS (SELECT 1 FROM admissions AS a WHERE a.subject_id = {subject_id})")),
    Template(
        id="dem_admission_type", intent=DEM, level=Level.PATIENT, operation=Operation.RETRIEVAL, answer_type=A.TEXT,
        slots=ADMISSION_SLOTS, sampler=ADMISSION_SAMPLER,
        paraphrases=(
            "What was the admission type of hospital admission {hadm_id} of patient {subject_id}?",
            "Patient {subject_id} was admitted in admission {hadm_id}: what type of admission was it?",
        ),
        gold_sql="SELECT a.admission_type FROM " + ADMISSION, evidence_sql=ADMISSION_ROW),
    Template(
        id="dem_length_of_stay", intent=DEM, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.NUMBER, slots=ADMISSION_SLOTS, unit="days", decimals=2, sampler=ADMISSION_SAMPLER,
        paraphrases=(
            "How many days did hospital admission {hadm_id} of patient {subject_id} last, from admission to "
            "discharge?",
            "What was the length of stay in days of patient {subject_id}'s admission {hadm_id}?",
        ),
        gold_sql="SELECT date_diff('second', a.admittime, a.dischtime) / 86400.0 FROM " + ADMISSION,
        evidence_sql=ADMISSION_ROW, measure=Measure("admissions", "dischtime", None),
        notes="days between admittime and dischtime, to two decimals"),
    Template(
        id="dem_discharge_location", intent=DEM, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT, slots=ADMISSION_SLOTS, sampler=ADMISSION_SAMPLER,
        paraphrases=(
            "Where was patient {subject_id} discharged to at the end of admission {hadm_id}?",
            "What discharge location is recorded for admission {hadm_id} of patient {subject_id}?",
        ),
        gold_sql="SELECT a.discharge_location FROM " + ADMISSION, evidence_sql=ADMISSION_ROW),
    Template(
        id="dem_died_in_hospital", intent=DEM, level=Level.PATIENT, operation=Operation.EXISTENCE,
        answer_type=A.BOOLEAN, slots=ADMISSION_SLOTS, sampler=ADMISSION_SAMPLER,
        paraphrases=(
            "Did patient {subject_id} die in hospital during admission {hadm_id}?",
            "Was admission {hadm_id} of patient {subject_id} ended by the patient's death in hospital?",
        ),
        gold_sql="SELECT a.hospital_expire_flag = 1 FROM " + ADMISSION, evidence_sql=ADMISSION_ROW,
        notes="hospital_expire_flag"),
    Template(
        id="dem_icu_stay_count", intent=DEM, level=Level.PATIENT, operation=Operation.COUNT, answer_type=A.NUMBER,
        slots=ADMISSION_SLOTS, unit="ICU stays", decimals=0, sampler=ADMISSION_SAMPLER,
        paraphrases=(
            "How many ICU stays did patient {subject_id} have during hospital admission {hadm_id}?",
            "Count the intensive care unit stays of patient {subject_id} in admission {hadm_id}.",
        ),
        gold_sql="SELECT count(*) FROM icustays AS i WHERE i.subject_id = {subject_id} AND i.hadm_id = {hadm_id}",
        evidence_sql=("SELECT 'icustays', i.row_id FROM icustays AS i WHERE i.subject_id = {subject_id} "
                      "AND i.hadm_id = {hadm_id} UNION ALL " + ADMISSION_ROW +
                      " AND NOT EXISTS (SELECT 1 FROM icustays AS i WHERE i.hadm_id = {hadm_id})")),
    Template(
        id="dem_transfer_count", intent=DEM, level=Level.PATIENT, operation=Operation.COUNT, answer_type=A.NUMBER,
        slots=ADMISSION_SLOTS, unit="transfers", decimals=0, sampler=ADMISSION_SAMPLER,
        paraphrases=(
            "How many times was patient {subject_id} transferred between units during admission {hadm_id}?",
            "Count the within-hospital transfers of patient {subject_id} in admission {hadm_id}.",
        ),
        gold_sql=("SELECT count(*) FROM transfers AS t WHERE t.subject_id = {subject_id} AND t.hadm_id = {hadm_id} "
                  "AND t.eventtype = 'transfer'"),
        evidence_sql=("SELECT 'transfers', t.row_id FROM transfers AS t WHERE t.subject_id = {subject_id} "
                      "AND t.hadm_id = {hadm_id} AND t.eventtype = 'transfer' UNION ALL " + ADMISSION_ROW +
                      " AND NOT EXISTS (SELECT 1 FROM transfers AS t WHERE t.hadm_id = {hadm_id} "
                      "AND t.eventtype = 'transfer')"),
        guards=(Guard("untyped_transfers", "SELECT count(*) > count(t.eventtype) FROM transfers AS t "
                                           "WHERE t.hadm_id = {hadm_id}"),
                # "Transferred between units" also reads as changes of unit: a move to another bed of the same
                # unit would make the two readings differ.
                Guard("move_within_a_unit", "SELECT count(*) > 0 FROM transfers AS t JOIN transfers AS b "
                                            "ON b.hadm_id = t.hadm_id AND b.outtime = t.intime "
                                            "WHERE t.hadm_id = {hadm_id} AND t.eventtype = 'transfer' "
                                            "AND b.careunit IS NOT DISTINCT FROM t.careunit")),
        notes="transfers rows with eventtype 'transfer' (not admit, ED or discharge); an admission with a move "
              "within one unit is left out"),
    Template(
        id="dem_care_units_visited", intent=DEM, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT_SET, slots=ADMISSION_SLOTS,
        sampler="SELECT subject_id, hadm_id FROM transfers WHERE hadm_id IS NOT NULL",
        paraphrases=(
            "In which care units did patient {subject_id} stay during admission {hadm_id}?",
            "List the hospital units patient {subject_id} passed through in admission {hadm_id}.",
        ),
        gold_sql="SELECT t.careunit FROM " + STAYS_IN_UNITS,
        evidence_sql="SELECT 'transfers', t.row_id FROM " + STAYS_IN_UNITS,
        guards=(Guard("untyped_transfers", "SELECT count(*) > count(t.eventtype) FROM transfers AS t "
                                           "WHERE t.hadm_id = {hadm_id}"),),
        notes="transfers.careunit of every non-discharge event; a unit left unnamed rejects the filling"),
    Template(
        id="dem_first_icu_unit", intent=DEM, level=Level.PATIENT, operation=Operation.RETRIEVAL, answer_type=A.TEXT,
        slots=STAY_SLOTS, sampler="SELECT subject_id, stay_id FROM icustays",
        paraphrases=(
            "In which care unit did ICU stay {stay_id} of patient {subject_id} begin?",
            "What was the first care unit of patient {subject_id}'s ICU stay {stay_id}?",
        ),
        gold_sql="SELECT i.first_careunit FROM " + STAY,
        evidence_sql="SELECT 'icustays', i.row_id FROM " + STAY),
    Template(
        id="dem_icu_length_of_stay", intent=DEM, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.NUMBER, slots=STAY_SLOTS, unit="hours", decimals=1,
        sampler="SELECT subject_id, stay_id FROM icustays",
        paraphrases=(
            "How many hours did ICU stay {stay_id} of patient {subject_id} last?",
            "What was the duration in hours of patient {subject_id}'s ICU stay {stay_id}, from ICU admission to "
            "ICU discharge?",
        ),
        gold_sql="SELECT date_diff('second', i.intime, i.outtime) / 3600.0 FROM " + STAY,
        evidence_sql="SELECT 'icustays', i.row_id FROM " + STAY, measure=Measure("icustays", "outtime", None),
        notes="hours between icustays.intime and outtime, to one decimal"),
    Template(
        id="dem_last_admission_time", intent=DEM, level=Level.PATIENT, operation=Operation.LAST,
        answer_type=A.TIMESTAMP, slots={"subject_id": K.SUBJECT}, sampler="SELECT subject_id FROM admissions",
        paraphrases=(
            "When was patient {subject_id} most recently admitted to hospital?",
            "What is the admission time of patient {subject_id}'s latest hospital admission?",
        ),
        gold_sql="SELECT max(a.admittime) FROM admissions AS a WHERE a.subject_id = {subject_id}",
        evidence_sql=("SELECT 'admissions', a.row_id FROM admissions AS a WHERE a.subject_id = {subject_id} "
                      "AND a.admittime = (SELECT max(admittime) FROM admissions WHERE subject_id = {subject_id})")),
    Template(
        id="dem_first_icu_admission_time", intent=DEM, level=Level.PATIENT, operation=Operation.FIRST,
        answer_type=A.TIMESTAMP, slots={"subject_id": K.SUBJECT}, sampler="SELECT subject_id FROM icustays",
        paraphrases=(
            "When was patient {subject_id} first admitted to an intensive care unit?",
            "What was the ICU admission time of patient {subject_id}'s first ICU stay?",
        ),
        gold_sql="SELECT min(i.intime) FROM icustays AS i WHERE i.subject_id = {subject_id}",
        evidence_sql=("SELECT 'icustays', i.row_id FROM icustays AS i WHERE i.subject_id = {subject_id} "
                      "AND i.intime = (SELECT min(intime) FROM icustays WHERE subject_id = {subject_id})"),
        guards=(Guard("untimed_icu_stays", "SELECT count(*) > count(i.intime) FROM icustays AS i "
                                           "WHERE i.subject_id = {subject_id}"),)),
    # ------------------------------------------------------------ population
    Template(
        id="dem_pop_admissions_of_type", intent=DEM, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"admission_type": K.CATEGORY}, unit="admissions", decimals=0,
        sampler="SELECT admission_type FROM admissions",
        paraphrases=(
            "How many hospital admissions were of type {admission_type}?",
            "Count the admissions whose admission type is {admission_type}.",
        ),
        gold_sql="SELECT count(*) FROM " + TYPE_ADMISSIONS,
        evidence_sql="SELECT 'admissions', a.row_id FROM " + TYPE_ADMISSIONS),
    Template(
        id="dem_pop_mean_age_by_admission_type", intent=DEM, level=Level.POPULATION, operation=Operation.MEAN,
        answer_type=A.NUMBER, slots={"admission_type": K.CATEGORY}, unit="years", decimals=1,
        sampler="SELECT admission_type FROM admissions",
        paraphrases=(
            "What was the average age at admission over all {admission_type} admissions?",
            "Across admissions of type {admission_type}, what is the mean patient age at admission?",
        ),
        gold_sql=(f"SELECT avg({AGE}) FROM admissions AS a JOIN patients AS p ON p.subject_id = a.subject_id "
                  "WHERE a.admission_type = {admission_type}"),
        evidence_sql=("SELECT 'admissions', a.row_id FROM " + TYPE_ADMISSIONS + " UNION ALL SELECT 'patients', "
                      "p.row_id FROM patients AS p WHERE p.subject_id IN (SELECT a.subject_id FROM "
                      + TYPE_ADMISSIONS + ")"),
        guards=(Guard("unknown_ages", "SELECT count(*) > count(p.anchor_age) FROM admissions AS a JOIN patients AS p "
                                      "ON p.subject_id = a.subject_id WHERE a.admission_type = {admission_type}"),
                Guard("capped_ages", f"SELECT bool_or(p.anchor_age >= {AGE_CAP}) FROM admissions AS a JOIN patients "
                                     "AS p ON p.subject_id = a.subject_id WHERE a.admission_type = {admission_type}")),
        notes=f"one age per admission (a patient admitted twice counts twice); a type with a patient whose "
              f"anchor_age is the cap ({AGE_CAP}) is left out"),
    Template(
        id="dem_pop_top_discharge_locations", intent=DEM, level=Level.POPULATION, operation=Operation.TOP_N,
        answer_type=A.TEXT_RANKED, slots={"admission_type": K.CATEGORY, "top_n": K.NUMBER},
        sampler="SELECT admission_type, n.top_n FROM admissions, (VALUES (2), (3)) AS n(top_n)",
        paraphrases=(
            "What are the {top_n} most common discharge locations after {admission_type} admissions, most common "
            "first?",
            "Rank the top {top_n} discharge locations of admissions of type {admission_type} by frequency.",
        ),
        gold_sql=("SELECT a.discharge_location, rank() OVER (ORDER BY count(*) DESC) AS rnk FROM "
                  + TYPE_ADMISSIONS + " GROUP BY a.discharge_location QUALIFY rnk <= {top_n}"),
        evidence_sql="SELECT 'admissions', a.row_id FROM " + TYPE_ADMISSIONS,
        guards=(Guard("fewer_than_n_locations",
                      "SELECT count(DISTINCT a.discharge_location) < {top_n} FROM " + TYPE_ADMISSIONS),),
        notes="an admission without discharge location is a NULL the question does not mention: rejected"),
    Template(
        id="dem_pop_in_hospital_deaths", intent=DEM, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"admission_type": K.CATEGORY}, unit="admissions", decimals=0,
        sampler="SELECT admission_type FROM admissions",
        paraphrases=(
            "How many {admission_type} admissions ended with the patient's death in hospital?",
            "Count the in-hospital deaths among admissions of type {admission_type}.",
        ),
        gold_sql="SELECT count(*) FILTER (WHERE a.hospital_expire_flag = 1) FROM " + TYPE_ADMISSIONS,
        evidence_sql="SELECT 'admissions', a.row_id FROM " + TYPE_ADMISSIONS,
        guards=(Guard("unknown_outcomes", "SELECT count(*) > count(a.hospital_expire_flag) FROM " + TYPE_ADMISSIONS),),
        notes="hospital_expire_flag = 1"),
    Template(
        id="dem_pop_icu_stays_in_unit", intent=DEM, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"careunit": K.CATEGORY}, unit="ICU stays", decimals=0,
        sampler="SELECT first_careunit AS careunit FROM icustays",
        paraphrases=(
            "How many ICU stays began in the {careunit}?",
            "Count the intensive care stays whose first care unit was {careunit}.",
        ),
        gold_sql="SELECT count(*) FROM " + UNIT_STAYS,
        evidence_sql="SELECT 'icustays', i.row_id FROM " + UNIT_STAYS),
    Template(
        id="dem_pop_mean_icu_los_in_unit", intent=DEM, level=Level.POPULATION, operation=Operation.MEAN,
        answer_type=A.NUMBER, slots={"careunit": K.CATEGORY}, unit="days", decimals=2,
        sampler="SELECT first_careunit AS careunit FROM icustays",
        paraphrases=(
            "What is the mean ICU length of stay in days of stays that began in the {careunit}?",
            "On average, how many days did ICU stays starting in {careunit} last?",
        ),
        gold_sql="SELECT avg(i.los) FROM " + UNIT_STAYS,
        # The error is keyed in the end time and the length follows (row_consistency): los is computed, so
        # no digit of it is ever keyed wrong (a sign slip in it moved the end time to the year 4913).
        evidence_sql="SELECT 'icustays', i.row_id FROM " + UNIT_STAYS, measure=Measure("icustays", "outtime", None),
        guards=(Guard("unknown_lengths", "SELECT count(*) > count(i.los) FROM " + UNIT_STAYS),),
        notes="icustays.los (fractional days)"),
    Template(
        id="dem_pop_patients_older_than", intent=DEM, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"gender": K.CATEGORY, "age": K.NUMBER}, unit="patients", decimals=0,
        sampler="SELECT gender, n.age FROM patients, (VALUES (40), (50), (60), (65), (70), (75), (80)) AS n(age)",
        paraphrases=(
            "How many patients of gender {gender} were older than {age} years at their first hospital admission?",
            "Count the {gender} patients aged over {age} when first admitted to hospital.",
        ),
        gold_sql=(f"SELECT count(DISTINCT p.subject_id) FROM patients AS p JOIN admissions AS a ON a.subject_id = "
                  f"p.subject_id WHERE p.gender = {{gender}} AND a.admittime = (SELECT min(admittime) FROM admissions "
                  f"WHERE subject_id = p.subject_id) AND {AGE} > {{age}}"),
        evidence_sql="SELECT 'patients', p.row_id FROM patients AS p WHERE p.gender = {gender}",
        guards=(Guard("unknown_ages", "SELECT count(*) > count(p.anchor_age) FROM patients AS p "
                                      "WHERE p.gender = {gender}"),),
        notes="age at the earliest admission; gender is patients.gender ('F' or 'M')"),
)
