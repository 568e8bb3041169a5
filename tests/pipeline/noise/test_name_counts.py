"""A premise's name count (or count of refining names) read from the per-source tallies is the count its
stored SQL gives."""

from contextlib import contextmanager

import duckdb
import pytest

from pipeline.noise.name_counts import NameCount, NameCounts, RefinementCount
from pipeline.noise.names import NAME_SOURCES
from pipeline.noise.registry import PremiseFact
from pipeline.patching import patched
from pipeline.task_model import Patch, RowRef


def _sql_count(con, sql: str) -> int:
    (n,), = con.execute(sql).fetchall()
    return int(n or 0)


@contextmanager
def _reading(db):
    """A connection to ``db``, its first 40 patients and its name tallies."""
    with duckdb.connect(str(db), read_only=True) as con:
        yield con, [r[0] for r in con.execute("SELECT subject_id FROM patients ORDER BY subject_id LIMIT 40").fetchall()], \
            NameCounts(con)


def _present_sources(con):
    """(source, its recorded names sorted) for every name source whose tables the database has."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    for source in NAME_SOURCES:
        if all(t in tables for t in source.tables):
            yield source, sorted(r[0] for r in con.execute(source.names_sql()).fetchall() if r[0] is not None)


@pytest.mark.parametrize("db_name", ["demo_full_db", "synthetic_db"])
def test_every_sources_tallies_give_what_exact_count_sql_gives(db_name, request):
    with _reading(request.getfixturevalue(db_name)) as (con, subjects, counts):
        compared = nonzero = 0
        for source, recorded in _present_sources(con):
            names = recorded[:3] + recorded[-3:] + ["No such name at all"]
            names += [f"  {n.upper()} " for n in recorded[:2]]  # case and spaces aside, as the SQL compares
            if source.dictionary is not None:
                table, column = source.dictionary
                names += [r[0] for r in con.execute(f'SELECT "{column}" FROM "{table}" ORDER BY 1 LIMIT 3').fetchall()]
            for value in names:
                for subject in (None, *subjects[::13]):
                    for recorded_only in (False, True):
                        asked = NameCount(source, value, subject, recorded_only)
                        expected = _sql_count(con, asked.sql)
                        assert counts.count(asked) == expected, (source.events, value, subject, recorded_only)
                        compared += 1
                        nonzero += expected > 0
        assert compared > 500 and nonzero > 50, (compared, nonzero)


@pytest.mark.parametrize("db_name", ["demo_full_db", "synthetic_db"])
def test_every_sources_refining_names_count_what_refinements_sql_gives(db_name, request):
    with _reading(request.getfixturevalue(db_name)) as (con, subjects, counts):
        compared = several = 0
        for source, recorded in _present_sources(con):
            # General names: the first word of recorded names (which several may refine), a whole name,
            # a name in other case and spacing, a prefix inside a word, and a name recorded nowhere.
            generals = sorted({n.split()[0].strip(",(") for n in recorded[::7] if n.split()})[:12]
            generals += recorded[:2] + [f"  {n[:4].upper()} " for n in recorded[:2]] + ["No such name"]
            for value in generals:
                for subject in (None, *subjects[::13]):
                    asked = RefinementCount(source, value, subject)
                    expected = _sql_count(con, asked.sql)
                    assert counts.count(asked) == expected, (source.events, value, subject)
                    compared += 1
                    several += expected >= 2
        assert compared > 300 and several >= 10, (compared, several)


def test_the_tallies_read_the_source_as_it_is_while_a_patch_is_laid(demo_full_db):
    """A patch laid on the prover's connection (a record twin's) does not leak into the tallies."""
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        source = next(s for s in NAME_SOURCES if s.events_table == "prescriptions")
        subject, drug, row_id = con.execute("SELECT subject_id, drug, row_id FROM prescriptions "
                                            "ORDER BY row_id LIMIT 1").fetchone()
        asked = NameCount(source, drug, subject, recorded=True)
        before = _sql_count(con, asked.sql)
        hide = Patch(hide=tuple(RowRef("prescriptions", r) for (r,) in con.execute(
            "SELECT row_id FROM prescriptions WHERE subject_id = ? AND drug = ?", [subject, drug]).fetchall()))
        with patched(con, hide):
            assert _sql_count(con, asked.sql) == 0
            assert NameCounts(con).count(asked) == before > 0


def test_a_premise_naming_a_count_must_carry_that_counts_sql():
    source = NAME_SOURCES[0]
    asked = NameCount(source, "Glucose")
    assert PremiseFact("named", asked.sql, "==", 0, counted=asked).counted is asked
    with pytest.raises(ValueError, match="not the count it names"):
        PremiseFact("named", NameCount(source, "Sodium").sql, "==", 0, counted=asked)


@pytest.mark.parametrize("db_name", ["demo_full_db", "synthetic_db"])
def test_expected_patients_read_together_give_what_one_patient_at_a_time_gives(db_name, request):
    """The builder names the patients its tasks ask about: each source's events and recorded names of
    all of them are read in one scan, and each patient's are those its own query gives (a patient
    without events in a source included); a patient not expected is read alone, as before."""
    from pipeline.noise.case import SourceLookup
    from pipeline.noise.names import recorded_names

    with _reading(request.getfixturevalue(db_name)) as (con, subjects, counts):
        expected, outsider = subjects[:30], subjects[35]
        counts.expect(expected)
        lookup = SourceLookup(con)
        lookup.expected_subjects = frozenset(expected)
        compared = empty = 0
        for source, _ in _present_sources(con):
            for subject in [*expected[::7], outsider]:
                conds = [c for c in (source.where, f"e.subject_id = {subject}") if c]
                by_sql = {n: k for n, k in con.execute(
                    f"SELECT lower(trim({source.name})), count(*) FROM {source.events} WHERE {' AND '.join(conds)} "
                    f"GROUP BY 1").fetchall() if n is not None}
                assert dict(counts._subject_events(source, subject)) == by_sql, (source.events, subject)
                names = {r[0] for r in con.execute(source.names_sql(subject)).fetchall() if r[0] is not None}
                assert recorded_names(lookup, source, subject) == names, (source.events, subject)
                compared += 1
                empty += not names
            assert all((source, s) in counts._of_subject for s in expected)  # read together
        assert compared >= 20 and empty >= 1, (compared, empty)


class _Counting:
    """A connection that counts the statements asked of it."""

    def __init__(self, con):
        self.con, self.statements = con, 0

    def execute(self, *args):
        self.statements += 1
        return self.con.execute(*args)


def test_a_name_is_folded_as_duckdb_folds_it_and_an_ascii_name_without_asking_duckdb():
    from pipeline.noise.names import folded_as_sql

    ascii_names = ["  Heart Rate ", "\tGlucose\t", "pH \n", "WBC", "Hemoglobin  A2", " ", ""]
    other = ["Ä Ö é ", "İstanbul", "a\u00a0", "\u00a0Na\u00a0", "ǅ"]
    with duckdb.connect() as con:
        counting = _Counting(con)
        for name in ascii_names + other:
            (expected,), = con.execute("SELECT lower(trim(?))", [name]).fetchall()
            assert folded_as_sql(counting, name) == expected, repr(name)
    assert counting.statements == len(other)
