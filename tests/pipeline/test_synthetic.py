"""The synthetic MIMIC-IV: schema, referential integrity, time consistency, clinical plausibility,
determinism and richness of a small database (the session fixture ``synthetic_db``)."""

from pathlib import Path

import duckdb
import pytest

from pipeline.schema import ROW_ID, TABLES, create_table_sql
from pipeline.source_db import read_source_info
from pipeline.synthetic import catalog as cat
from pipeline.synthetic import generate_synthetic
from pipeline.synthetic.dictionaries import catalog_problems, used_itemids
from pipeline.synthetic.generate import CHUNK_PATIENTS, synthetic_fingerprint
from pipeline.vocabulary import SourceKind
from tests.conftest import SYNTHETIC_PATIENTS, SYNTHETIC_SEED

PATIENT_TABLES = [t for t in TABLES if not t.dictionary]


@pytest.fixture(scope="module")
def con(synthetic_db):
    with duckdb.connect(str(synthetic_db), read_only=True) as c:
        yield c


def one(con, sql: str):
    return con.execute(sql).fetchone()[0]


def rows(con, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()


def table_hashes(path: Path) -> dict[str, str]:
    """A content hash of every table, rows in row_id order."""
    with duckdb.connect(str(path), read_only=True) as c:
        return {t.name: c.execute(f'SELECT md5(string_agg(CAST(x AS VARCHAR), chr(10) ORDER BY x.{ROW_ID})) '
                                  f'FROM "{t.name}" AS x').fetchone()[0] for t in TABLES}


# ------------------------------------------------------------------------------------------ schema

def test_every_table_has_row_id_first_then_the_declared_columns_and_types(con):
    reference = duckdb.connect()
    for t in TABLES:
        reference.execute(create_table_sql(t))
        expected = rows(reference, f"SELECT column_name, data_type FROM information_schema.columns "
                                   f"WHERE table_name = '{t.name}' ORDER BY ordinal_position")
        actual = rows(con, f"SELECT column_name, data_type FROM information_schema.columns "
                           f"WHERE table_name = '{t.name}' ORDER BY ordinal_position")
        assert actual == expected, t.name
    assert expected[0] == (ROW_ID, "BIGINT")


def test_every_table_holds_rows(con):
    empty = [t.name for t in TABLES if one(con, f'SELECT count(*) FROM "{t.name}"') == 0]
    assert empty == []


def test_row_ids_number_rows_from_zero_without_gaps(con):
    for t in TABLES:
        n, lo, hi, distinct = con.execute(
            f'SELECT count(*), min({ROW_ID}), max({ROW_ID}), count(DISTINCT {ROW_ID}) FROM "{t.name}"').fetchone()
        assert (lo, hi, distinct) == (0, n - 1, n), t.name


def test_natural_keys_are_unique(con):
    for t in TABLES:
        if not t.key:
            continue
        key = ", ".join(f'"{k}"' for k in t.key)
        duplicates = one(con, f'SELECT count(*) FROM (SELECT {key} FROM "{t.name}" GROUP BY ALL HAVING count(*) > 1)')
        assert duplicates == 0, f"{t.name} repeats its key ({key})"


def test_provenance_records_kind_fingerprint_and_parameters(con):
    info = read_source_info(con)
    assert info.kind == SourceKind.SYNTHETIC
    assert info.fingerprint == synthetic_fingerprint(SYNTHETIC_PATIENTS, SYNTHETIC_SEED)
    assert info.details["patients"] == SYNTHETIC_PATIENTS and info.details["seed"] == SYNTHETIC_SEED
    assert {"generator_version", "schema_version"} <= set(info.details)


def test_patient_count_is_the_requested_one(con):
    assert one(con, "SELECT count(*) FROM patients") == SYNTHETIC_PATIENTS


# ------------------------------------------------------------------------------- referential integrity

def test_every_subject_id_is_a_patient(con):
    for t in PATIENT_TABLES:
        if "subject_id" in t.column_names and t.name != "patients":
            orphans = one(con, f'SELECT count(*) FROM "{t.name}" '
                               f'WHERE subject_id NOT IN (SELECT subject_id FROM patients)')
            assert orphans == 0, t.name


def test_every_hadm_id_is_an_admission_of_the_same_subject(con):
    for t in PATIENT_TABLES:
        if "hadm_id" in t.column_names and t.name != "admissions":
            bad = one(con, f'SELECT count(*) FROM "{t.name}" x LEFT JOIN admissions a USING (hadm_id) '
                           f'WHERE x.hadm_id IS NULL OR a.subject_id IS DISTINCT FROM x.subject_id')
            assert bad == 0, t.name


def test_every_stay_id_is_a_stay_of_the_same_admission_and_subject(con):
    for t in PATIENT_TABLES:
        if "stay_id" in t.column_names and t.name != "icustays":
            bad = one(con, f'SELECT count(*) FROM "{t.name}" x LEFT JOIN icustays s USING (stay_id) '
                           f'WHERE x.stay_id IS NULL OR s.hadm_id IS DISTINCT FROM x.hadm_id '
                           f'OR s.subject_id IS DISTINCT FROM x.subject_id')
            assert bad == 0, t.name


def test_lab_itemids_are_in_d_labitems(con):
    assert one(con, "SELECT count(*) FROM labevents WHERE itemid NOT IN (SELECT itemid FROM d_labitems)") == 0


def test_icu_itemids_are_in_d_items_linked_to_their_table(con):
    for table in ("chartevents", "datetimeevents", "inputevents", "ingredientevents", "outputevents",
                  "procedureevents"):
        bad = one(con, f"SELECT count(*) FROM {table} x LEFT JOIN d_items d USING (itemid) "
                       f"WHERE d.linksto IS DISTINCT FROM '{table}'")
        assert bad == 0, table


def test_icd_codes_are_in_the_icd_dictionaries(con):
    for table, dictionary in (("diagnoses_icd", "d_icd_diagnoses"), ("procedures_icd", "d_icd_procedures")):
        bad = one(con, f"SELECT count(*) FROM {table} x ANTI JOIN {dictionary} d USING (icd_code, icd_version)")
        assert bad == 0, table


def test_hcpcs_codes_are_in_d_hcpcs_with_their_short_description(con):
    bad = one(con, "SELECT count(*) FROM hcpcsevents h LEFT JOIN d_hcpcs d ON d.code = h.hcpcs_cd "
                   "WHERE d.short_description IS DISTINCT FROM h.short_description")
    assert bad == 0


def test_provider_and_caregiver_ids_are_in_their_dictionaries(con):
    for table, column in (("admissions", "admit_provider_id"), ("labevents", "order_provider_id"),
                          ("microbiologyevents", "order_provider_id"), ("prescriptions", "order_provider_id"),
                          ("poe", "order_provider_id")):
        bad = one(con, f"SELECT count(*) FROM {table} WHERE {column} IS NOT NULL "
                       f"AND {column} NOT IN (SELECT provider_id FROM provider)")
        assert bad == 0, f"{table}.{column}"
    for table in ("chartevents", "datetimeevents", "inputevents", "ingredientevents", "outputevents",
                  "procedureevents"):
        bad = one(con, f"SELECT count(*) FROM {table} WHERE caregiver_id NOT IN (SELECT caregiver_id FROM caregiver)")
        assert bad == 0, table


def test_dictionaries_also_hold_codes_no_patient_uses(con):
    for sql in ("SELECT count(*) FROM d_labitems WHERE itemid NOT IN (SELECT itemid FROM labevents)",
                "SELECT count(*) FROM d_icd_diagnoses ANTI JOIN diagnoses_icd USING (icd_code, icd_version)",
                "SELECT count(*) FROM d_icd_procedures ANTI JOIN procedures_icd USING (icd_code, icd_version)",
                "SELECT count(*) FROM d_hcpcs WHERE code NOT IN (SELECT hcpcs_cd FROM hcpcsevents)"):
        assert one(con, sql) > 0, sql


def test_the_catalog_describes_every_code_it_can_emit():
    assert catalog_problems() == []


def test_prescriptions_pharmacy_and_poe_share_pharmacy_id_and_poe_id(con):
    bad = one(con, "SELECT count(*) FROM prescriptions p LEFT JOIN pharmacy ph USING (pharmacy_id) "
                   "WHERE ph.poe_id IS DISTINCT FROM p.poe_id OR ph.hadm_id IS DISTINCT FROM p.hadm_id "
                   "OR ph.medication IS DISTINCT FROM p.drug")
    assert bad == 0
    orders = one(con, "SELECT count(*) FROM prescriptions p LEFT JOIN poe USING (poe_id) "
                      "WHERE poe.hadm_id IS DISTINCT FROM p.hadm_id OR poe.poe_seq IS DISTINCT FROM p.poe_seq "
                      "OR poe.order_type IS DISTINCT FROM 'Medications'")
    assert orders == 0


def test_emar_rows_point_at_their_order(con):
    bad = one(con, "SELECT count(*) FROM emar e LEFT JOIN prescriptions p USING (pharmacy_id) "
                   "WHERE p.poe_id IS DISTINCT FROM e.poe_id OR p.drug IS DISTINCT FROM e.medication "
                   "OR p.hadm_id IS DISTINCT FROM e.hadm_id")
    assert bad == 0


def test_emar_detail_rows_belong_to_an_emar_row(con):
    bad = one(con, "SELECT count(*) FROM emar_detail d LEFT JOIN emar e USING (emar_id) "
                   "WHERE e.subject_id IS DISTINCT FROM d.subject_id OR e.emar_seq IS DISTINCT FROM d.emar_seq "
                   "OR (d.pharmacy_id IS NOT NULL AND d.pharmacy_id IS DISTINCT FROM e.pharmacy_id)")
    assert bad == 0


def test_poe_and_emar_ids_are_subject_and_sequence(con):
    assert one(con, "SELECT count(*) FROM poe WHERE poe_id <> subject_id || '-' || poe_seq") == 0
    assert one(con, "SELECT count(*) FROM emar WHERE emar_id <> subject_id || '-' || emar_seq") == 0
    assert one(con, "SELECT count(*) FROM poe_detail d ANTI JOIN poe USING (poe_id, poe_seq, subject_id)") == 0


def test_ingredients_belong_to_an_input_order(con):
    bad = one(con, "SELECT count(*) FROM ingredientevents g ANTI JOIN inputevents i "
                   "USING (orderid, stay_id, starttime, endtime)")
    assert bad == 0


# ------------------------------------------------------------------------------------------- time

def test_admittime_precedes_dischtime(con):
    assert one(con, "SELECT count(*) FROM admissions WHERE NOT admittime < dischtime") == 0
    assert one(con, "SELECT count(*) FROM admissions WHERE edregtime IS NOT NULL AND NOT edregtime < admittime") == 0


def test_admissions_of_a_patient_do_not_overlap(con):
    bad = one(con, "SELECT count(*) FROM (SELECT admittime, lag(dischtime) OVER (PARTITION BY subject_id "
                   "ORDER BY admittime) AS previous FROM admissions) WHERE previous >= admittime")
    assert bad == 0


def test_icu_stays_lie_inside_their_admission(con):
    bad = one(con, "SELECT count(*) FROM icustays s JOIN admissions a USING (hadm_id) "
                   "WHERE NOT (a.admittime <= s.intime AND s.intime < s.outtime AND s.outtime <= a.dischtime)")
    assert bad == 0
    los = one(con, "SELECT max(abs(los - epoch(outtime - intime) / 86400)) FROM icustays")
    assert los < 1e-6


HOSPITAL_EVENT_TIMES = [
    ("labevents", "charttime"), ("labevents", "storetime"), ("microbiologyevents", "charttime"),
    ("prescriptions", "starttime"), ("prescriptions", "stoptime"), ("pharmacy", "starttime"),
    ("pharmacy", "stoptime"), ("pharmacy", "entertime"), ("emar", "charttime"), ("emar", "storetime"),
    ("poe", "ordertime"), ("services", "transfertime"),
]


@pytest.mark.parametrize(("table", "column"), HOSPITAL_EVENT_TIMES)
def test_hospital_events_happen_during_their_admission(con, table, column):
    bad = one(con, f"SELECT count(*) FROM {table} x JOIN admissions a USING (hadm_id) "
                   f"WHERE x.{column} IS NOT NULL AND NOT x.{column} BETWEEN a.admittime AND a.dischtime")
    assert bad == 0


def test_dated_events_fall_on_days_of_their_admission(con):
    for table in ("procedures_icd", "hcpcsevents"):
        bad = one(con, f"SELECT count(*) FROM {table} x JOIN admissions a USING (hadm_id) "
                       f"WHERE NOT x.chartdate BETWEEN CAST(a.admittime AS DATE) AND CAST(a.dischtime AS DATE)")
        assert bad == 0, table


ICU_EVENT_TIMES = [
    ("chartevents", "charttime"), ("chartevents", "storetime"), ("outputevents", "charttime"),
    ("datetimeevents", "charttime"), ("inputevents", "starttime"), ("inputevents", "endtime"),
    ("ingredientevents", "starttime"), ("ingredientevents", "endtime"), ("procedureevents", "starttime"),
    ("procedureevents", "endtime"),
]


@pytest.mark.parametrize(("table", "column"), ICU_EVENT_TIMES)
def test_icu_events_happen_during_their_stay(con, table, column):
    bad = one(con, f"SELECT count(*) FROM {table} x JOIN icustays s USING (stay_id) "
                   f"WHERE NOT x.{column} BETWEEN s.intime AND s.outtime")
    assert bad == 0


def test_intervals_start_before_they_end(con):
    for table in ("inputevents", "ingredientevents", "procedureevents"):
        assert one(con, f"SELECT count(*) FROM {table} WHERE NOT starttime < endtime") == 0, table
    assert one(con, "SELECT count(*) FROM prescriptions WHERE NOT starttime < stoptime") == 0


def test_transfers_walk_through_the_admission_without_gaps(con):
    steps = rows(con, """
        SELECT a.hadm_id, a.admittime, a.dischtime, a.edregtime,
               list(t.eventtype ORDER BY t.intime, t.transfer_id), list(t.intime ORDER BY t.intime, t.transfer_id),
               list(t.outtime ORDER BY t.intime, t.transfer_id)
        FROM admissions a JOIN transfers t USING (hadm_id) GROUP BY ALL""")
    assert len(steps) == one(con, "SELECT count(*) FROM admissions")
    for hadm, admit, disch, edreg, kinds, ins, outs in steps:
        assert ins[0] == (edreg or admit), hadm
        assert kinds[-1] == "discharge" and ins[-1] == disch and outs[-1] is None, hadm
        assert all(outs[i] == ins[i + 1] for i in range(len(ins) - 1)), hadm
        assert kinds[0] == ("ED" if edreg else "admit"), hadm


def test_icu_transfers_match_the_stay(con):
    missing = one(con, "SELECT count(*) FROM icustays s ANTI JOIN transfers t "
                       "ON t.hadm_id = s.hadm_id AND t.intime = s.intime AND t.careunit = s.first_careunit")
    assert missing == 0
    missing = one(con, "SELECT count(*) FROM icustays s ANTI JOIN transfers t "
                       "ON t.hadm_id = s.hadm_id AND t.outtime = s.outtime AND t.careunit = s.last_careunit")
    assert missing == 0


def test_in_hospital_deaths_die_at_discharge_with_the_flag_and_location(con):
    bad = one(con, "SELECT count(*) FROM admissions WHERE (deathtime IS NOT NULL) <> (hospital_expire_flag = 1) "
                   "OR (deathtime IS NOT NULL) <> (discharge_location IS NOT DISTINCT FROM 'DIED') "
                   "OR deathtime <> dischtime")
    assert bad == 0


def test_in_hospital_deaths_end_the_last_admission(con):
    bad = one(con, "SELECT count(*) FROM admissions a WHERE deathtime IS NOT NULL AND EXISTS "
                   "(SELECT 1 FROM admissions b WHERE b.subject_id = a.subject_id AND b.admittime > a.admittime)")
    assert bad == 0
    bad = one(con, "SELECT count(*) FROM admissions a JOIN patients p USING (subject_id) "
                   "WHERE a.deathtime IS NOT NULL AND p.dod IS DISTINCT FROM CAST(a.deathtime AS DATE)")
    assert bad == 0


def test_date_of_death_is_on_or_after_the_last_discharge_and_the_last_omr(con):
    bad = one(con, "SELECT count(*) FROM patients p JOIN (SELECT subject_id, max(dischtime) AS last FROM admissions "
                   "GROUP BY 1) USING (subject_id) WHERE p.dod < CAST(last AS DATE)")
    assert bad == 0
    bad = one(con, "SELECT count(*) FROM omr o JOIN patients p USING (subject_id) WHERE o.chartdate > p.dod")
    assert bad == 0


# ------------------------------------------------------------------------------- clinical plausibility

def test_lab_items_units_and_labels_are_mimic_iv_s(con, demo_db):
    """Templates written on the real demo must find the same items here."""
    with duckdb.connect(str(demo_db), read_only=True) as demo:
        real_units = dict(demo.execute(
            "SELECT itemid, mode(valueuom) FROM labevents GROUP BY 1").fetchall())
        real_labels = dict(demo.execute("SELECT itemid, label FROM d_labitems").fetchall())
    ours = rows(con, "SELECT itemid, list(DISTINCT valueuom), any_value(label) FROM labevents "
                     "JOIN d_labitems USING (itemid) GROUP BY 1")
    for itemid, units, label in ours:
        assert label == real_labels[itemid], itemid
        assert units == [real_units[itemid]] or (units == [None] and real_units[itemid] is None), itemid
    assert one(con, "SELECT label FROM d_labitems WHERE itemid = 50912") == "Creatinine"


def test_icu_items_are_mimic_iv_s(con, demo_db):
    with duckdb.connect(str(demo_db), read_only=True) as demo:
        real = {r[0]: r[1:] for r in demo.execute(
            "SELECT itemid, label, abbreviation, linksto, category, param_type FROM d_items").fetchall()}
    for itemid, *rest in rows(con, "SELECT itemid, label, abbreviation, linksto, category, param_type FROM d_items"):
        assert tuple(rest) == real[itemid], itemid


def test_icd_titles_are_the_real_ones(con, demo_db):
    with duckdb.connect(str(demo_db), read_only=True) as demo:
        for table in ("d_icd_diagnoses", "d_icd_procedures"):
            real = dict(((c, v), t) for c, v, t in demo.execute(
                f"SELECT icd_code, icd_version, long_title FROM {table}").fetchall())
            for code, version, title in rows(con, f"SELECT icd_code, icd_version, long_title FROM {table}"):
                assert real[(code, version)] == title, (table, code, version)


def test_drug_names_routes_and_dose_units_are_mimic_iv_s(con, demo_db):
    with duckdb.connect(str(demo_db), read_only=True) as demo:
        real = set(demo.execute("SELECT DISTINCT drug, route, dose_unit_rx FROM prescriptions").fetchall())
    ours = set(rows(con, "SELECT DISTINCT drug, route, dose_unit_rx FROM prescriptions"))
    assert ours <= real
    assert one(con, "SELECT count(*) FROM prescriptions WHERE route IS NULL OR dose_val_rx IS NULL "
                    "OR dose_unit_rx IS NULL") == 0


def test_units_agree_with_d_items(con):
    for table, column in (("chartevents", "valueuom"), ("outputevents", "valueuom"), ("inputevents", "amountuom")):
        # outputevents write 'ml' where d_items says 'mL', like MIMIC-IV, so compare case-insensitively.
        bad = rows(con, f"SELECT DISTINCT itemid, {column}, unitname FROM {table} JOIN d_items USING (itemid) "
                        f"WHERE unitname IS NOT NULL AND lower({column}) <> lower(unitname) AND {column} <> 'dose'")
        assert bad == [], table


def test_lab_flag_marks_exactly_the_values_outside_the_reference_range(con):
    bad = one(con, "SELECT count(*) FROM labevents WHERE (flag IS NOT DISTINCT FROM 'abnormal') <> "
                   "(valuenum < ref_range_lower OR valuenum > ref_range_upper)")
    assert bad == 0
    assert one(con, "SELECT count(*) FROM labevents WHERE ref_range_lower IS NULL OR ref_range_upper IS NULL") == 0


def test_lab_value_text_is_valuenum(con):
    assert one(con, "SELECT count(*) FROM labevents WHERE CAST(value AS DOUBLE) <> valuenum") == 0
    assert one(con, "SELECT count(*) FROM chartevents WHERE valuenum IS NOT NULL "
                    "AND CAST(value AS DOUBLE) <> valuenum") == 0


def test_lab_values_lie_within_physiological_bounds(con):
    for item in cat.LAB_ITEMS:
        lo, hi = con.execute("SELECT min(valuenum), max(valuenum) FROM labevents WHERE itemid = ?",
                             [item.itemid]).fetchone()
        if lo is not None:
            assert item.dist.low <= lo and hi <= item.dist.high, item.label


def test_vitals_lie_within_physiological_bounds(con):
    bounds = {item: (d.low, d.high) for item, (_, d) in cat.VITALS.items()}
    bounds[cat.TEMP_C] = (33.0, 42.0)
    for item, (low, high) in bounds.items():
        lo, hi = con.execute("SELECT min(valuenum), max(valuenum) FROM chartevents WHERE itemid = ?",
                             [item]).fetchone()
        assert lo is not None and low <= lo and hi <= high, item


def test_blood_pressure_mean_follows_systolic_and_diastolic(con):
    bad = one(con, """SELECT count(*) FROM chartevents s
        JOIN chartevents d ON d.stay_id = s.stay_id AND d.charttime = s.charttime AND d.itemid = 220180
        JOIN chartevents m ON m.stay_id = s.stay_id AND m.charttime = s.charttime AND m.itemid = 220181
        WHERE s.itemid = 220179
          AND (NOT d.valuenum < s.valuenum OR abs(m.valuenum - (s.valuenum + 2 * d.valuenum) / 3) > 1)""")
    assert bad == 0


def test_conditions_shape_lab_values(con):
    """Admissions coded with kidney failure have higher creatinine; diabetics higher glucose."""
    def mean(itemid: int, codes: tuple[str, ...], coded: bool) -> float:
        placeholders = ", ".join(f"'{c}'" for c in codes)
        return one(con, f"""SELECT avg(valuenum) FROM labevents l WHERE itemid = {itemid} AND
            {'' if coded else 'NOT'} EXISTS (SELECT 1 FROM diagnoses_icd d WHERE d.hadm_id = l.hadm_id
                                             AND d.icd_code IN ({placeholders}))""")
    kidney = ("5849", "N179", "5859", "N189")
    assert mean(50912, kidney, True) > 1.5 * mean(50912, kidney, False)
    diabetes = ("25000", "E119")
    assert mean(50931, diabetes, True) > 1.2 * mean(50931, diabetes, False)


def test_output_volumes_are_plausible(con):
    lo, hi = con.execute("SELECT min(value), max(value) FROM outputevents").fetchone()
    assert 0 <= lo and hi <= 1500


# ------------------------------------------------------------------------------------------ richness

def test_some_patients_have_several_admissions(con):
    several = one(con, "SELECT count(*) FROM (SELECT subject_id FROM admissions GROUP BY 1 HAVING count(*) >= 3)")
    assert several >= 10


def test_there_are_admissions_with_and_without_an_icu_stay(con):
    with_icu, total = con.execute("SELECT count(DISTINCT s.hadm_id), count(DISTINCT a.hadm_id) "
                                  "FROM admissions a LEFT JOIN icustays s USING (hadm_id)").fetchone()
    assert 0.1 * total < with_icu < 0.7 * total


def test_some_patients_die_in_hospital_and_some_after_discharge(con):
    in_hospital = one(con, "SELECT count(*) FROM admissions WHERE hospital_expire_flag = 1")
    later = one(con, "SELECT count(*) FROM patients WHERE dod IS NOT NULL AND subject_id NOT IN "
                     "(SELECT subject_id FROM admissions WHERE hospital_expire_flag = 1)")
    assert in_hospital >= 5 and later >= 5


def test_labs_are_repeated_over_time_and_some_are_abnormal(con):
    per_admission = one(con, "SELECT median(n) FROM (SELECT hadm_id, count(DISTINCT charttime) n FROM labevents "
                             "WHERE itemid = 50912 GROUP BY 1)")
    assert per_admission >= 2
    abnormal = one(con, "SELECT avg(CASE WHEN flag = 'abnormal' THEN 1 ELSE 0 END) FROM labevents")
    assert 0.15 < abnormal < 0.7


def test_icu_stays_chart_vitals_every_one_to_four_hours(con):
    gaps = one(con, """SELECT max(gap) FROM (SELECT epoch(charttime - lag(charttime) OVER w) / 3600 AS gap
        FROM chartevents WHERE itemid = 220045 WINDOW w AS (PARTITION BY stay_id ORDER BY charttime))""")
    assert gaps <= 4
    repeated = one(con, "SELECT min(n) FROM (SELECT stay_id, count(*) n FROM chartevents WHERE itemid = 220045 "
                        "GROUP BY 1)")
    assert repeated >= 2


def test_both_icd9_and_icd10_codes_are_used(con):
    assert {r[0] for r in rows(con, "SELECT DISTINCT icd_version FROM diagnoses_icd")} == {9, 10}
    assert {r[0] for r in rows(con, "SELECT DISTINCT icd_version FROM procedures_icd")} == {9, 10}


def test_microbiology_grows_organisms_tested_against_antibiotics(con):
    organisms = one(con, "SELECT count(DISTINCT org_name) FROM microbiologyevents")
    resistant = one(con, "SELECT count(*) FROM microbiologyevents WHERE interpretation = 'R'")
    negative = one(con, "SELECT count(*) FROM microbiologyevents WHERE org_name IS NULL")
    assert organisms >= 4 and resistant > 0 and negative > 0


def test_admissions_get_several_drugs_with_administrations(con):
    several = one(con, "SELECT count(*) FROM (SELECT hadm_id FROM prescriptions GROUP BY 1 "
                       "HAVING count(DISTINCT drug) >= 3)")
    assert several >= 50
    assert one(con, "SELECT count(DISTINCT event_txt) FROM emar") >= 3


def test_every_table_the_templates_need_is_filled_per_patient(con):
    patients_with = {t: one(con, f"SELECT count(DISTINCT subject_id) FROM {t}")
                     for t in ("omr", "labevents", "prescriptions", "diagnoses_icd", "transfers", "services")}
    assert all(n >= 0.8 * SYNTHETIC_PATIENTS for n in patients_with.values()), patients_with


# ------------------------------------------------------------------------------------------ determinism

@pytest.fixture(scope="module")
def synthetic_hashes(synthetic_db) -> dict[str, str]:
    return table_hashes(synthetic_db)


def test_the_same_seed_builds_identical_contents(synthetic_hashes, tmp_path):
    again = tmp_path / "again.duckdb"
    generate_synthetic(again, patients=SYNTHETIC_PATIENTS, seed=SYNTHETIC_SEED)
    assert table_hashes(again) == synthetic_hashes


def test_another_seed_builds_different_contents(synthetic_hashes, tmp_path):
    other = tmp_path / "other.duckdb"
    generate_synthetic(other, patients=SYNTHETIC_PATIENTS, seed=SYNTHETIC_SEED + 1)
    hashes = table_hashes(other)
    differing = [t for t in hashes if hashes[t] != synthetic_hashes[t]]
    assert {"patients", "admissions", "labevents", "chartevents", "provider"} <= set(differing)


def test_a_smaller_build_equals_the_first_chunk_of_a_larger_one(synthetic_db, tmp_path):
    """Chunks draw from their own streams, so adding patients never changes the earlier ones."""
    small = tmp_path / "small.duckdb"
    generate_synthetic(small, patients=CHUNK_PATIENTS, seed=SYNTHETIC_SEED)
    with duckdb.connect(str(small), read_only=True) as s, duckdb.connect(str(synthetic_db), read_only=True) as big:
        for table in ("patients", "admissions", "labevents", "emar"):
            first = s.execute(f"SELECT * FROM {table} ORDER BY row_id").fetchall()
            subjects = [r[0] for r in s.execute("SELECT subject_id FROM patients").fetchall()]
            prefix = big.execute(f"SELECT * FROM {table} WHERE subject_id IN (SELECT unnest(?)) ORDER BY row_id",
                                 [subjects]).fetchall()
            assert first == prefix, table


def test_fingerprint_changes_with_patients_and_seed():
    base = synthetic_fingerprint(100, 0)
    assert base == synthetic_fingerprint(100, 0)
    assert base != synthetic_fingerprint(101, 0) and base != synthetic_fingerprint(100, 1)


# ------------------------------------------------------------------------------------------ interface

def test_progress_reports_every_chunk(tmp_path):
    messages: list[str] = []
    generate_synthetic(tmp_path / "p.duckdb", patients=CHUNK_PATIENTS + 5, seed=1, progress=messages.append)
    assert sum("chunk" in m for m in messages) == 2


@pytest.mark.parametrize(("patients", "seed"), [(0, 0), (-3, 0), (10, -1), (2.5, 0)])
def test_bad_parameters_are_refused_and_write_nothing(tmp_path, patients, seed):
    target = tmp_path / "bad.duckdb"
    with pytest.raises(ValueError, match="patients|seed"):
        generate_synthetic(target, patients=patients, seed=seed)
    assert not target.exists()


def test_every_generated_itemid_is_one_the_catalog_declares_used(con):
    used = used_itemids()
    icu = {r[0] for t in ("chartevents", "datetimeevents", "inputevents", "ingredientevents", "outputevents",
                          "procedureevents") for r in rows(con, f"SELECT DISTINCT itemid FROM {t}")}
    assert icu <= used["d_items"]
    assert {r[0] for r in rows(con, "SELECT DISTINCT itemid FROM labevents")} <= used["d_labitems"]


def test_contents_do_not_depend_on_python_hash_randomisation(tmp_path):
    """Set iteration order changes with PYTHONHASHSEED; a build must not."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    hashes = []
    for hash_seed in ("1", "2"):
        db = tmp_path / f"h{hash_seed}.duckdb"
        subprocess.run([sys.executable, "-c", "import sys; from pipeline.synthetic import generate_synthetic; "
                        "generate_synthetic(sys.argv[1], patients=20, seed=5)", str(db)],
                       cwd=repo, env={**os.environ, "PYTHONHASHSEED": hash_seed}, check=True)
        hashes.append(table_hashes(db))
    assert hashes[0] == hashes[1]


# ------------------------------------------------------------------------------------------ writer

@pytest.fixture()
def writer():
    from pipeline.schema import table
    from pipeline.synthetic.writer import TableWriter

    con = duckdb.connect()
    yield TableWriter(con, [table("d_labitems"), table("patients")])
    con.close()


def test_writer_names_an_unknown_column(writer):
    with pytest.raises(KeyError, match="d_labitems has no column.*unit"):
        writer.append("d_labitems", {"itemid": [1], "unit": ["mg"]})


def test_writer_refuses_nulls_in_a_not_null_column(writer):
    import numpy as np

    with pytest.raises(ValueError, match="patients.gender is NOT NULL"):
        writer.append("patients", {"subject_id": np.array([1, 2]), "gender": ["F", None], "anchor_year": 2150,
                                   "anchor_year_group": "2011 - 2013"})


def test_writer_refuses_columns_of_different_lengths(writer):
    import numpy as np

    with pytest.raises(ValueError, match="different lengths"):
        writer.append("d_labitems", {"itemid": np.array([1, 2]), "label": ["a"]})


def test_writer_numbers_rows_across_appends_and_converts_times(writer):
    import numpy as np

    from pipeline.synthetic.writer import Categorical, masked

    for first in (0, 2):
        writer.append("patients", {
            "subject_id": np.array([first, first + 1]), "gender": Categorical(np.array([0, 1]), ["F", "M"]),
            "anchor_year": 2150, "anchor_year_group": "2011 - 2013",
            "dod": masked(np.array([0, 86_400 * 3]), np.array([True, False]))})
    writer.flush()
    got = writer.con.execute("SELECT row_id, subject_id, gender, CAST(dod AS VARCHAR) FROM patients "
                             "ORDER BY row_id").fetchall()
    assert got == [(0, 0, "F", None), (1, 1, "M", "1970-01-04"), (2, 2, "F", None), (3, 3, "M", "1970-01-04")]
