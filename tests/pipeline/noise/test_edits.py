"""How a changed value is written in the row's text column."""

from pipeline.noise.edits import mirror_text


def test_a_second_reading_in_the_same_unit_keeps_the_decimals_the_column_shows():
    assert mirror_text("100", "91.0") == "100.0"
    assert mirror_text("5.1", "4.10") == "5.10"


def test_a_reading_in_another_unit_has_that_units_digits_and_only_the_whole_numbers_point_zero():
    """Second review: white cell counts of 4.10 K/uL written "4100.00" per uL."""
    assert mirror_text("4100", "4.10", other_unit=True) == "4100"
    assert mirror_text("37.1", "98.8", other_unit=True) == "37.1"
    assert mirror_text("152", "69.0", other_unit=True) == "152.0"


def test_a_redacted_text_stays_redacted():
    assert mirror_text("4100", "___", other_unit=True) == "___"
