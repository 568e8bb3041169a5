"""The results declared recomputable are recomputed by their siblings in the real demo: a wrong item id
or formula here would protect results nothing gives, or leave open ones a reviewer recomputes."""

import duckdb

from pipeline.noise.derived_results import (ALBUMIN, BMI, DERIVATIONS, GLOBULIN, HEIGHT, HEMATOCRIT, HEMOGLOBIN, MCH,
                                            MCHC, MCV, PROTEIN_TOTAL, RBC, WEIGHT)

# (result, its formula over the siblings, how close a charted pair agrees): the arithmetic the declarations stand for.
LAB_FORMULAS = (
    (MCV, (HEMATOCRIT, RBC), "h / r * 10", 1.0),
    (MCH, (HEMOGLOBIN, RBC), "h / r * 10", 1.0),
    (MCHC, (HEMOGLOBIN, HEMATOCRIT), "h / r * 100", 1.0),
    (GLOBULIN, (PROTEIN_TOTAL, ALBUMIN), "h - r", 0.11),
)


def test_each_lab_formula_holds_for_nearly_every_specimen_that_has_its_inputs(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        for result, (a, b), formula, within in LAB_FORMULAS:
            assert (a, b) in DERIVATIONS["labevents"].formulas(result), result
            total, agree = con.execute(
                f"SELECT count(*), count(*) FILTER (abs(e.valuenum - ({formula})) <= {within}) FROM labevents e "
                f"JOIN (SELECT specimen_id, valuenum AS h FROM labevents WHERE itemid = {a}) USING (specimen_id) "
                f"JOIN (SELECT specimen_id, valuenum AS r FROM labevents WHERE itemid = {b}) USING (specimen_id) "
                f"WHERE e.itemid = {result}").fetchone()
            assert total >= 100 and agree >= 0.95 * total, (result, total, agree)


def test_a_bmi_is_the_same_days_weight_and_height(demo_full_db):
    assert (WEIGHT, HEIGHT) in DERIVATIONS["omr"].formulas(BMI)
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
