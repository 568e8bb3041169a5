"""The map of lab results the ICU charts a second time holds for the real demo's records."""

from datetime import timedelta

import duckdb

from pipeline.noise.case import SourceLookup
from pipeline.noise.charted_labs import CHARTED_AS, CHARTED_FROM


def _matches(con) -> dict[tuple[int, int], int]:
    """(lab item, chart item) -> chart rows of the pair at the same patient, time and value."""
    rows = con.execute("""
        SELECT l.itemid, c.itemid, count(DISTINCT c.row_id)
        FROM chartevents c JOIN labevents l USING (subject_id, charttime)
        WHERE l.valuenum = c.valuenum GROUP BY ALL""").fetchall()
    return {(lab, chart): n for lab, chart, n in rows}


def test_every_declared_pair_is_a_copy_and_together_they_cover_most_of_each_chart_items_rows(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        matches = _matches(con)
        totals = dict(con.execute("SELECT itemid, count(*) FROM chartevents GROUP BY itemid").fetchall())
        labs_items = {i for (i,) in con.execute("SELECT itemid FROM d_items WHERE category = 'Labs'").fetchall()}
    assert set(CHARTED_FROM) <= labs_items, "a chart item of the map is not a Labs item"
    for chart, labs in CHARTED_FROM.items():
        for lab in labs:
            # 5%: the blood gas hemoglobin is charted under "Hemoglobin" beside the blood count's, in 68 of 912 rows.
            assert matches.get((lab, chart), 0) >= 0.05 * totals[chart], (lab, chart)
        covered = sum(matches.get((lab, chart), 0) for lab in labs)
        assert covered > 0.5 * totals[chart], (chart, covered, totals[chart])


def test_a_lab_result_charted_in_the_icu_has_a_copy_and_one_not_charted_has_none(demo_full_db):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        lookup = SourceLookup(con)
        columns = [d[0] for d in con.execute("SELECT * FROM labevents LIMIT 0").description]

        def first(where: str) -> dict:
            return dict(zip(columns, con.execute(f"SELECT * FROM labevents l WHERE {where} ORDER BY row_id LIMIT 1")
                                        .fetchone()))

        charted = first("itemid = 50971 AND EXISTS (SELECT 1 FROM chartevents c WHERE c.itemid = 227442 "
                        "AND c.subject_id = l.subject_id AND c.charttime = l.charttime)")  # potassium
        assert lookup.recorded_also("labevents", [charted])
        assert lookup.recorded_also("labevents", [{**charted, "valuenum": 99.0}]), "the copy is found by item and time"
        a_minute_later = charted["charttime"] + timedelta(minutes=1)
        assert not lookup.recorded_also("labevents", [{**charted, "charttime": a_minute_later}])
        never = min(set(range(50800, 52500)) - set(CHARTED_AS))
        assert not lookup.recorded_also("labevents", [{**charted, "itemid": never}])
