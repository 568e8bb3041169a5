"""A measurement charted under two labels counts as the patient's under either."""

import duckdb

from pipeline.noise.same_measurement import SAME_MEASUREMENT, measured_alike


def test_a_name_brings_its_other_labels_and_nothing_else():
    alike = measured_alike({"arterial blood pressure mean", "heart rate"})
    assert {"art bp mean", "arterial blood pressure mean", "heart rate"} == alike
    assert "non invasive blood pressure mean" not in alike  # a cuff reading is not an arterial line's
    assert "temperature celsius" in measured_alike({"temperature fahrenheit"})


def test_every_label_grouped_is_a_chart_item_of_the_demo(demo_full_db):
    """A misspelt label would group nothing, silently."""
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        labels = {r[0] for r in con.execute("SELECT label FROM d_items WHERE linksto = 'chartevents'").fetchall()}
    assert {name for group in SAME_MEASUREMENT for name in group} <= labels
