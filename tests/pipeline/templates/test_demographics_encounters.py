"""Demographic questions rest on what the record can say: no age read from MIMIC-IV's age cap, no
transfer count that depends on how "between units" is read."""

import duckdb

from pipeline.templates import REGISTRY
from pipeline.templates.demographics_encounters import AGE_CAP

TEMPLATES = {t.id: t for t in REGISTRY}


def _guard(template_id: str, reason: str):
    return next(g for g in TEMPLATES[template_id].guards if g.reason == reason)


def test_an_age_at_admission_is_never_read_from_the_cap(demo_full_db):
    """Third review: patient 10012853's anchor_age is 91, MIMIC-IV's one value for every age over 89,
    and "How old was the patient at admission" answered 92."""
    template = TEMPLATES["dem_age_at_admission"]
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        admissions = con.execute("SELECT a.subject_id, a.hadm_id, p.anchor_age FROM admissions AS a "
                                 "JOIN patients AS p USING (subject_id) ORDER BY 2").fetchall()
        capped = 0
        for subject, hadm, age in admissions:
            sql = template.render_guard_sql(_guard(template.id, "capped_age"),
                                            {"subject_id": str(subject), "hadm_id": str(hadm)})
            (rejected,), = con.execute(sql).fetchall()
            assert bool(rejected) == (age >= AGE_CAP), (subject, hadm, age)
            capped += age >= AGE_CAP
        assert capped, "the demo has capped patients: the guard was not tried on one"


def test_a_mean_age_never_takes_in_a_capped_patient(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        template = TEMPLATES["dem_pop_mean_age_by_admission_type"]
        for (kind,) in con.execute("SELECT DISTINCT admission_type FROM admissions ORDER BY 1").fetchall():
            sql = template.render_guard_sql(_guard(template.id, "capped_ages"), {"admission_type": kind})
            (rejected,), = con.execute(sql).fetchall()
            (capped,), = con.execute(
                "SELECT count(*) FROM admissions AS a JOIN patients AS p USING (subject_id) "
                "WHERE a.admission_type = ? AND p.anchor_age >= ?", [kind, AGE_CAP]).fetchall()
            assert bool(rejected) == (capped > 0), kind
        assert "capped_ages" in {g.reason for g in TEMPLATES["dx_pop_mean_age_with_diagnosis"].guards}


def test_a_transfer_count_kept_reads_the_same_as_a_count_of_unit_changes(demo_full_db):
    """Third review: 8 of 13 clean transfer counts changed if "transferred between units" is read as
    changes of unit (a move to another bed of the same unit is a transfer event)."""
    template = TEMPLATES["dem_transfer_count"]
    kept = 0
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        for subject, hadm in con.execute("SELECT DISTINCT subject_id, hadm_id FROM transfers "
                                         "WHERE hadm_id IS NOT NULL ORDER BY 2").fetchall():
            slots = {"subject_id": str(subject), "hadm_id": str(hadm)}
            if any(con.execute(template.render_guard_sql(g, slots)).fetchone()[0] for g in template.guards):
                continue
            (events,), = con.execute(template.render_sql(slots)).fetchall()
            # From the admission on: the emergency department before it is not a transfer.
            units = [u for (u,) in con.execute("SELECT careunit FROM transfers WHERE hadm_id = ? "
                                               "AND eventtype IN ('admit', 'transfer') ORDER BY intime",
                                               [hadm]).fetchall()]
            changes = sum(1 for before, after in zip(units, units[1:]) if before != after)
            assert events == changes, (hadm, events, changes)
            kept += 1
        assert kept > 20
