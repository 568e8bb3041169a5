"""The declarative table of plausible ranges and unit conversions is consistent."""

import pytest

from pipeline.noise import physiology
from pipeline.noise.physiology import MEASURED_ITEMS, UNIT_CONVERSIONS, conversions_for, format_value, measured_item


def test_every_impossible_value_lies_outside_its_plausible_range():
    for m in MEASURED_ITEMS:
        lo, hi = m.plausible
        assert m.impossible and all(not lo <= v <= hi for v in m.impossible), m.name


def test_an_impossible_value_inside_the_range_is_refused_at_import(monkeypatch):
    bad = physiology.MeasuredItem("bad", (("labevents", "1"),), "x", (0.0, 10.0), (5.0,))
    monkeypatch.setattr(physiology, "MEASURED_ITEMS", (bad,))
    monkeypatch.setattr(physiology, "_BY_ITEM", {})
    with pytest.raises(ValueError, match="'bad'.*outside its plausible range"):
        physiology._index()


def test_the_issue_examples_are_covered():
    assert 10000 in measured_item("chartevents", 220045).impossible  # heart rate 10000
    assert 180 in measured_item("chartevents", 220277).impossible  # SpO2 180
    assert any(v < 0 for v in measured_item("chartevents", 224639).impossible)  # negative weight
    assert any(c.unit == "°C" for c in conversions_for("chartevents", 223761, "°F"))  # Fahrenheit vs Celsius
    assert any(c.unit == "g" for c in conversions_for("inputevents", 999, "mg"))  # mg as g


@pytest.mark.parametrize("value", [0.0083, 4.1, 98.6, 1234.5, 250000.0])
def test_every_conversion_converts_back_within_a_millionth(value):
    conversions = [c for m in MEASURED_ITEMS for c in m.conversions] + [c for cs in UNIT_CONVERSIONS.values()
                                                                        for c in cs]
    for c in conversions:
        back = c.invert(float(format_value(c.apply(value))))
        assert abs(back - value) <= 1e-6 * max(1.0, abs(value)), (c, value)


def test_numbers_are_written_without_exponents_or_trailing_zeros():
    assert [format_value(v) for v in (0.000008, 1234567.0, 98.60, -0.0, 5.0)] == \
           ["0.000008", "1234567", "98.6", "0", "5"]
