"""Laboratory: blood lab results (values, units, abnormal flags) and microbiology.

A lab is named by its ``d_labitems.label`` and the question says "blood": the name resolves to
every blood item carrying that label (MIMIC-IV lists some tests twice, e.g. two blood "Sodium"
items from two lab systems), and their results are combined. A filling is rejected when the
combined results carry more than one unit. Non-numeric results (``valuenum`` NULL, e.g. "<0.01")
are rows the question does not mention: aggregates reject fillings that have any.
"""

from pipeline.templates.registry import register
from pipeline.templates.template import Guard, Measure, Template
from pipeline.vocabulary import AnswerType as A
from pipeline.vocabulary import Intent, Level, Operation
from pipeline.vocabulary import SlotKind as K

LAB = Intent.LABORATORY
# Name resolution is a join, not an IN (subquery): the engine evaluates many fillings at once, and
# DuckDB decorrelates a join on the slot far better than a correlated IN.
NAMED = "labevents AS l JOIN d_labitems AS d ON d.itemid = l.itemid WHERE d.label = {lab} AND d.fluid = 'Blood'"
# Results of the named blood test for one patient's admission.
IN_ADMISSION = NAMED + " AND l.subject_id = {subject_id} AND l.hadm_id = {hadm_id}"
ADMISSION_SLOTS = {"subject_id": K.SUBJECT, "hadm_id": K.ADMISSION, "lab": K.LAB_ITEM}
MEASURE = Measure("labevents", "valuenum", "valueuom")
# Fillings: a patient's admission and a blood test with a numeric result in it.
NUMERIC_SAMPLER = ("SELECT l.subject_id, l.hadm_id, d.label AS lab FROM labevents AS l "
                   "JOIN d_labitems AS d ON d.itemid = l.itemid "
                   "WHERE d.fluid = 'Blood' AND l.hadm_id IS NOT NULL AND l.valuenum IS NOT NULL")
NO_NULL_VALUES = Guard("non_numeric_results", "SELECT count(*) > count(l.valuenum) FROM " + IN_ADMISSION)
NO_NULL_TIMES = Guard("untimed_results", "SELECT count(*) > count(l.charttime) FROM " + IN_ADMISSION)
NOTES = "the lab name resolves to every blood item with that label; their results are combined"


def _at_extreme(fn: str) -> str:
    """Results of the admission at the earliest (min) or latest (max) time: several rows on a tie."""
    return (IN_ADMISSION + f" AND l.charttime = (SELECT {fn}(l2.charttime) FROM labevents AS l2 JOIN d_labitems "
            "AS d2 ON d2.itemid = l2.itemid WHERE d2.label = {lab} AND d2.fluid = 'Blood' AND l2.subject_id = "
            "{subject_id} AND l2.hadm_id = {hadm_id})")


def _aggregate(id_: str, op: Operation, expr: str, paraphrases: tuple[str, ...]) -> Template:
    return Template(
        id=id_, intent=LAB, level=Level.PATIENT, operation=op, answer_type=A.NUMBER, slots=ADMISSION_SLOTS,
        paraphrases=paraphrases, sampler=NUMERIC_SAMPLER,
        gold_sql=f"SELECT {expr} FROM " + IN_ADMISSION,
        evidence_sql="SELECT 'labevents', l.row_id FROM " + IN_ADMISSION,
        unit_sql="SELECT l.valueuom FROM " + IN_ADMISSION, measure=MEASURE,
        guards=(NO_NULL_VALUES,), notes=NOTES)


def _extreme(id_: str, op: Operation, fn: str, paraphrases: tuple[str, ...]) -> Template:
    return Template(
        id=id_, intent=LAB, level=Level.PATIENT, operation=op, answer_type=A.NUMBER, slots=ADMISSION_SLOTS,
        paraphrases=paraphrases, sampler=NUMERIC_SAMPLER,
        gold_sql="SELECT l.valuenum FROM " + _at_extreme(fn),
        evidence_sql="SELECT 'labevents', l.row_id FROM " + _at_extreme(fn),
        unit_sql="SELECT l.valueuom FROM " + _at_extreme(fn), measure=MEASURE,
        guards=(NO_NULL_TIMES,), notes=NOTES + "; a tie at the first/last time is rejected")


WINDOW_24H = (" AND l.charttime >= (SELECT admittime FROM admissions WHERE hadm_id = {hadm_id}) "
              "AND l.charttime < (SELECT admittime FROM admissions WHERE hadm_id = {hadm_id}) + INTERVAL 24 HOUR")
IN_WINDOW = NAMED + " AND l.subject_id = {subject_id} AND l.charttime >= {start_time} AND l.charttime < {end_time}"
# A culture grew an organism: org_name holds one. MIMIC-IV also writes a cancelled test ("CANCELLED")
# and the result of a PCR or antigen test ("POSITIVE", "POSITIVE FOR INFLUENZA A VIRAL ANTIGEN") there:
# no organism grew, and a careful reader would not list them as one.
def grew(alias: str = "") -> str:
    a = f"{alias}." if alias else ""
    return (f"{a}org_name IS NOT NULL AND {a}org_name <> 'CANCELLED' AND {a}org_name NOT LIKE 'POSITIVE%' "
            f"AND {a}org_name NOT LIKE 'NEGATIVE%'")


MICRO_SCOPE = ("microbiologyevents AS m WHERE m.subject_id = {subject_id} AND m.hadm_id = {hadm_id} "
               "AND m.spec_type_desc = {specimen}")
MICRO_SLOTS = {"subject_id": K.SUBJECT, "hadm_id": K.ADMISSION, "specimen": K.CATEGORY}
MICRO_SAMPLER = ("SELECT subject_id, hadm_id, spec_type_desc AS specimen FROM microbiologyevents "
                 "WHERE hadm_id IS NOT NULL")
POP_LAB_ROWS = ("labevents AS l JOIN d_labitems AS d ON d.itemid = l.itemid JOIN patients AS p ON p.subject_id = "
                "l.subject_id WHERE d.label = {lab} AND d.fluid = 'Blood' AND p.gender = {gender}")
POP_ADMISSION_ROWS = ("labevents AS l JOIN d_labitems AS d ON d.itemid = l.itemid JOIN admissions AS a ON a.hadm_id = "
                      "l.hadm_id WHERE d.label = {lab} AND d.fluid = 'Blood' AND a.admission_type = {admission_type}")

register(
    _extreme("lab_last_value", Operation.LAST, "max", (
        "What was the last blood {lab} result of patient {subject_id} during admission {hadm_id}?",
        "For patient {subject_id}, admission {hadm_id}: what was the most recent blood {lab} value?",
        "Give the latest blood {lab} measured for patient {subject_id} in hospital admission {hadm_id}.",
    )),
    _extreme("lab_first_value", Operation.FIRST, "min", (
        "What was the first blood {lab} result of patient {subject_id} during admission {hadm_id}?",
        "For patient {subject_id}, what was the earliest blood {lab} value recorded in admission {hadm_id}?",
    )),
    _aggregate("lab_max_value", Operation.MAX, "max(l.valuenum)", (
        "What was the highest blood {lab} of patient {subject_id} during admission {hadm_id}?",
        "During hospital admission {hadm_id}, what was the peak blood {lab} value of patient {subject_id}?",
    )),
    _aggregate("lab_min_value", Operation.MIN, "min(l.valuenum)", (
        "What was the lowest blood {lab} of patient {subject_id} during admission {hadm_id}?",
        "During hospital admission {hadm_id}, what was the minimum blood {lab} value of patient {subject_id}?",
    )),
    _aggregate("lab_mean_value", Operation.MEAN, "avg(l.valuenum)", (
        "What was the average blood {lab} of patient {subject_id} over admission {hadm_id}?",
        "Across all blood {lab} results of patient {subject_id} in admission {hadm_id}, what is the mean value?",
    )),
    Template(
        id="lab_change_first_to_last", intent=LAB, level=Level.PATIENT, operation=Operation.CHANGE,
        answer_type=A.NUMBER, slots=ADMISSION_SLOTS, sampler=NUMERIC_SAMPLER,
        paraphrases=(
            "By how much did patient {subject_id}'s blood {lab} change from the first to the last result of "
            "admission {hadm_id} (last minus first)?",
            "In admission {hadm_id}, what is the last blood {lab} value of patient {subject_id} minus the first one?",
        ),
        gold_sql=("SELECT last_r.valuenum - first_r.valuenum FROM (SELECT l.valuenum FROM " + _at_extreme("max") +
                  ") AS last_r, (SELECT l.valuenum FROM " + _at_extreme("min") + ") AS first_r"),
        evidence_sql=("SELECT 'labevents', l.row_id FROM " + _at_extreme("max") +
                      " UNION ALL SELECT 'labevents', l.row_id FROM " + _at_extreme("min")),
        unit_sql=("SELECT l.valueuom FROM " + _at_extreme("max") + " UNION ALL SELECT l.valueuom FROM " +
                  _at_extreme("min")),
        measure=MEASURE,
        guards=(NO_NULL_TIMES, Guard("single_result_time",
                                     "SELECT count(DISTINCT l.charttime) < 2 FROM " + IN_ADMISSION)),
        notes=NOTES + "; needs results at two or more times; ties at either end are rejected"),
    Template(
        id="lab_abnormal_count", intent=LAB, level=Level.PATIENT, operation=Operation.COUNT, answer_type=A.NUMBER,
        slots=ADMISSION_SLOTS, unit="results", decimals=0,
        paraphrases=(
            "How many blood {lab} results of patient {subject_id} were flagged abnormal during admission {hadm_id}?",
            "Count the abnormal-flagged blood {lab} results for patient {subject_id} in admission {hadm_id}.",
        ),
        sampler=("SELECT l.subject_id, l.hadm_id, d.label AS lab FROM labevents AS l "
                 "JOIN d_labitems AS d ON d.itemid = l.itemid WHERE d.fluid = 'Blood' AND l.hadm_id IS NOT NULL"),
        gold_sql="SELECT count(*) FILTER (WHERE l.flag = 'abnormal') FROM " + IN_ADMISSION,
        evidence_sql="SELECT 'labevents', l.row_id FROM " + IN_ADMISSION,
        notes=NOTES + "; an unflagged result counts as not abnormal"),
    Template(
        id="lab_tested_in_admission", intent=LAB, level=Level.PATIENT, operation=Operation.EXISTENCE,
        answer_type=A.BOOLEAN, slots=ADMISSION_SLOTS,
        paraphrases=(
            "Was a blood {lab} test done for patient {subject_id} during admission {hadm_id}?",
            "Does admission {hadm_id} of patient {subject_id} have any blood {lab} result?",
        ),
        # Admissions crossed with the blood tests done in many admissions: both answers occur.
        sampler=("SELECT a.subject_id, a.hadm_id, c.label AS lab FROM admissions AS a, "
                 "(SELECT d.label FROM labevents AS l JOIN d_labitems AS d ON d.itemid = l.itemid "
                 "WHERE d.fluid = 'Blood' GROUP BY d.label ORDER BY count(DISTINCT l.hadm_id) DESC, d.label "
                 "LIMIT 40) AS c"),
        gold_sql="SELECT count(*) > 0 FROM " + IN_ADMISSION,
        evidence_sql=("SELECT 'labevents', l.row_id FROM " + IN_ADMISSION + " UNION ALL SELECT 'admissions', "
                      "a.row_id FROM admissions AS a WHERE a.hadm_id = {hadm_id} AND NOT EXISTS (SELECT 1 FROM "
                      + IN_ADMISSION + ")"),
        notes=NOTES + "; evidence of a 'no' is the admission row"),
    Template(
        id="lab_max_first_24h", intent=LAB, level=Level.PATIENT, operation=Operation.MAX, answer_type=A.NUMBER,
        slots=ADMISSION_SLOTS, sampler=NUMERIC_SAMPLER,
        paraphrases=(
            "What was the highest blood {lab} of patient {subject_id} within the first 24 hours of admission "
            "{hadm_id}?",
            "In the first 24 hours after hospital admission {hadm_id}, what was patient {subject_id}'s maximum "
            "blood {lab}?",
        ),
        gold_sql="SELECT max(l.valuenum) FROM " + IN_ADMISSION + WINDOW_24H,
        evidence_sql="SELECT 'labevents', l.row_id FROM " + IN_ADMISSION + WINDOW_24H,
        unit_sql="SELECT l.valueuom FROM " + IN_ADMISSION + WINDOW_24H, measure=MEASURE,
        guards=(Guard("non_numeric_results", "SELECT count(*) > count(l.valuenum) FROM " + IN_ADMISSION + WINDOW_24H),),
        notes=NOTES + "; window: [admittime, admittime + 24 h)"),
    Template(
        id="lab_max_in_window", intent=LAB, level=Level.PATIENT, operation=Operation.MAX, answer_type=A.NUMBER,
        slots={"subject_id": K.SUBJECT, "lab": K.LAB_ITEM, "start_time": K.TIME, "end_time": K.TIME},
        paraphrases=(
            "What was the highest blood {lab} of patient {subject_id} between {start_time} and {end_time}?",
            "From {start_time} up to {end_time}, what was the maximum blood {lab} value of patient {subject_id}?",
        ),
        # A calendar day on which the patient had the test: a window tied to the record.
        sampler=("SELECT l.subject_id, d.label AS lab, date_trunc('day', l.charttime) AS start_time, "
                 "date_trunc('day', l.charttime) + INTERVAL 1 DAY AS end_time FROM labevents AS l "
                 "JOIN d_labitems AS d ON d.itemid = l.itemid WHERE d.fluid = 'Blood' AND l.valuenum IS NOT NULL"),
        gold_sql="SELECT max(l.valuenum) FROM " + IN_WINDOW,
        evidence_sql="SELECT 'labevents', l.row_id FROM " + IN_WINDOW,
        unit_sql="SELECT l.valueuom FROM " + IN_WINDOW, measure=MEASURE,
        guards=(Guard("non_numeric_results", "SELECT count(*) > count(l.valuenum) FROM " + IN_WINDOW),),
        notes=NOTES + "; window: [start_time, end_time)"),
    Template(
        id="lab_last_draw_time", intent=LAB, level=Level.PATIENT, operation=Operation.LAST,
        answer_type=A.TIMESTAMP, slots=ADMISSION_SLOTS,
        paraphrases=(
            "When was the last blood {lab} of patient {subject_id} taken during admission {hadm_id}?",
            "At what time was patient {subject_id}'s most recent blood {lab} in admission {hadm_id} charted?",
        ),
        sampler=("SELECT l.subject_id, l.hadm_id, d.label AS lab FROM labevents AS l "
                 "JOIN d_labitems AS d ON d.itemid = l.itemid WHERE d.fluid = 'Blood' AND l.hadm_id IS NOT NULL"),
        gold_sql="SELECT max(l.charttime) FROM " + IN_ADMISSION,
        evidence_sql="SELECT 'labevents', l.row_id FROM " + _at_extreme("max"),
        guards=(NO_NULL_TIMES,), notes=NOTES),
    Template(
        id="lab_result_unit", intent=LAB, level=Level.PATIENT, operation=Operation.RETRIEVAL, answer_type=A.TEXT,
        slots=ADMISSION_SLOTS, sampler=NUMERIC_SAMPLER,
        paraphrases=(
            "In which unit were patient {subject_id}'s blood {lab} results reported during admission {hadm_id}?",
            "What unit of measurement do the blood {lab} results of patient {subject_id} in admission {hadm_id} use?",
        ),
        gold_sql="SELECT DISTINCT l.valueuom FROM " + IN_ADMISSION,
        evidence_sql="SELECT 'labevents', l.row_id FROM " + IN_ADMISSION,
        notes=NOTES + "; results in two units, or a result without unit, reject the filling"),
    Template(
        id="micro_organisms_in_specimen", intent=LAB, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT_SET, slots=MICRO_SLOTS,
        paraphrases=(
            "Which organisms grew in {specimen} specimens of patient {subject_id} during admission {hadm_id}?",
            "List the organisms isolated from patient {subject_id}'s {specimen} samples in admission {hadm_id}.",
        ),
        sampler=("SELECT subject_id, hadm_id, spec_type_desc AS specimen FROM microbiologyevents "
                 "WHERE " + grew() + " AND hadm_id IS NOT NULL"),
        gold_sql="SELECT DISTINCT m.org_name FROM " + MICRO_SCOPE + " AND " + grew("m"),
        evidence_sql="SELECT 'microbiologyevents', m.row_id FROM " + MICRO_SCOPE + " AND " + grew("m"),
        notes="specimen is microbiologyevents.spec_type_desc; a row without organism is a culture without growth"),
    Template(
        id="micro_tests_on_specimen", intent=LAB, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT_SET, slots=MICRO_SLOTS,
        paraphrases=(
            "Which microbiology tests were run on {specimen} specimens of patient {subject_id} during admission "
            "{hadm_id}?",
            "Name the microbiology tests performed on patient {subject_id}'s {specimen} samples in admission "
            "{hadm_id}.",
        ),
        sampler=MICRO_SAMPLER,
        gold_sql="SELECT DISTINCT m.test_name FROM " + MICRO_SCOPE,
        evidence_sql="SELECT 'microbiologyevents', m.row_id FROM " + MICRO_SCOPE,
        notes="specimen is microbiologyevents.spec_type_desc"),
    Template(
        id="micro_specimen_count", intent=LAB, level=Level.PATIENT, operation=Operation.COUNT, answer_type=A.NUMBER,
        slots=MICRO_SLOTS, unit="specimens", decimals=0,
        paraphrases=(
            "How many {specimen} specimens were sent to microbiology for patient {subject_id} during admission "
            "{hadm_id}?",
            "Count the distinct {specimen} microbiology specimens of patient {subject_id} in admission {hadm_id}.",
        ),
        sampler=MICRO_SAMPLER,
        gold_sql="SELECT count(DISTINCT m.micro_specimen_id) FROM " + MICRO_SCOPE,
        evidence_sql="SELECT 'microbiologyevents', m.row_id FROM " + MICRO_SCOPE,
        notes="a specimen is a distinct micro_specimen_id"),
    # ------------------------------------------------------------ population
    Template(
        id="lab_pop_mean_by_gender", intent=LAB, level=Level.POPULATION, operation=Operation.MEAN,
        answer_type=A.NUMBER, slots={"lab": K.LAB_ITEM, "gender": K.CATEGORY},
        paraphrases=(
            "What is the average blood {lab} over all results of patients whose recorded gender is {gender}?",
            "Across every blood {lab} result of gender-{gender} patients, what is the mean value?",
        ),
        sampler=("SELECT d.label AS lab, p.gender FROM labevents AS l JOIN d_labitems AS d ON d.itemid = l.itemid "
                 "JOIN patients AS p ON p.subject_id = l.subject_id "
                 "WHERE d.fluid = 'Blood' AND l.valuenum IS NOT NULL"),
        gold_sql="SELECT avg(l.valuenum) FROM " + POP_LAB_ROWS,
        evidence_sql="SELECT 'labevents', l.row_id FROM " + POP_LAB_ROWS,
        unit_sql="SELECT l.valueuom FROM " + POP_LAB_ROWS, measure=MEASURE,
        guards=(Guard("non_numeric_results", "SELECT count(*) > count(l.valuenum) FROM " + POP_LAB_ROWS),),
        notes=NOTES + "; gender is patients.gender ('F' or 'M')"),
    Template(
        id="lab_pop_max_by_admission_type", intent=LAB, level=Level.POPULATION, operation=Operation.MAX,
        answer_type=A.NUMBER, slots={"lab": K.LAB_ITEM, "admission_type": K.CATEGORY},
        paraphrases=(
            "What is the highest blood {lab} recorded in any {admission_type} admission?",
            "Among admissions of type {admission_type}, what was the maximum blood {lab} result?",
        ),
        sampler=("SELECT d.label AS lab, a.admission_type FROM labevents AS l JOIN d_labitems AS d "
                 "ON d.itemid = l.itemid JOIN admissions AS a ON a.hadm_id = l.hadm_id "
                 "WHERE d.fluid = 'Blood' AND l.valuenum IS NOT NULL"),
        gold_sql="SELECT max(l.valuenum) FROM " + POP_ADMISSION_ROWS,
        evidence_sql="SELECT 'labevents', l.row_id FROM " + POP_ADMISSION_ROWS,
        unit_sql="SELECT l.valueuom FROM " + POP_ADMISSION_ROWS, measure=MEASURE,
        guards=(Guard("non_numeric_results", "SELECT count(*) > count(l.valuenum) FROM " + POP_ADMISSION_ROWS),),
        notes=NOTES + "; results are tied to the admission by hadm_id"),
    Template(
        id="lab_pop_patients_with_abnormal", intent=LAB, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"lab": K.LAB_ITEM}, unit="patients", decimals=0,
        paraphrases=(
            "How many patients had at least one blood {lab} result flagged abnormal?",
            "Count the patients with an abnormal-flagged blood {lab} result.",
        ),
        sampler=("SELECT d.label AS lab FROM labevents AS l JOIN d_labitems AS d ON d.itemid = l.itemid "
                 "WHERE d.fluid = 'Blood' AND l.flag = 'abnormal'"),
        gold_sql="SELECT count(DISTINCT l.subject_id) FROM " + NAMED + " AND l.flag = 'abnormal'",
        evidence_sql="SELECT 'labevents', l.row_id FROM " + NAMED + " AND l.flag = 'abnormal'",
        notes=NOTES),
    Template(
        id="micro_pop_top_organisms", intent=LAB, level=Level.POPULATION, operation=Operation.TOP_N,
        answer_type=A.TEXT_RANKED, slots={"specimen": K.CATEGORY, "top_n": K.NUMBER},
        paraphrases=(
            "Which {top_n} organisms were isolated from {specimen} specimens of the most patients, most frequent "
            "first?",
            "Rank the top {top_n} organisms grown from {specimen} specimens by number of patients.",
        ),
        sampler=("SELECT spec_type_desc AS specimen, n.top_n FROM microbiologyevents, (VALUES (2), (3)) AS n(top_n) "
                 "WHERE " + grew()),
        gold_sql=("SELECT m.org_name, rank() OVER (ORDER BY count(DISTINCT m.subject_id) DESC) AS rnk "
                  "FROM microbiologyevents AS m WHERE m.spec_type_desc = {specimen} AND " + grew("m") + " "
                  "GROUP BY m.org_name QUALIFY rnk <= {top_n}"),
        evidence_sql=("SELECT 'microbiologyevents', m.row_id FROM microbiologyevents AS m "
                      "WHERE m.spec_type_desc = {specimen} AND " + grew("m")),
        guards=(Guard("fewer_than_n_organisms", "SELECT count(DISTINCT m.org_name) < {top_n} FROM microbiologyevents "
                                                "AS m WHERE m.spec_type_desc = {specimen} AND " + grew("m")),),
        notes="ranked by distinct patients; a tie inside the top N or at its cut is rejected"),
    Template(
        id="micro_pop_patients_with_organism", intent=LAB, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"organism": K.ORGANISM}, unit="patients", decimals=0,
        paraphrases=(
            "How many patients had {organism} isolated in a microbiology culture?",
            "In how many patients did a culture grow {organism}?",
        ),
        sampler="SELECT org_name AS organism FROM microbiologyevents WHERE " + grew(),
        gold_sql="SELECT count(DISTINCT m.subject_id) FROM microbiologyevents AS m WHERE m.org_name = {organism}",
        evidence_sql="SELECT 'microbiologyevents', m.row_id FROM microbiologyevents AS m WHERE m.org_name = {organism}",
        notes="organism is microbiologyevents.org_name"),
)
