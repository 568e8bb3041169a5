"""ICU inputs the ward's medication administration record (eMAR) records a second time.

MIMIC-IV charts most ICU doses twice: as an ``inputevents`` row (the ICU's flowsheet) and as an
``emar`` administration of the same admission, often at the same minute ("CefazoLIN Administered 2 g"
at 16:51 beside a Cefazolin input at 17:04). A third review found 33 of 73 hidden ICU inputs there.
Hiding such a row does not make the dose missing, and a second, conflicting charting of it leaves
the administration record to say what was given. The two tables share no key: a dose is matched by
the admission, the drug's first word found in eMAR's name for it (the ICU's "Cefazolin" in eMAR's
"CefazoLIN", its "Insulin - Regular" in "Insulin Regular Human") and an administration within
``WINDOW_HOURS`` of the input's start.
Conservative on purpose: it may count a dose given by another route as a copy, which only leaves a
row alone.
"""

from collections.abc import Iterable

from pipeline.noise.case import SourceLookup
from pipeline.schema import ROW_ID

WINDOW_HOURS = 2
# eMAR events that may record a dose given: all but those that say it was not ("Not Given", "Held"); a
# flush or an assessment beside a dose counts too, which only leaves more rows alone.
GIVEN = ("e.event_txt IS NOT NULL AND e.event_txt NOT ILIKE 'not %' "
         "AND e.event_txt NOT IN ('Held', 'Hold Dose', 'Removed', 'Stopped', 'Stopped - Unscheduled')")
# The drug's first word, as the ICU names it ("Piperacillin/Tazobactam (Zosyn)" -> "piperacillin"), found in
# eMAR's name for it ("Piperacillin-Tazobactam"); words under four letters match too much ("KCl").
FIRST_WORD = r"regexp_extract(lower(trim(d.label)), '^[^\s(/-]+')"


def _given_sql() -> str:
    return (f"SELECT DISTINCT i.{ROW_ID} FROM inputevents AS i JOIN d_items AS d ON d.itemid = i.itemid "
            f"JOIN emar AS e ON e.hadm_id = i.hadm_id "
            f"AND e.charttime BETWEEN i.starttime - INTERVAL {WINDOW_HOURS} HOUR "
            f"AND i.starttime + INTERVAL {WINDOW_HOURS} HOUR "
            f"AND length({FIRST_WORD}) >= 4 AND strpos(lower(e.medication), {FIRST_WORD}) > 0 "
            f"WHERE {GIVEN} AND i.{ROW_ID} IN (SELECT unnest(?))")


def given_in_emar(lookup: SourceLookup, table_name: str, rows: Iterable[dict]) -> frozenset[int]:
    """The ``row_id``s of those ``inputevents`` rows (of ``table_name``; none for another table) whose dose
    eMAR records too. The tasks' evidence rows (``SourceLookup.expect_rows``) are read together, once."""
    ids = {r[ROW_ID] for r in rows}
    if table_name != "inputevents" or not ids or not all(lookup.has_table(t) for t in ("emar", "d_items")):
        return frozenset()
    key = ("given in emar",)
    if key not in lookup.expected_memo:
        expected = sorted({r[ROW_ID] for r in lookup.expected_rows(table_name)})
        lookup.expected_memo[key] = (frozenset(expected), frozenset(
            r for (r,) in lookup.con.execute(_given_sql(), [expected]).fetchall()) if expected else frozenset())
    expected, given = lookup.expected_memo[key]
    if ids <= expected:
        return given & ids
    return frozenset(r for (r,) in lookup.query(("given in emar", tuple(sorted(ids))), _given_sql(), [sorted(ids)]))
