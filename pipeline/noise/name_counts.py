"""How many entries carry a name, read once per name source instead of once per question.

A query-level twin's premise is proven by counts of entries named something (a made-up drug in no
table, a lab test this patient never had, a general name no dictionary lists):
``NameSource.exact_count_sql``, a scan of the event table with a string comparison per row. Asked
for thousands of twins, that is thousands of scans, each of the whole table at full MIMIC-IV scale.
``NameCounts`` answers the same count from per-source tallies: every name's events and dictionary
entries, grouped once, and one patient's events, grouped once per patient asked about (a table
stored by patient reads that in a few row groups). The premise keeps its SQL, which the proof stores
so a reader can re-run it; tests hold the tallies to that SQL.
"""

from collections import Counter
from dataclasses import dataclass

import duckdb

from pipeline.noise.names import NameSource


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


class NameCounts:
    """Name counts on the unpatched source database behind ``con``."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        # A cursor of its own: patch views another caller lays on ``con`` are not seen from it.
        self.con = con.cursor()
        self._events: dict[NameSource, Counter] = {}
        self._listed: dict[NameSource, Counter] = {}
        self._of_subject: dict[tuple[NameSource, int], Counter] = {}
        self._folded: dict[str, str] = {}

    def count(self, asked: NameCount) -> int:
        source, subject = asked.source, asked.subject_id
        key = self._fold(asked.value)
        if subject is not None:
            return self._subject_events(source, int(subject))[key]
        n = self._all_events(source)[key]
        if not asked.recorded and source.dictionary is not None:
            n += self._dictionary(source)[key]
        return n

    def _fold(self, value: str) -> str:
        # DuckDB's own lower(trim(...)), as the SQL compares: Python's case mapping is not quite it.
        if value not in self._folded:
            (self._folded[value],), = self.con.execute("SELECT lower(trim(?))", [value]).fetchall()
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
        if (source, subject) not in self._of_subject:
            conds = [c for c in (source.where, f"e.subject_id = {subject}") if c]
            self._of_subject[(source, subject)] = self._grouped(
                f"SELECT lower(trim({source.name})), count(*) FROM {source.events} "
                f"WHERE {' AND '.join(conds)} GROUP BY 1")
        return self._of_subject[(source, subject)]
