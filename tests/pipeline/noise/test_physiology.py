"""The declarative table of plausible ranges and unit conversions is consistent, and a reading written
in another unit is charted as precisely as it was measured."""

import pytest

from pipeline.noise import physiology
from pipeline.noise.physiology import (MEASURED_ITEMS, UNIT_CONVERSIONS, charted_in_other_unit, charted_like,
                                       conversions_for, format_value, measured_item, recorded_digits)


def test_every_item_has_a_real_range_and_is_described_once():
    seen = set()
    for m in MEASURED_ITEMS:
        lo, hi = m.plausible
        assert lo < hi, m.name
        assert not seen & set(m.items), m.name
        seen |= set(m.items)


def test_an_empty_range_is_refused_at_import(monkeypatch):
    bad = physiology.MeasuredItem("bad", (("labevents", "1"),), "x", (10.0, 10.0))
    monkeypatch.setattr(physiology, "MEASURED_ITEMS", (bad,))
    monkeypatch.setattr(physiology, "_BY_ITEM", {})
    with pytest.raises(ValueError, match="'bad'.*empty"):
        physiology._index()


# Values published for living patients: a twin's "implausible" value must lie beyond every one of them,
# or a reviewer who knows the case report disagrees with its label.
PUBLISHED_EXTREMES = [
    ("labevents", 50912, 73.8),  # creatinine, mg/dL: allograft rejection
    ("labevents", 50882, 82.0),  # bicarbonate, mmol/L: gastric losses through a gastrostomy (PMC5040772)
    ("labevents", 51265, 3700.0),  # platelets, K/uL: essential thrombocythaemia in a child
    ("labevents", 50960, 21.2),  # magnesium, mg/dL (8.71 mmol/L): Epsom salts (Front. Med. 2024)
    ("labevents", 50970, 55.0),  # phosphate, mg/dL (17.75 mmol/L): phosphate enemas (Eur J Pediatr 2009)
    ("labevents", 50931, 2656.0),  # glucose, mg/dL: hyperosmolar state (Guinness, 2008)
    ("labevents", 50971, 14.0),  # potassium, mmol/L: survived intact (South Med J, 2005)
    ("labevents", 50818, 375.0),  # pCO2, mmHg: mask ventilation under anaesthesia, survived (Chest, 1992)
    ("labevents", 50983, 92.0),  # sodium, mmol/L, the lowest: vomiting and diarrhoea on lisinopril and sertraline
    ("chartevents", 220045, 600.0),  # heart rate, bpm: pre-excited atrial fibrillation on telemetry (2012)
    ("chartevents", 223761, 115.7),  # temperature, °F: heatstroke (1980)
    ("chartevents", 223762, 46.5),  # the same in °C
    ("chartevents", 224639, 635.0),  # body weight, kg: the heaviest person recorded
    ("chartevents", 226730, 272.0),  # height, cm: the tallest person recorded
    ("patients", "column:anchor_age", 122.0),  # age, years: the oldest person recorded
]


@pytest.mark.parametrize(("table", "item", "value"), PUBLISHED_EXTREMES)
def test_a_value_published_for_a_living_patient_is_within_its_items_limits(table, item, value):
    lo, hi = measured_item(table, item).plausible
    assert lo <= value <= hi


def test_the_vital_signs_and_units_the_templates_ask_about_are_described():
    assert measured_item("chartevents", 220045).plausible[1] < 1000  # heart rate: 820 (82 shifted) is impossible
    assert measured_item("chartevents", 220277).plausible == (0.0, 100.0)  # SpO2
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


def test_a_reading_written_in_another_unit_keeps_the_digits_it_was_charted_with():
    fahrenheit_to_celsius = next(c for c in conversions_for("chartevents", 223761, "°F") if c.unit == "°C")
    assert charted_in_other_unit(fahrenheit_to_celsius.apply(98.8), 98.8) == 37.1
    assert charted_in_other_unit(438.0 * 0.001, 438.0) == 0.438  # 438 mL as L: every digit kept
    assert charted_in_other_unit(1.6 * 0.3229, 1.6) == 0.517  # never fewer than three digits
    assert charted_in_other_unit(69.0 * 2.20462, 69.0) == 152.0  # 69 kg is not charted 150 lb
    assert charted_in_other_unit(140.0 * 0.133322, 140.0) == 18.7  # a whole number's zeros count


def test_a_second_reading_in_the_same_unit_has_the_first_ones_decimals():
    assert [charted_like(v, r) for v, r in ((106.6, 82.0), (47.04, 29.4), (0.585, 0.45))] == [107.0, 47.0, 0.58]
    assert recorded_digits(0.05) == (1, 2) and recorded_digits(140.0) == (3, 0) and recorded_digits(1e-7) == (1, 7)


def test_an_end_keyed_wrong_keeps_the_first_two_digits_of_its_year():
    """Third review: 90 of 145 ends typed wrong read like 1245 for 2145, a year no date field accepts."""
    from datetime import datetime

    from pipeline.noise.value_errors import _end_typed_wrong

    start = datetime(2154, 3, 9, 14, 0)
    for end in (datetime(2154, 3, 10, 9, 30), datetime(2154, 3, 12, 18, 0), datetime(2145, 6, 1)):
        for wrong in _end_typed_wrong(end, start if end > start else datetime(2160, 1, 1)):
            assert str(wrong.year)[:2] == str(end.year)[:2], (end, wrong)
    # A slip in the last two digits still makes one: 2154 keyed 2145.
    assert any(w.year == 2145 for w in _end_typed_wrong(datetime(2154, 3, 10), datetime(2150, 1, 1)))


def test_swapped_or_doubled_digits_are_written_back_as_they_were_keyed():
    """Review: 15 of the demo's 46 transposed digits read as a digit dropped: a chloride of 105 keyed
    "015" is stored as 15, a pCO2 of 40 keyed "04" as 4. What is written must show the swap."""
    from pipeline.noise.physiology import format_value
    from pipeline.noise.value_errors import _doubled_digit, _transposed_digits

    for value in (105.0, 40.0, 70.5, 102.1, 0.05, 1.05, 52.5, 20.0, -12.5, 100.0):
        text = format_value(abs(value))
        for wrong in _transposed_digits(value, None):
            keyed = format_value(abs(wrong))
            assert len(keyed) == len(text) and sorted(keyed) == sorted(text), (value, wrong)
            moved = [i for i, (a, b) in enumerate(zip(keyed, text)) if a != b]
            assert len(moved) == 2 and moved[1] == moved[0] + 1, (value, wrong)  # two neighbours swapped
        for wrong in _doubled_digit(value, None):
            keyed = format_value(abs(wrong))
            assert len(keyed) == len(text) + 1 and any(keyed[:i] + keyed[i + 1:] == text for i in range(len(keyed)))
    assert _transposed_digits(105.0, None) == [150.0] and _transposed_digits(102.1, None) == [120.1]
    assert _transposed_digits(40.0, None) == [] and 0.5 not in _doubled_digit(0.5, None)


def test_a_decimal_point_slips_one_place_never_two():
    """Fourth review: an age of 57 charted 5700, a heart rate of 89 as 8900 and a systolic pressure of
    111 as 11100 (182 of 1,138 implausible twins): two places off a whole number is two zeros nobody
    keys, the heart rate of 10000 no real record shows; one place is one slip (89 keyed 890). Two places
    within the digits (1.23 as 123) is the decimal point lost, a mechanism of its own."""
    from pipeline.noise.value_errors import _decimal_point_lost, _decimal_shift

    for value in (57.0, 89.0, 111.0, 4.2, 98.6, 0.05, 1.23):
        assert sorted(_decimal_shift(value, None)) == pytest.approx(sorted([value / 10, value * 10]))
    assert _decimal_point_lost(1.23, None) == [123.0] and _decimal_point_lost(89.0, None) == []
