"""The fact reader's batched reads give exactly what the per-patient SQL they replace gives."""

import duckdb

from pipeline.noise.names import NAME_SOURCES
from pipeline.noise.record_facts import _NameIndex


def test_the_names_read_for_every_patient_at_once_are_each_patients_own_recorded_names(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        subjects = [r[0] for r in con.execute("SELECT subject_id FROM patients ORDER BY subject_id").fetchall()]
        absent = max(subjects) + 1
        compared = 0
        for source in NAME_SOURCES:
            if not all(t in tables for t in source.tables):
                continue
            index = _NameIndex(con, source)
            assert not index.recorded_for("no such name", subjects[0])  # reads every patient's names
            for subject in [*subjects, absent]:
                one_by_one = {r[0].strip().casefold() for r in con.execute(source.names_sql(subject)).fetchall()
                              if r[0] is not None}
                assert {n for n in one_by_one if index.recorded_for(n, subject)} == one_by_one, (source.events, subject)
                assert index.by_subject.get(subject, set()) == one_by_one, (source.events, subject)
                compared += 1
        assert compared > len(subjects) * 10  # most sources are present in the demo with chartevents
