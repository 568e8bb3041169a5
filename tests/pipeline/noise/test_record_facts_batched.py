"""The fact reader's shortcuts give exactly what the SQL they replace gives: names read once per source
and per patient (the expected patients' together), and the floor that spares a query when a patch hides
or rewrites a few named rows."""

import duckdb

from pipeline.noise.names import NAME_SOURCES
from pipeline.noise.record_facts import FactReader, _NameIndex
from pipeline.patching import patched
from pipeline.templates import REGISTRY
from pipeline.vocabulary import Level, NoiseLevel


def _count(con, sql: str) -> int:
    (n,), = con.execute(sql).fetchall()
    return int(n or 0)


def test_a_patients_names_read_once_are_their_recorded_names_with_their_event_counts(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        subjects = [r[0] for r in con.execute("SELECT subject_id FROM patients ORDER BY subject_id").fetchall()]
        absent = max(subjects) + 1
        compared = 0
        for source in NAME_SOURCES:
            if not all(t in tables for t in source.tables):
                continue
            index = _NameIndex(con, source)
            for subject in [*subjects[::9], absent]:
                one_by_one = {r[0].strip().casefold() for r in con.execute(source.names_sql(subject)).fetchall()
                              if r[0] is not None}
                assert {n for n in one_by_one if index.recorded_for(n, subject)} == one_by_one, (source.events, subject)
                assert set(index.of_subject(subject)) == one_by_one, (source.events, subject)
                for name in sorted(one_by_one)[:3]:
                    assert index.events(name, subject) == _count(
                        con, source.exact_count_sql(name, subject, recorded=True)), (source.events, subject, name)
                compared += 1
            for name in sorted(index.recorded)[:5]:
                assert index.events(name) == _count(con, source.exact_count_sql(name, recorded=True)), name
        assert compared > len(subjects[::9]) * 10  # most sources are present in the demo with chartevents


def test_expected_patients_names_read_together_are_what_one_patient_at_a_time_reads(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        subjects = [r[0] for r in con.execute("SELECT subject_id FROM patients ORDER BY subject_id").fetchall()]
        expected = frozenset([*subjects[::3], max(subjects) + 1])  # one patient the database does not have
        compared = with_names = 0
        for source in NAME_SOURCES:
            if not all(t in tables for t in source.tables):
                continue
            together, alone = _NameIndex(con, source, expected), _NameIndex(con, source)
            for subject in [*subjects[::3], max(subjects) + 1, subjects[1]]:  # the last one is not expected
                assert together.of_subject(subject) == alone.of_subject(subject), (source.events, subject)
                compared += 1
                with_names += bool(alone.of_subject(subject))
        assert compared > 100 and with_names > 50, (compared, with_names)


def test_the_names_a_patched_record_shows_are_those_its_sql_counts_give(built):
    """For every record-level twin that hides or rewrites named rows, the reader's name facts (which
    skip the query when the unpatched counts exceed the rows the patch changes) equal the facts read
    by SQL under the twin's patch."""
    db, _, result = built
    twins = [t for t in result.twins if t.noise_level is not NoiseLevel.QUERY and (t.patch.hide or t.patch.update)]
    assert twins
    con = duckdb.connect(str(db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    catalog = con.execute("SELECT current_database()").fetchone()[0]
    checked = spared = 0
    for twin in twins:
        template = REGISTRY.get(twin.template_id)
        named = [(s.name, s.value, kind) for s in twin.slots
                 for name, kind in template.slots.items() if name == s.name]
        sources = {(n, v): [src for src in reader._sources(k)] for n, v, k in named if reader._sources(k)}
        if not any(reader._changes_names(src, twin.patch) for srcs in sources.values() for src in srcs):
            continue
        facts = {f.slot: f for f in reader.facts(twin).names}
        subject = twin.subject_id if twin.level is Level.PATIENT else None
        with patched(con, twin.patch, catalog):
            for (slot, value), srcs in sources.items():
                if slot not in facts:
                    continue  # a premise (a missing entity) decided before the names were read
                known = any(_count(con, src.exact_count_sql(value)) for src in srcs)
                recorded = any(_count(con, src.exact_count_sql(value, subject, recorded=True)) for src in srcs)
                assert (facts[slot].known, facts[slot].recorded) == (known, known and recorded), (twin.task_id, slot)
                checked += 1
                spared += any(reader._index(src).events(value, subject) > reader._rows_changed(src, twin.patch)
                              for src in srcs)
    assert checked >= 10 and spared >= 5, (checked, spared)


def test_a_twins_trusted_evidence_gives_the_facts_its_evidence_query_gives(built):
    """The builder's twins keep their clean task's evidence; where the patch rewrites no column the
    evidence query reads, the reader takes that evidence instead of running the query: the facts (and
    the anomalies found in that scope) are the same either way."""
    db, _, result = built
    twins = [t for t in result.twins if t.noise_level is not NoiseLevel.QUERY]
    con = duckdb.connect(str(db), read_only=True)
    reader = FactReader(con, REGISTRY.get)
    trusted = 0
    for twin in twins:
        template = REGISTRY.get(twin.template_id)
        slots = {s.name: s.value for s in twin.slots}
        if reader.reads.unread_by((template.id, "evidence_sql"), template.render_evidence_sql(slots), twin.patch):
            trusted += 1
        assert reader.facts(twin, trust_evidence=True) == reader.facts(twin), twin.task_id
    assert trusted >= 10, trusted
