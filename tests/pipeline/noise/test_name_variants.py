"""A false premise's name is no name a reader takes for a recorded one (pipeline.noise.name_variants)."""

import pytest

from pipeline.noise.name_variants import NameVariants, one_slip, words

RECORDED = ["Calcium, Total", "Calculated Total CO2", "Chest X-Ray", "Gamma Glutamyltransferase",
            "Long term (current) use of antibiotics", "I", "Globulin", "PHENObarbital", "Invasive Ventilation",
            "Paroxysmal ventricular tachycardia", "Troponin T", "Factor XI"]


@pytest.fixture(params=["scanned", "indexed"])
def recorded(request, monkeypatch) -> NameVariants:
    """The recorded names, their slips found by scanning the words (a patient's few) or through the index
    of words less one letter (everyone's): the two must agree."""
    monkeypatch.setattr(NameVariants, "INDEXED_WORDS", 10_000 if request.param == "scanned" else 0)
    variants = NameVariants(RECORDED)
    assert (variants._by_deletion is None) == (request.param == "scanned")
    return variants


@pytest.mark.parametrize("name, seen_in", [
    ("Total Calcium", "the same words in another order"),
    ("Long-term (current) use of antibiotics", "the same words, punctuated otherwise"),
    ("Total CO2", "every word within a recorded name"),
    ("X-ray", "every word within a recorded name"),
    ("Paroxysmal tachycardia", "a recorded name is a kind of it"),
    ("Gamma Glutamyltranferase", "a letter dropped"),
    ("Gamma Glutamyltransferasse", "a letter added"),
    ("Gamma Glutamyltrasnferase", "two letters swapped"),
    ("total calcuim", "another order and a slip"),
])
def test_a_name_a_reader_takes_for_a_recorded_one_reads_as_recorded(recorded, name, seen_in):
    assert recorded.read_as_recorded(name), seen_in


@pytest.mark.parametrize("name, why", [
    ("Troponin I", "a recorded name within it ('I') is no reading of it"),
    ("Sex Hormone Binding Globulin", "nor is 'Globulin'"),
    ("Non-invasive Ventilation", "a word more that changes the thing"),
    ("Pentobarbital", "another drug, more than one slip from PHENObarbital"),
    ("Factor IX", "short words a slip apart are other words"),
    ("Renin", "nothing like it is recorded"),
])
def test_another_thing_does_not_read_as_recorded(recorded, name, why):
    assert not recorded.read_as_recorded(name), why


def test_a_slip_is_one_letter_dropped_added_changed_or_two_neighbours_swapped():
    assert one_slip("glutamyl", "glutamy") and one_slip("glutamy", "glutamyl") and one_slip("glutamyl", "glutanyl")
    assert one_slip("glutamyl", "gultamyl")
    assert not one_slip("glutamyl", "glutamyl") and not one_slip("glutamyl", "gulatmyl")
    assert not one_slip("pentobarbital", "phenobarbital") and not one_slip("glutamyl", "glutamylxx")


def test_words_ignore_case_and_punctuation():
    assert words("Calcium, Total") == words("total  CALCIUM") == {"calcium", "total"}
