"""Medications: prescriptions (drugs, doses, routes, times), eMAR administrations and ICU input events.

A drug is named as the source names it: ``prescriptions.drug`` for prescriptions,
``emar.medication`` for administrations, and the ``d_items.label`` of an input item for ICU inputs
(a label shared by several input items combines them). ICU input rows whose order was rewritten
(``statusdescription = 'Rewritten'``) were never given and are left out, as the question says "given".
"""

from pipeline.templates.registry import register
from pipeline.templates.template import Guard, Measure, Template
from pipeline.vocabulary import AnswerType as A
from pipeline.vocabulary import Intent, Level, Operation
from pipeline.vocabulary import SlotKind as K

MED = Intent.MEDICATIONS
# A drug name matches whatever its case and surrounding spaces: MIMIC-IV spells some drugs both
# "Vancomycin" and "vancomycin", and a clinician (or an agent) means one drug by either.
SAME_DRUG = "lower(trim(r.drug)) = lower(trim({drug}))"
RX = "prescriptions AS r WHERE r.subject_id = {subject_id} AND r.hadm_id = {hadm_id} AND " + SAME_DRUG
RX_SLOTS = {"subject_id": K.SUBJECT, "hadm_id": K.ADMISSION, "drug": K.DRUG}
# Fillings name main drugs (not the "Bag" or "Vial" a drug is mixed in), one spelling per drug.
RX_SAMPLER = ("SELECT subject_id, hadm_id, trim(min(drug)) AS drug FROM prescriptions WHERE drug_type = 'MAIN' "
              "GROUP BY subject_id, hadm_id, lower(trim(drug))")
RX_NAMES = ("SELECT trim(min(drug)) AS drug FROM prescriptions WHERE drug_type = 'MAIN' "
            "GROUP BY lower(trim(drug))")
LAST_RX = RX + (" AND r.starttime = (SELECT max(r2.starttime) FROM prescriptions AS r2 WHERE r2.subject_id = "
                "{subject_id} AND r2.hadm_id = {hadm_id} AND lower(trim(r2.drug)) = lower(trim({drug})))")
UNTIMED_RX = Guard("untimed_prescriptions", "SELECT count(*) > count(r.starttime) FROM " + RX)
EMAR = ("emar AS m WHERE m.subject_id = {subject_id} AND m.hadm_id = {hadm_id} "
        "AND lower(trim(m.medication)) = lower(trim({drug}))")
EMAR_SAMPLER = ("SELECT subject_id, hadm_id, trim(min(medication)) AS drug FROM emar WHERE event_txt = 'Administered' "
                "GROUP BY subject_id, hadm_id, lower(trim(medication))")
GIVEN = EMAR + " AND m.event_txt = 'Administered'"
# Name resolution is a join, not an IN (subquery): DuckDB decorrelates a join on the slot far better
# when the engine evaluates many fillings at once.
ALL_INPUTS = ("inputevents AS v JOIN d_items AS di ON di.itemid = v.itemid WHERE di.label = {drug} AND "
              "di.linksto = 'inputevents' AND v.statusdescription IS DISTINCT FROM 'Rewritten'")
IN_STAY = ALL_INPUTS + " AND v.subject_id = {subject_id} AND v.stay_id = {stay_id}"
STAY_SLOTS = {"subject_id": K.SUBJECT, "stay_id": K.ICU_STAY, "drug": K.DRUG}
INPUT_MEASURE = Measure("inputevents", "amount", "amountuom")
FIRST_24H = ("inputevents AS v JOIN d_items AS i ON i.itemid = v.itemid JOIN icustays AS s ON s.stay_id = v.stay_id "
             "WHERE v.subject_id = {subject_id} AND v.stay_id = {stay_id} AND i.category IN ('Medications', "
             "'Antibiotics') AND v.starttime >= s.intime AND v.starttime < s.intime + INTERVAL 24 HOUR "
             "AND v.statusdescription IS DISTINCT FROM 'Rewritten'")
ALL_RX = "prescriptions AS r WHERE " + SAME_DRUG
IN_UNIT = ("inputevents AS v JOIN d_items AS di ON di.itemid = v.itemid JOIN icustays AS s ON s.stay_id = v.stay_id "
           "WHERE di.label = {drug} AND di.linksto = 'inputevents' AND v.statusdescription IS DISTINCT FROM "
           "'Rewritten' AND s.first_careunit = {careunit}")
# ICU input items that are drugs, fluids given as treatment or blood products (not oral intake or flushes).
DRUG_CATEGORIES = "('Medications', 'Antibiotics', 'Blood Products/Colloids')"
GIVEN_IN_ADMISSION = ("emar AS m WHERE m.subject_id = {subject_id} AND m.hadm_id = {hadm_id} "
                      "AND m.event_txt = 'Administered'")
RX_NOTES = "a drug is prescriptions.drug, matched ignoring case and surrounding spaces"

register(
    Template(
        id="med_prescribed_in_admission", intent=MED, level=Level.PATIENT, operation=Operation.EXISTENCE,
        answer_type=A.BOOLEAN, slots=RX_SLOTS,
        paraphrases=(
            "Was {drug} prescribed to patient {subject_id} during admission {hadm_id}?",
            "Did patient {subject_id} receive a prescription for {drug} in hospital admission {hadm_id}?",
        ),
        # Admissions crossed with drugs prescribed in many admissions: both answers occur.
        sampler=("SELECT a.subject_id, a.hadm_id, c.drug FROM admissions AS a, (SELECT trim(min(drug)) AS drug "
                 "FROM prescriptions WHERE drug_type = 'MAIN' GROUP BY lower(trim(drug)) "
                 "ORDER BY count(DISTINCT hadm_id) DESC, 1 LIMIT 40) AS c"),
        gold_sql="SELECT count(*) > 0 FROM " + RX,
        evidence_sql=("SELECT 'prescriptions', r.row_id FROM " + RX + " UNION ALL SELECT 'admissions', a.row_id FROM "
                      "admissions AS a WHERE a.subject_id = {subject_id} AND a.hadm_id = {hadm_id} AND NOT EXISTS "
                      "(SELECT 1 FROM " + RX + ")"),
        notes=RX_NOTES + "; evidence of a 'no' is the admission row"),
    Template(
        id="med_prescription_count", intent=MED, level=Level.PATIENT, operation=Operation.COUNT, answer_type=A.NUMBER,
        slots=RX_SLOTS, unit="prescriptions", decimals=0, sampler=RX_SAMPLER,
        paraphrases=(
            "How many prescriptions of {drug} were written for patient {subject_id} during admission {hadm_id}?",
            "Count the {drug} prescriptions of patient {subject_id} in hospital admission {hadm_id}.",
        ),
        gold_sql="SELECT count(*) FROM " + RX,
        evidence_sql="SELECT 'prescriptions', r.row_id FROM " + RX, notes=RX_NOTES),
    Template(
        id="med_first_prescription_start", intent=MED, level=Level.PATIENT, operation=Operation.FIRST,
        answer_type=A.TIMESTAMP, slots=RX_SLOTS, sampler=RX_SAMPLER,
        paraphrases=(
            "When did the first {drug} prescription of patient {subject_id} start during admission {hadm_id}?",
            "What was the start time of patient {subject_id}'s earliest {drug} prescription in admission {hadm_id}?",
        ),
        gold_sql="SELECT min(r.starttime) FROM " + RX,
        evidence_sql=("SELECT 'prescriptions', r.row_id FROM " + RX + " AND r.starttime = (SELECT min(r2.starttime) "
                      "FROM prescriptions AS r2 WHERE r2.subject_id = {subject_id} AND r2.hadm_id = {hadm_id} AND "
                      "lower(trim(r2.drug)) = lower(trim({drug})))"),
        guards=(UNTIMED_RX,), notes=RX_NOTES),
    Template(
        id="med_routes_of_drug", intent=MED, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT_SET, slots=RX_SLOTS, sampler=RX_SAMPLER,
        paraphrases=(
            "By which routes was {drug} prescribed to patient {subject_id} during admission {hadm_id}?",
            "List the administration routes of patient {subject_id}'s {drug} prescriptions in admission {hadm_id}.",
        ),
        gold_sql="SELECT r.route FROM " + RX,
        evidence_sql="SELECT 'prescriptions', r.row_id FROM " + RX,
        notes=RX_NOTES + "; a prescription without route rejects the filling"),
    Template(
        id="med_last_prescribed_dose", intent=MED, level=Level.PATIENT, operation=Operation.LAST,
        answer_type=A.NUMBER, slots=RX_SLOTS, sampler=RX_SAMPLER,
        paraphrases=(
            "What dose was ordered in the last {drug} prescription of patient {subject_id} during admission "
            "{hadm_id}?",
            "For patient {subject_id}, admission {hadm_id}: what was the prescribed dose of the most recent {drug} "
            "order?",
        ),
        gold_sql="SELECT TRY_CAST(r.dose_val_rx AS DOUBLE) FROM " + LAST_RX,
        evidence_sql="SELECT 'prescriptions', r.row_id FROM " + LAST_RX,
        unit_sql="SELECT r.dose_unit_rx FROM " + LAST_RX,
        measure=Measure("prescriptions", "dose_val_rx", "dose_unit_rx"),
        guards=(UNTIMED_RX,),
        notes=RX_NOTES + "; a dose range ('1-2') or two orders starting together reject the filling"),
    Template(
        id="med_emar_administrations", intent=MED, level=Level.PATIENT, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots=RX_SLOTS, unit="administrations", decimals=0,
        sampler=EMAR_SAMPLER,
        paraphrases=(
            "How many times was {drug} charted as administered to patient {subject_id} during admission {hadm_id}?",
            "Count the eMAR administrations of {drug} to patient {subject_id} in admission {hadm_id}.",
        ),
        gold_sql="SELECT count(*) FROM " + GIVEN,
        evidence_sql="SELECT 'emar', m.row_id FROM " + EMAR,
        guards=(Guard("events_without_status", "SELECT count(*) > count(m.event_txt) FROM " + EMAR),),
        notes="a drug is emar.medication, matched ignoring case and surrounding spaces; administered = event_txt "
              "'Administered'"),
    Template(
        id="med_emar_last_administration", intent=MED, level=Level.PATIENT, operation=Operation.LAST,
        answer_type=A.TIMESTAMP, slots=RX_SLOTS,
        sampler=EMAR_SAMPLER,
        paraphrases=(
            "When was {drug} last administered to patient {subject_id} during admission {hadm_id}?",
            "At what time was the final charted administration of {drug} to patient {subject_id} in admission "
            "{hadm_id}?",
        ),
        gold_sql="SELECT max(m.charttime) FROM " + GIVEN,
        evidence_sql=("SELECT 'emar', m.row_id FROM " + GIVEN + " AND m.charttime = (SELECT max(m2.charttime) FROM "
                      "emar AS m2 WHERE m2.subject_id = {subject_id} AND m2.hadm_id = {hadm_id} AND "
                      "lower(trim(m2.medication)) = lower(trim({drug})) AND m2.event_txt = 'Administered')"),
        guards=(Guard("events_without_status", "SELECT count(*) > count(m.event_txt) FROM " + EMAR),),
        notes="a drug is emar.medication, matched ignoring case and surrounding spaces; administered = event_txt "
              "'Administered'"),
    Template(
        id="med_icu_input_total", intent=MED, level=Level.PATIENT, operation=Operation.SUM, answer_type=A.NUMBER,
        slots=STAY_SLOTS, decimals=2,
        sampler=("SELECT v.subject_id, v.stay_id, i.label AS drug FROM inputevents AS v JOIN d_items AS i "
                 "ON i.itemid = v.itemid WHERE v.stay_id IS NOT NULL AND i.category IN " + DRUG_CATEGORIES),
        paraphrases=(
            "What total amount of {drug} was given to patient {subject_id} during ICU stay {stay_id}?",
            "Summing all ICU input events, how much {drug} did patient {subject_id} receive in ICU stay {stay_id}?",
        ),
        gold_sql="SELECT sum(v.amount) FROM " + IN_STAY,
        evidence_sql="SELECT 'inputevents', v.row_id FROM " + IN_STAY,
        unit_sql="SELECT v.amountuom FROM " + IN_STAY, measure=INPUT_MEASURE,
        guards=(Guard("missing_amounts", "SELECT count(*) > count(v.amount) FROM " + IN_STAY),),
        notes="a drug is the d_items label of an input item; rewritten orders are left out"),
    Template(
        id="med_icu_first_24h_medications", intent=MED, level=Level.PATIENT, operation=Operation.RETRIEVAL,
        answer_type=A.TEXT_SET, slots={"subject_id": K.SUBJECT, "stay_id": K.ICU_STAY},
        sampler=("SELECT v.subject_id, v.stay_id FROM inputevents AS v JOIN d_items AS i ON i.itemid = v.itemid "
                 "WHERE i.category IN ('Medications', 'Antibiotics')"),
        paraphrases=(
            "Which ICU input items of category Medications or Antibiotics were started for patient {subject_id} "
            "within the first 24 hours of ICU stay {stay_id}?",
            "In the first 24 hours after ICU admission {stay_id}, which medications or antibiotics (by the ICU's "
            "input item categories) did patient {subject_id} receive?",
        ),
        gold_sql="SELECT DISTINCT i.label FROM " + FIRST_24H,
        evidence_sql="SELECT 'inputevents', v.row_id FROM " + FIRST_24H,
        notes="input events of d_items categories Medications and Antibiotics; window [intime, intime + 24 h)"),
    Template(
        id="med_top_administered_in_admission", intent=MED, level=Level.PATIENT, operation=Operation.TOP_N,
        answer_type=A.TEXT_RANKED, slots={"subject_id": K.SUBJECT, "hadm_id": K.ADMISSION, "top_n": K.NUMBER},
        sampler=("SELECT subject_id, hadm_id, n.top_n FROM emar, (VALUES (2), (3)) AS n(top_n) "
                 "WHERE event_txt = 'Administered'"),
        paraphrases=(
            "Which {top_n} medications were administered most often to patient {subject_id} during admission "
            "{hadm_id}, most frequent first?",
            "Rank the top {top_n} medications by number of charted administrations for patient {subject_id} in "
            "admission {hadm_id}.",
        ),
        gold_sql=("SELECT trim(min(m.medication)), rank() OVER (ORDER BY count(*) DESC) AS rnk FROM "
                  + GIVEN_IN_ADMISSION + " GROUP BY lower(trim(m.medication)) QUALIFY rnk <= {top_n}"),
        evidence_sql="SELECT 'emar', m.row_id FROM " + GIVEN_IN_ADMISSION,
        guards=(Guard("fewer_than_n_medications", "SELECT count(DISTINCT lower(trim(m.medication))) < {top_n} FROM "
                      + GIVEN_IN_ADMISSION),
                Guard("administrations_without_medication", "SELECT count(*) > count(m.medication) FROM "
                      + GIVEN_IN_ADMISSION)),
        notes="eMAR rows with event_txt 'Administered', by emar.medication ignoring case and surrounding spaces; "
              "ties inside the top N or at its cut are rejected"),
    # ------------------------------------------------------------ population
    Template(
        id="med_pop_patients_prescribed", intent=MED, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"drug": K.DRUG}, unit="patients", decimals=0,
        sampler=RX_NAMES,
        paraphrases=(
            "How many patients were prescribed {drug}?",
            "Count the patients with at least one prescription of {drug}.",
        ),
        gold_sql="SELECT count(DISTINCT r.subject_id) FROM " + ALL_RX,
        evidence_sql="SELECT 'prescriptions', r.row_id FROM " + ALL_RX, notes=RX_NOTES),
    Template(
        id="med_pop_most_common_route", intent=MED, level=Level.POPULATION, operation=Operation.TOP_N,
        answer_type=A.TEXT, slots={"drug": K.DRUG},
        sampler=RX_NAMES,
        paraphrases=(
            "What is the most common route of administration in prescriptions of {drug}?",
            "By which route is {drug} most often prescribed?",
        ),
        gold_sql=("SELECT r.route FROM " + ALL_RX + " GROUP BY r.route "
                  "QUALIFY rank() OVER (ORDER BY count(*) DESC) = 1"),
        evidence_sql="SELECT 'prescriptions', r.row_id FROM " + ALL_RX,
        guards=(Guard("prescriptions_without_route", "SELECT count(*) > count(r.route) FROM " + ALL_RX),),
        notes=RX_NOTES + "; a tie for most common is rejected"),
    Template(
        id="med_pop_mean_icu_amount", intent=MED, level=Level.POPULATION, operation=Operation.MEAN,
        answer_type=A.NUMBER, slots={"drug": K.DRUG}, decimals=2,
        sampler=("SELECT i.label AS drug FROM inputevents AS v JOIN d_items AS i ON i.itemid = v.itemid "
                 "WHERE i.category IN " + DRUG_CATEGORIES),
        paraphrases=(
            "What is the average amount of {drug} per ICU input event?",
            "Across all ICU input events of {drug}, what is the mean amount given?",
        ),
        gold_sql="SELECT avg(v.amount) FROM " + ALL_INPUTS,
        evidence_sql="SELECT 'inputevents', v.row_id FROM " + ALL_INPUTS,
        unit_sql="SELECT v.amountuom FROM " + ALL_INPUTS, measure=INPUT_MEASURE,
        guards=(Guard("missing_amounts", "SELECT count(*) > count(v.amount) FROM " + ALL_INPUTS),),
        notes="a drug is the d_items label of an input item; rewritten orders are left out"),
    Template(
        id="med_pop_stays_with_drug_in_unit", intent=MED, level=Level.POPULATION, operation=Operation.COUNT,
        answer_type=A.NUMBER, slots={"careunit": K.CATEGORY, "drug": K.DRUG}, unit="ICU stays", decimals=0,
        sampler=("SELECT s.first_careunit AS careunit, i.label AS drug FROM inputevents AS v JOIN icustays AS s "
                 "ON s.stay_id = v.stay_id JOIN d_items AS i ON i.itemid = v.itemid WHERE i.category IN "
                 + DRUG_CATEGORIES),
        paraphrases=(
            "How many ICU stays that began in the {careunit} received {drug}?",
            "Count the {careunit} ICU stays (by first care unit) with at least one {drug} input event.",
        ),
        gold_sql="SELECT count(DISTINCT v.stay_id) FROM " + IN_UNIT,
        evidence_sql="SELECT 'inputevents', v.row_id FROM " + IN_UNIT,
        notes="a drug is the d_items label of an input item; stays by icustays.first_careunit"),
)
