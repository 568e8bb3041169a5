"""How many entries carry a name, read once per name source instead of once per question.

A query-level twin's premise is proven by counts of entries named something (a made-up drug in no
table, a lab test this patient never had, a general name no dictionary lists):
``NameSource.exact_count_sql``, a scan of the event table with a string comparison per row. Asked
for thousands of twins, that is thousands of scans, each of the whole table at full MIMIC-IV scale.
``NameCounts`` answers the same count from per-source tallies: every name's events and dictionary
entries, grouped once, and one patient's events, grouped once per patient asked about (a table
stored by patient reads that in a few row groups; the patients a build's tasks name, ``expect``,
together in one grouped scan). An ambiguous reference's premise counts the
recorded names that refine a general one (``NameSource.refinements_sql``), a scan with a string
function per row; ``RefinementCount`` answers it from each source's distinct names, read once (once per
patient asked about), the few that begin with the general name tested by the same SQL condition. The
premise keeps its SQL, which the proof stores so a reader can re-run it; tests hold the tallies to that
SQL.
"""

import bisect

from collections import Counter
from dataclasses import dataclass

import duckdb

from pipeline.noise.names import NameSource, folded_as_sql, refines_condition


@dataclass(frozen=True)
class NameCount:
    """The count ``source.exact_count_sql(value, subject_id, recorded=recorded)`` gives."""

    source: NameSource
    value: str
    subject_id: int | None = None
    recorded: bool = False

    @property
    def sql(self) -> str:
        return self.source.exact_count_sql(self.value, self.subject_id, recorded=self.recorded)


@dataclass(frozen=True)
class RefinementCount:
    """The count ``SELECT count(*) FROM (source.refinements_sql(value, subject_id))`` gives: how many
    recorded names (of one patient, if given) refine ``value``."""

    source: NameSource
    value: str
    subject_id: int | None = None

    @property
    def sql(self) -> str:
        return f"SELECT count(*) FROM ({self.source.refinements_sql(self.value, self.subject_id)})"


class NameCounts:
    """Name counts on the unpatched source database behind ``con``."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        # A cursor of its own: patch views another caller lays on ``con`` are not seen from it.
        self.con = con.cursor()
        self._events: dict[NameSource, Counter] = {}
        self._listed: dict[NameSource, Counter] = {}
        self._of_subject: dict[tuple[NameSource, int], Counter] = {}
        self._folded: dict[str, str] = {}
        self._names: dict[tuple[NameSource, int | None], tuple[list[str], list[str]]] = {}
        self._expected: frozenset[int] = frozenset()

    def expect(self, subjects) -> None:
        """The patients the coming counts are about: the first count of one of them in a source reads
        every expected patient's events in that source together (one grouped scan, not one each)."""
        self._expected = frozenset(int(s) for s in subjects if s is not None)

    def count(self, asked: NameCount | RefinementCount) -> int:
        if isinstance(asked, RefinementCount):
            return self._refinements(asked)
        source, subject = asked.source, asked.subject_id
        key = self._fold(asked.value)
        if subject is not None:
            return self._subject_events(source, int(subject))[key]
        n = self._all_events(source)[key]
        if not asked.recorded and source.dictionary is not None:
            n += self._dictionary(source)[key]
        return n

    def _fold(self, value: str) -> str:
        if value not in self._folded:
            self._folded[value] = folded_as_sql(self.con, value)
        return self._folded[value]

    def _grouped(self, sql: str) -> Counter:
        return Counter({name: n for name, n in self.con.execute(sql).fetchall() if name is not None})

    def _all_events(self, source: NameSource) -> Counter:
        if source not in self._events:
            where = f" WHERE {source.where}" if source.where else ""
            self._events[source] = self._grouped(
                f"SELECT lower(trim({source.name})), count(*) FROM {source.events}{where} GROUP BY 1")
        return self._events[source]

    def _dictionary(self, source: NameSource) -> Counter:
        if source not in self._listed:
            table, column = source.dictionary
            where = f" WHERE {source.dictionary_where}" if source.dictionary_where else ""
            self._listed[source] = self._grouped(
                f'SELECT lower(trim("{column}")), count(*) FROM "{table}"{where} GROUP BY 1')
        return self._listed[source]

    def _subject_events(self, source: NameSource, subject: int) -> Counter:
        if (source, subject) not in self._of_subject and subject in self._expected:
            asked = sorted(s for s in self._expected if (source, s) not in self._of_subject)
            conds = [c for c in (source.where, "e.subject_id IN (SELECT unnest(?))") if c]
            found: dict[int, Counter] = {s: Counter() for s in asked}
            for who, name, n in self.con.execute(
                    f"SELECT e.subject_id, lower(trim({source.name})), count(*) FROM {source.events} "
                    f"WHERE {' AND '.join(conds)} GROUP BY 1, 2", [asked]).fetchall():
                if name is not None:
                    found[who][name] = n
            self._of_subject.update(((source, who), counts) for who, counts in found.items())
        if (source, subject) not in self._of_subject:
            conds = [c for c in (source.where, f"e.subject_id = {subject}") if c]
            self._of_subject[(source, subject)] = self._grouped(
                f"SELECT lower(trim({source.name})), count(*) FROM {source.events} "
                f"WHERE {' AND '.join(conds)} GROUP BY 1")
        return self._of_subject[(source, subject)]

    def _refinements(self, asked: RefinementCount) -> int:
        folded, trimmed = self._distinct_names(asked.source, asked.subject_id)
        v = self._fold(asked.value)
        # A refining name begins with the general one: the names sorted by their folded form that do.
        first = bisect.bisect_left(folded, v)
        last = first
        while last < len(folded) and folded[last].startswith(v):
            last += 1
        if first == last:
            return 0
        (n,), = self.con.execute(
            f"SELECT count(DISTINCT t) FROM (SELECT unnest(?) AS t) WHERE {refines_condition('t', asked.value)}",
            [trimmed[first:last]]).fetchall()
        return int(n)

    def _distinct_names(self, source: NameSource, subject: int | None) -> tuple[list[str], list[str]]:
        """Every recorded name as (lower(trim(name)) sorted, trim(name) in the same order)."""
        key = (source, None if subject is None else int(subject))
        if key not in self._names:
            rows = sorted(self.con.execute(source.trimmed_names_sql(key[1])).fetchall(), key=lambda r: (r[1], r[0]))
            self._names[key] = ([f for _, f in rows], [t for t, _ in rows])
        return self._names[key]
