"""Vitals and intake/output: charted vital signs and outputs in ICU stays (heart rate, blood pressure,
SpO2, temperature, respiratory rate, weight, urine output) and outpatient measurements (OMR).

A vital sign is named by its ``d_items.label`` and must be one of ``VITALS``, the charted signs a
clinician reads off a flowsheet; a filling is rejected when the label names more than one
``chartevents`` item. "Urine output" combines the output items listed in ``URINE_OUTPUT``, as the
MIMIC code repository's urine output concept does (irrigant volumes are left out).
"""

from pipeline.templates.registry import register
from pipeline.templates.template import Guard, Measure, Template
from pipeline.vocabulary import AnswerType as A
from pipeline.vocabulary import Intent, Level, Operation
from pipeline.vocabulary import SlotKind as K

VIT = Intent.VITALS_IO
VITALS = ("Heart Rate", "Respiratory Rate", "O2 saturation pulseoxymetry", "Non Invasive Blood Pressure systolic",
          "Non Invasive Blood Pressure diastolic", "Non Invasive Blood Pressure mean",
          "Arterial Blood Pressure systolic", "Arterial Blood Pressure diastolic", "Arterial Blood Pressure mean",
          "Temperature Fahrenheit", "Daily Weight")
URINE_OUTPUT = ("Foley", "Void", "Condom Cath", "Ileoconduit", "Suprapubic", "R Nephrostomy", "L Nephrostomy",
                "Straight Cath", "R Ureteral Stent", "L Ureteral Stent")


def _quoted(names: tuple[str, ...]) -> str:
    return ", ".join("'" + n.replace("'", "''") + "'" for n in names)


VITAL_LABELS = f"({_quoted(VITALS)})"
URINE_ITEMS = f"(SELECT itemid FROM d_items WHERE linksto = 'outputevents' AND label IN ({_quoted(URINE_OUTPUT)}))"
# Name resolution is a join, not an IN (subquery): DuckDB decorrelates a join on the slot far better
# when the engine evaluates many fillings at once.
NAMED = ("chartevents AS c JOIN d_items AS di ON di.itemid = c.itemid WHERE di.label = {vital} "
         "AND di.linksto = 'chartevents'")
IN_STAY = NAMED + " AND c.subject_id = {subject_id} AND c.stay_id = {stay_id}"
STAY_SLOTS = {"subject_id": K.SUBJECT, "stay_id": K.ICU_STAY, "vital": K.CHART_ITEM}
WITHIN_VITALS = {"vital": VITALS}  # every template whose sampler reads VITAL_LABELS
MEASURE = Measure("chartevents", "valuenum", "valueuom")
STAY_SAMPLER = ("SELECT c.subject_id, c.stay_id, i.label AS vital FROM chartevents AS c JOIN d_items AS i "
                f"ON i.itemid = c.itemid WHERE i.label IN {VITAL_LABELS} AND c.valuenum IS NOT NULL")
ONE_ITEM = Guard("item_name_ambiguous", "SELECT count(*) <> 1 FROM d_items WHERE label = {vital} "
                                        "AND linksto = 'chartevents'")
NULL_VALUES = Guard("non_numeric_values", "SELECT count(*) > count(c.valuenum) FROM " + IN_STAY)
FIRST_24H = (" AND c.charttime >= (SELECT intime FROM icustays WHERE stay_id = {stay_id}) AND c.charttime < "
             "(SELECT intime FROM icustays WHERE stay_id = {stay_id}) + INTERVAL 24 HOUR")
IN_WINDOW = NAMED + " AND c.subject_id = {subject_id} AND c.charttime >= {start_time} AND c.charttime < {end_time}"
NOTES = "a vital is the d_items label of one chartevents item"
URINE_24H = ("outputevents AS o JOIN icustays AS s ON s.stay_id = o.stay_id WHERE o.subject_id = {subject_id} "
             "AND o.stay_id = {stay_id} AND o.itemid IN " + URINE_ITEMS + " AND o.charttime >= s.intime "
             "AND o.charttime < s.intime + INTERVAL 24 HOUR")
OUTPUT_IN_STAY = ("outputevents AS o JOIN d_items AS di ON di.itemid = o.itemid WHERE di.label = {output} AND "
                  "di.linksto = 'outputevents' AND o.subject_id = {subject_id} AND o.stay_id = {stay_id}")
ADMISSION_WEIGHT = ("chartevents AS c WHERE c.subject_id = {subject_id} AND c.stay_id = {stay_id} AND c.itemid IN "
                    "(SELECT itemid FROM d_items WHERE label = 'Admission Weight (Kg)' AND linksto = 'chartevents')")
LAST_BMI = ("omr AS w WHERE w.subject_id = {subject_id} AND w.result_name = 'BMI (kg/m2)' AND w.chartdate = "
            "(SELECT max(chartdate) FROM omr WHERE subject_id = {subject_id} AND result_name = 'BMI (kg/m2)')")
UNIT_ROWS = ("chartevents AS c JOIN d_items AS di ON di.itemid = c.itemid JOIN icustays AS s ON s.stay_id = "
             "c.stay_id WHERE di.label = {vital} AND di.linksto = 'chartevents' AND s.first_careunit = {careunit}")
GENDER_ROWS = ("chartevents AS c JOIN d_items AS di ON di.itemid = c.itemid JOIN patients AS p ON p.subject_id = "
               "c.subject_id WHERE di.label = {vital} AND di.linksto = 'chartevents' AND p.gender = {gender}")
SPO2 = ("chartevents AS c WHERE c.itemid IN (SELECT itemid FROM d_items WHERE label = 'O2 saturation pulseoxymetry' "
        "AND linksto = 'chartevents')")


def _at_extreme(fn: str) -> str:
    return (IN_STAY + f" AND c.charttime = (SELECT {fn}(c2.charttime) FROM chartevents AS c2 JOIN d_items AS di2 "
            "ON di2.itemid = c2.itemid WHERE di2.label = {vital} AND di2.linksto = 'chartevents' AND "
            "c2.subject_id = {subject_id} AND c2.stay_id = {stay_id})")


def _aggregate(id_: str, op: Operation, expr: str, paraphrases: tuple[str, ...], window: str = "",
               notes: str = NOTES) -> Template:
    return Template(
        id=id_, intent=VIT, level=Level.PATIENT, operation=op, answer_type=A.NUMBER, slots=STAY_SLOTS,
        paraphrases=paraphrases, sampler=STAY_SAMPLER, names_within=WITHIN_VITALS,
        gold_sql=f"SELECT {expr} FROM " + IN_STAY + window,
        evidence_sql="SELECT 'chartevents', c.row_id FROM " + IN_STAY + window,
        unit_sql="SELECT c.valueuom FROM " + IN_STAY + window, measure=MEASURE,
        guards=(ONE_ITEM, Guard("non_numeric_values", "SELECT count(*) > count(c.valuenum) FROM " + IN_STAY + window)),
        notes=notes)


def _extreme(id_: str, op: Operation, fn: str, paraphrases: tuple[str, ...]) -> Template:
    return Template(
        id=id_, intent=VIT, level=Level.PATIENT, operation=op, answer_type=A.NUMBER, slots=STAY_SLOTS,
        paraphrases=paraphrases, sampler=STAY_SAMPLER, names_within=WITHIN_VITALS,
        gold_sql="SELECT c.valuenum FROM " + _at_extreme(fn),
        evidence_sql="SELECT 'chartevents', c.row_id FROM " + _at_extreme(fn),
        unit_sql="SELECT c.valueuom FROM " + _at_extreme(fn), measure=MEASURE, guards=(ONE_ITEM,),
        notes=NOTES + "; two values charted at the first/last time are a tie and rejected")


register(
    _aggregate("vital_max_first_24h", Operation.MAX, "max(c.valuenum)", (
        "What was the highest {vital} of patient {subject_id} within the first 24 hours of ICU stay {stay_id}?",
        "In the first 24 hours of ICU stay {stay_id}, what was patient {subject_id}'s maximum {vital}?",
    ), window=FIRST_24H, notes=NOTES + "; window [intime, intime + 24 h)"),
    _aggregate("vital_min_in_stay", Operation.MIN, "min(c.valuenum)", (
        "What was the lowest {vital} charted for patient {subject_id} during ICU stay {stay_id}?",
        "During ICU stay {stay_id}, what was the minimum {vital} of patient {subject_id}?",
    )),
    _aggregate("vital_mean_in_stay", Operation.MEAN, "avg(c.valuenum)", (
        "What was the average {vital} of patient {subject_id} over ICU stay {stay_id}?",
        "Across all {vital} measurements of patient {subject_id} in ICU stay {stay_id}, what is the mean?",
    )),
    Template(
        id="vital_count_in_stay", intent=VIT, level=Level.PATIENT, operation=Operation.COUNT, answer_type=A.NUMBER,
        slots=STAY_SLOTS, unit="measurements", decimals=0, sampler=STAY_SAMPLER, names_within=WITHIN_VITALS,
        paraphrases=(
            "How many {vital} measurements were charted for patient {subject_id} during ICU stay {stay_id}?",
            "Count the charted {vital} values of patient {subject_id} in ICU stay {stay_id}.",
        ),
        gold_sql="SELECT count(*) FROM " + IN_STAY, evidence_sql="SELECT 'chartevents', c.row_id FROM " + IN_STAY,
        guards=(ONE_ITEM,), notes=NOTES),
    _extreme("vital_first_in_stay", Operation.FIRST, "min", (
        "What was the first {vital} charted for patient {subject_id} in ICU stay {stay_id}?",
        "For patient {subject_id}, what was the initial {vital} value recorded in ICU stay {stay_id}?",
    )),
    _extreme("vital_last_in_stay", Operation.LAST, "max", (
        "What was the last {vital} charted for patient {subject_id} in ICU stay {stay_id}?",
        "For patient {subject_id}, what was the most recent {vital} value of ICU stay {stay_id}?",
    )),
    Template(
        id="vital_change_in_stay", intent=VIT, level=Level.PATIENT, operation=Operation.CHANGE, answer_type=A.NUMBER,
        slots=STAY_SLOTS, sampler=STAY_SAMPLER, names_within=WITHIN_VITALS,
        paraphrases=(
            "By how much did patient {subject_id}'s {vital} change between the first and the last measurement of "
            "ICU stay {stay_id} (last minus first)?",
            "In ICU stay {stay_id}, what is patient {subject_id}'s last {vital} minus the first one?",
        ),
        gold_sql=("SELECT last_v.valuenum - first_v.valuenum FROM (SELECT c.valuenum FROM " + _at_extreme("max") +
                  ") AS last_v, (SELECT c.valuenum FROM " + _at_extreme("min") + ") AS first_v"),
        evidence_sql=("SELECT 'chartevents', c.row_id FROM " + _at_extreme("max") +
                      " UNION ALL SELECT 'chartevents', c.row_id FROM " + _at_extreme("min")),
        unit_sql=("SELECT c.valueuom FROM " + _at_extreme("max") + " UNION ALL SELECT c.valueuom FROM " +
                  _at_extreme("min")),
        measure=MEASURE,
        guards=(ONE_ITEM, Guard("single_measurement_time", "SELECT count(DISTINCT c.charttime) < 2 FROM " + IN_STAY)),
        notes=NOTES + "; needs values at two or more times; ties at either end are rejected"),
    Template(
        id="vital_max_in_window", intent=VIT, level=Level.PATIENT, operation=Operation.MAX, answer_type=A.NUMBER,
        slots={"subject_id": K.SUBJECT, "vital": K.CHART_ITEM, "start_time": K.TIME, "end_time": K.TIME},
        paraphrases=(
            "What was the highest {vital} of patient {subject_id} between {start_time} and {end_time}?",
            "From {start_time} up to {end_time}, what was patient {subject_id}'s maximum charted {vital}?",
        ),
        # A six-hour block of the clock in which the vital was charted: a window tied to the record.
        sampler=("SELECT c.subject_id, i.label AS vital, time_bucket(INTERVAL 6 HOUR, c.charttime) AS start_time, "
                 "time_bucket(INTERVAL 6 HOUR, c.charttime) + INTERVAL 6 HOUR AS end_time FROM chartevents AS c "
                 f"JOIN d_items AS i ON i.itemid = c.itemid "
                 f"WHERE i.label IN {VITAL_LABELS} AND c.valuenum IS NOT NULL"),
        gold_sql="SELECT max(c.valuenum) FROM " + IN_WINDOW,
        evidence_sql="SELECT 'chartevents', c.row_id FROM " + IN_WINDOW,
        unit_sql="SELECT c.valueuom FROM " + IN_WINDOW, measure=MEASURE,
        guards=(ONE_ITEM, Guard("non_numeric_values", "SELECT count(*) > count(c.valuenum) FROM " + IN_WINDOW)),
        names_within=WITHIN_VITALS, notes=NOTES + "; window [start_time, end_time)"),
    Template(
        id="vital_admission_weight", intent=VIT, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.NUMBER, slots={"subject_id": K.SUBJECT, "stay_id": K.ICU_STAY}, decimals=1,
        sampler=("SELECT c.subject_id, c.stay_id FROM chartevents AS c JOIN d_items AS i ON i.itemid = c.itemid "
                 "WHERE i.label = 'Admission Weight (Kg)'"),
        paraphrases=(
            "What admission weight was charted for patient {subject_id} at the start of ICU stay {stay_id}?",
            "How much did patient {subject_id} weigh on admission to ICU stay {stay_id}, as charted?",
        ),
        gold_sql="SELECT c.valuenum FROM " + ADMISSION_WEIGHT,
        evidence_sql="SELECT 'chartevents', c.row_id FROM " + ADMISSION_WEIGHT,
        unit_sql="SELECT c.valueuom FROM " + ADMISSION_WEIGHT, measure=MEASURE,
        notes="chartevents item 'Admission Weight (Kg)'; two charted admission weights are rejected"),
    Template(
        id="io_urine_output_first_24h", intent=VIT, level=Level.PATIENT, operation=Operation.SUM,
        answer_type=A.NUMBER, slots={"subject_id": K.SUBJECT, "stay_id": K.ICU_STAY}, decimals=0,
        sampler=("SELECT o.subject_id, o.stay_id FROM outputevents AS o JOIN icustays AS s ON s.stay_id = o.stay_id "
                 "WHERE o.itemid IN " + URINE_ITEMS + " AND o.charttime < s.intime + INTERVAL 24 HOUR"),
        paraphrases=(
            "What was patient {subject_id}'s total urine output in the first 24 hours of ICU stay {stay_id}?",
            "How much urine did patient {subject_id} put out during the first 24 hours of ICU stay {stay_id}?",
        ),
        gold_sql="SELECT sum(o.value) FROM " + URINE_24H,
        evidence_sql="SELECT 'outputevents', o.row_id FROM " + URINE_24H,
        unit_sql="SELECT o.valueuom FROM " + URINE_24H, measure=Measure("outputevents", "value", "valueuom"),
        notes="urine output = sum over the URINE_OUTPUT items; window [intime, intime + 24 h)"),
    Template(
        id="io_output_total_in_stay", intent=VIT, level=Level.PATIENT, operation=Operation.SUM, answer_type=A.NUMBER,
        slots={"subject_id": K.SUBJECT, "stay_id": K.ICU_STAY, "output": K.CHART_ITEM}, decimals=0,
        sampler=("SELECT o.subject_id, o.stay_id, i.label AS output FROM outputevents AS o JOIN d_items AS i "
                 "ON i.itemid = o.itemid"),
        paraphrases=(
            "What was the total {output} output of patient {subject_id} during ICU stay {stay_id}?",
            "Summed over ICU stay {stay_id}, how much {output} output was charted for patient {subject_id}?",
        ),
        gold_sql="SELECT sum(o.value) FROM " + OUTPUT_IN_STAY,
        evidence_sql="SELECT 'outputevents', o.row_id FROM " + OUTPUT_IN_STAY,
        unit_sql="SELECT o.valueuom FROM " + OUTPUT_IN_STAY, measure=Measure("outputevents", "value", "valueuom"),
        notes="an output is the d_items label of an outputevents item"),
    Template(
        id="omr_last_bmi", intent=VIT, level=Level.PATIENT, operation=Operation.LAST, answer_type=A.NUMBER,
        slots={"subject_id": K.SUBJECT}, unit="kg/m2", decimals=1,
        sampler="SELECT subject_id FROM omr WHERE result_name = 'BMI (kg/m2)'",
        paraphrases=(
            "What is the most recent BMI recorded for patient {subject_id} in the outpatient record?",
            "According to the latest outpatient (OMR) measurement, what is patient {subject_id}'s BMI?",
        ),
        gold_sql="SELECT TRY_CAST(w.result_value AS DOUBLE) FROM " + LAST_BMI,
        evidence_sql="SELECT 'omr', w.row_id FROM " + LAST_BMI, measure=Measure("omr", "result_value", None),
        notes="omr result 'BMI (kg/m2)' on the latest chartdate; two results that day are a tie and rejected"),
    # ------------------------------------------------------------ population
    Template(
        id="vital_pop_mean_in_unit", intent=VIT, level=Level.POPULATION, operation=Operation.MEAN,
        answer_type=A.NUMBER, slots={"vital": K.CHART_ITEM, "careunit": K.CATEGORY},
        sampler=("SELECT i.label AS vital, s.first_careunit AS careunit FROM chartevents AS c JOIN d_items AS i "
                 f"ON i.itemid = c.itemid JOIN icustays AS s ON s.stay_id = c.stay_id WHERE i.label IN {VITAL_LABELS}"),
        paraphrases=(
            "What is the mean {vital} over all measurements in ICU stays that began in the {careunit}?",
            "Across ICU stays whose first care unit was {careunit}, what is the average of all charted {vital} "
            "values?",
        ),
        gold_sql="SELECT avg(c.valuenum) FROM " + UNIT_ROWS,
        evidence_sql="SELECT 'chartevents', c.row_id FROM " + UNIT_ROWS,
        unit_sql="SELECT c.valueuom FROM " + UNIT_ROWS, measure=MEASURE,
        guards=(ONE_ITEM, Guard("non_numeric_values", "SELECT count(*) > count(c.valuenum) FROM " + UNIT_ROWS)),
        names_within=WITHIN_VITALS, notes=NOTES + "; stays by icustays.first_careunit"),
    Template(
        id="vital_pop_max_by_gender", intent=VIT, level=Level.POPULATION, operation=Operation.MAX,
        answer_type=A.NUMBER, slots={"vital": K.CHART_ITEM, "gender": K.CATEGORY},
        sampler=("SELECT i.label AS vital, p.gender FROM chartevents AS c JOIN d_items AS i ON i.itemid = c.itemid "
                 f"JOIN patients AS p ON p.subject_id = c.subject_id WHERE i.label IN {VITAL_LABELS}"),
        paraphrases=(
            "What is the highest {vital} charted for any patient whose recorded gender is {gender}?",
            "Among gender-{gender} patients, what was the maximum {vital} ever charted in the ICU?",
        ),
        gold_sql="SELECT max(c.valuenum) FROM " + GENDER_ROWS,
        evidence_sql="SELECT 'chartevents', c.row_id FROM " + GENDER_ROWS,
        unit_sql="SELECT c.valueuom FROM " + GENDER_ROWS, measure=MEASURE,
        guards=(ONE_ITEM, Guard("non_numeric_values", "SELECT count(*) > count(c.valuenum) FROM " + GENDER_ROWS)),
        names_within=WITHIN_VITALS, notes=NOTES + "; gender is patients.gender ('F' or 'M')"),
    Template(
        id="vital_pop_stays_with_low_spo2", intent=VIT, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"threshold": K.NUMBER}, unit="ICU stays", decimals=0,
        sampler="SELECT threshold FROM (VALUES (80), (85), (88), (90), (92), (94)) AS t(threshold)",
        paraphrases=(
            "How many ICU stays had at least one pulse-oximetry O2 saturation below {threshold}%?",
            "Count the ICU stays in which SpO2 (pulse oximetry) was charted under {threshold}% at least once.",
        ),
        gold_sql="SELECT count(DISTINCT c.stay_id) FROM " + SPO2 + " AND c.valuenum < {threshold}",
        evidence_sql="SELECT 'chartevents', c.row_id FROM " + SPO2 + " AND c.valuenum < {threshold}",
        guards=(Guard("non_numeric_values", "SELECT count(*) > count(c.valuenum) FROM " + SPO2),),
        notes="chartevents item 'O2 saturation pulseoxymetry'"),
)
