"""The results declared recomputable are recomputed by their siblings in the real demo: a wrong item id
or formula here would protect results nothing gives, or leave open ones a reviewer recomputes."""

from datetime import date
from unittest.mock import patch

import duckdb

from pipeline.noise.case import SourceLookup
from pipeline.noise.derived_results import (ALBUMIN, ANION_GAP, BICARBONATE, BILIRUBIN_DIRECT, BILIRUBIN_INDIRECT,
                                            BILIRUBIN_TOTAL, BLOOD_PRESSURES, BMI, CHLORIDE, CHOLESTEROL_HDL,
                                            CHOLESTEROL_LDL_CALCULATED, CHOLESTEROL_RATIO, CHOLESTEROL_TOTAL,
                                            DERIVATIONS, DIFFERENTIAL, EAG, GLOBULIN, HBA1C, HEIGHT, HEMATOCRIT,
                                            HEMATOCRIT_CALCULATED, HEMOGLOBIN, HEMOGLOBIN_BLOOD_GAS, MCH, MCHC, MCV,
                                            PCO2, PH, POTASSIUM, PROTEIN_TOTAL, RBC, SODIUM, TOTAL_CO2_CALCULATED,
                                            TRIGLYCERIDES, WBC, WEIGHT, Derivation, recomputable)

# (result, its inputs, its formula over them as i0, i1, ..., how close a charted result agrees, the share that
# must): the arithmetic the declarations stand for.
LAB_FORMULAS = (
    (MCV, (HEMATOCRIT, RBC), "i0 / i1 * 10", 1.0, 0.95),
    (MCH, (HEMOGLOBIN, RBC), "i0 / i1 * 10", 1.0, 0.95),
    (MCHC, (HEMOGLOBIN, HEMATOCRIT), "i0 / i1 * 100", 1.0, 0.95),
    (HEMOGLOBIN, (MCH, RBC), "i0 * i1 / 10", 0.1, 0.9),
    (GLOBULIN, (PROTEIN_TOTAL, ALBUMIN), "i0 - i1", 0.11, 0.95),
    (ALBUMIN, (PROTEIN_TOTAL, GLOBULIN), "i0 - i1", 0.11, 0.95),
    (BILIRUBIN_INDIRECT, (BILIRUBIN_TOTAL, BILIRUBIN_DIRECT), "i0 - i1", 0.11, 0.95),
    (EAG, (HBA1C,), "28.7 * i0 - 46.7", 0.5, 0.95),
    (HBA1C, (EAG,), "(i0 + 46.7) / 28.7", 0.05, 0.95),
    (CHOLESTEROL_RATIO, (CHOLESTEROL_TOTAL, CHOLESTEROL_HDL), "i0 / i1", 0.05, 0.95),
    (HEMATOCRIT_CALCULATED, (HEMOGLOBIN_BLOOD_GAS,), "3 * i0", 1.0, 0.95),
    (CHOLESTEROL_LDL_CALCULATED, (CHOLESTEROL_TOTAL, CHOLESTEROL_HDL, TRIGLYCERIDES), "i0 - i1 - i2 / 5", 1.0, 0.95),
    (TOTAL_CO2_CALCULATED, (PH, PCO2), "0.03 * i1 * (power(10, i0 - 6.1) + 1)", 1.0, 0.9),
    *((absolute, (WBC, share), "i0 * i1 / 100", 0.1, 0.9) for share, absolute in DIFFERENTIAL),
)
# Half a unit of the charted result's last digit: the formula gives the very value charted.
AS_CHARTED = "0.5 * power(10, -length(split_part(regexp_replace(e.value, '[^0-9.]', '', 'g'), '.', 2))) + 1e-9"


def _formulas(table: str, item, exact: bool | None = None) -> set:
    return {f for d in DERIVATIONS[table] if exact is None or d.exact is exact for f in d.formulas(item)}


def _agreement(con, result, inputs, formula, within) -> tuple[int, int]:
    joins = " ".join(f"JOIN (SELECT specimen_id, valuenum AS i{k} FROM labevents WHERE itemid = {item}) "
                     f"USING (specimen_id)" for k, item in enumerate(inputs))
    return con.execute(f"SELECT count(*), count(*) FILTER (abs(e.valuenum - ({formula})) <= {within}) "
                       f"FROM labevents e {joins} WHERE e.itemid = {result} AND e.valuenum IS NOT NULL").fetchone()


def test_each_lab_formula_holds_for_nearly_every_specimen_that_has_its_inputs(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        for result, inputs, formula, within, share in LAB_FORMULAS:
            assert inputs in _formulas("labevents", result), result
            total, agree = _agreement(con, result, inputs, formula, within)
            assert total >= 40 and agree >= share * total, (result, total, agree)


def test_a_formula_declared_exact_gives_the_value_as_charted(demo_full_db):
    """Value noise leaves alone a result its siblings give exactly, and only that: a formula that comes near
    (an MCH from rounded Hgb and RBC) leaves the result open to an implausible value."""
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        for result, inputs, formula, _, _ in LAB_FORMULAS:
            total, agree = _agreement(con, result, inputs, formula, AS_CHARTED)
            declared = inputs in _formulas("labevents", result, exact=True)
            assert declared == (agree >= 0.9 * total), (result, inputs, total, agree, declared)


def test_the_anion_gap_is_sodium_less_chloride_and_bicarbonate_with_or_without_potassium(demo_full_db):
    assert (SODIUM, CHLORIDE, BICARBONATE) in _formulas("labevents", ANION_GAP, exact=False)
    assert (ANION_GAP, SODIUM, CHLORIDE, BICARBONATE) in _formulas("labevents", POTASSIUM, exact=False)
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        total, agree = con.execute(f"""
            SELECT count(*), count(*) FILTER (abs(g - (na - cl - hco3)) <= 0.5 OR abs(g - (na + k - cl - hco3)) <= 0.5)
            FROM (SELECT specimen_id, max(valuenum) FILTER (itemid = {ANION_GAP}) AS g,
                         max(valuenum) FILTER (itemid = {SODIUM}) AS na, max(valuenum) FILTER (itemid = {POTASSIUM}) AS k,
                         max(valuenum) FILTER (itemid = {CHLORIDE}) AS cl,
                         max(valuenum) FILTER (itemid = {BICARBONATE}) AS hco3
                  FROM labevents GROUP BY specimen_id)
            WHERE g IS NOT NULL AND na IS NOT NULL AND k IS NOT NULL AND cl IS NOT NULL AND hco3 IS NOT NULL""").fetchone()
    assert total >= 1000 and agree >= 0.95 * total, (total, agree)


def test_a_blood_pressure_bounds_its_siblings_and_gives_no_value(demo_full_db):
    """The mean lies near (S + 2D) / 3 and between them: a duplicate far off it is settled, but a value read
    off the other two is no answer; so value noise may still make one implausible."""
    chart = {d.within: d for d in DERIVATIONS["chartevents"]}
    pressures = chart[("subject_id", "stay_id", "charttime")]
    assert not pressures.exact and chart[("subject_id", "stay_id")].exact
    checked = 0
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        for systolic, diastolic, mean in BLOOD_PRESSURES:
            assert (systolic, diastolic) in pressures.formulas(mean)
            total, ordered = con.execute(f"""
                SELECT count(*), count(*) FILTER (s > m AND m > d) FROM (
                    SELECT stay_id, charttime, max(valuenum) FILTER (itemid = {systolic}) AS s,
                           max(valuenum) FILTER (itemid = {diastolic}) AS d, max(valuenum) FILTER (itemid = {mean}) AS m
                    FROM chartevents WHERE itemid IN ({systolic}, {diastolic}, {mean}) GROUP BY ALL)
                WHERE s IS NOT NULL AND d IS NOT NULL AND m IS NOT NULL""").fetchone()
            assert total == 0 or ordered >= 0.98 * total, (systolic, total, ordered)
            checked += total
        assert checked >= 1000  # the cuff's and the arterial line's triples are charted in the demo


def test_a_bmi_is_the_same_days_weight_and_height(demo_full_db):
    assert (WEIGHT, HEIGHT) in _formulas("omr", BMI, exact=True)
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        total, agree = con.execute(f"""
            SELECT count(*), count(*) FILTER (abs(b - 703 * w / (h * h)) <= 0.5) FROM (
                SELECT b.result_value::DOUBLE AS b,
                       (SELECT max(result_value::DOUBLE) FROM omr w WHERE w.subject_id = b.subject_id
                        AND w.chartdate = b.chartdate AND w.result_name = '{WEIGHT}') AS w,
                       (SELECT max(result_value::DOUBLE) FROM omr h WHERE h.subject_id = b.subject_id
                        AND h.chartdate = b.chartdate AND h.result_name = '{HEIGHT}') AS h
                FROM omr b WHERE b.result_name = '{BMI}') WHERE w IS NOT NULL AND h IS NOT NULL""").fetchone()
    assert total >= 100 and agree >= 0.95 * total, (total, agree)


def test_an_admission_weight_is_charted_in_kg_and_in_lb_together(demo_full_db):
    from pipeline.noise.derived_results import ADMISSION_WEIGHT_KG, ADMISSION_WEIGHT_LB

    assert (ADMISSION_WEIGHT_LB,) in _formulas("chartevents", ADMISSION_WEIGHT_KG, exact=True)
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        total, agree = con.execute(f"""
            SELECT count(*), count(*) FILTER (abs(kg * 2.20462 - lb) <= 1) FROM (
                SELECT stay_id, max(valuenum) FILTER (itemid = {ADMISSION_WEIGHT_KG}) AS kg,
                       max(valuenum) FILTER (itemid = {ADMISSION_WEIGHT_LB}) AS lb
                FROM chartevents WHERE itemid IN ({ADMISSION_WEIGHT_KG}, {ADMISSION_WEIGHT_LB}) GROUP BY stay_id)
            WHERE kg IS NOT NULL AND lb IS NOT NULL""").fetchone()
    assert total >= 20 and agree >= 0.9 * total, (total, agree)


def test_an_item_named_with_a_quote_is_read_as_its_name():
    # A result name with an apostrophe is a string in the query, not the end of one.
    con = duckdb.connect()
    con.execute("CREATE TABLE omr (row_id BIGINT, subject_id INTEGER, chartdate DATE, result_name VARCHAR, "
                "result_value VARCHAR)")
    con.execute("INSERT INTO omr VALUES (1, 7, '2150-01-01', 'Weight (O''Brien)', '150'), "
                "(2, 7, '2150-01-01', 'Height', '60'), (3, 7, '2150-01-01', 'Index', '29')")
    index = Derivation("omr", "result_name", "result_value", ("subject_id", "chartdate"),
                       (("Index", (("Weight (O'Brien)", "Height"),)),))
    row = {"row_id": 3, "subject_id": 7, "chartdate": date(2150, 1, 1), "result_name": "Index"}
    lookup = SourceLookup(con)
    with patch.dict(DERIVATIONS, {"omr": (index,)}):
        assert recomputable(lookup, "omr", [row])
        assert not recomputable(SourceLookup(con), "omr", [row], hidden={1})
