"""One injector per noise type, registered once, each declaring where its noise makes sense."""

import pytest

from pipeline.noise import injector, injectors, register
from pipeline.noise.registry import Applicability, Injector
from pipeline.vocabulary import NOISE_LEVEL_OF, Level, NoiseType, Operation


def test_every_noise_type_has_exactly_one_injector_at_its_level():
    assert [i.noise_type for i in injectors()] == list(NoiseType)
    for inj in injectors():
        assert inj.level is NOISE_LEVEL_OF[inj.noise_type]
        assert inj.applies.note, f"{inj.noise_type}: say where the noise does not apply and why"


def test_registering_a_noise_type_twice_is_an_error():
    class Again(Injector):
        noise_type = NoiseType.MISSING_EVIDENCE
        applies = Applicability()
        status = injector(NoiseType.MISSING_EVIDENCE).status

        def drafts(self, case, lookup, rng):
            return iter(())

    with pytest.raises(ValueError, match="already registered"):
        register(Again)
    assert type(injector(NoiseType.MISSING_EVIDENCE)).__name__ == "MissingEvidence"


def test_an_unknown_noise_type_is_named_in_the_error():
    with pytest.raises(KeyError, match="no injector registered for noise type 'typo'"):
        injector("typo")


def test_counts_and_yes_no_questions_get_no_missing_evidence_or_false_premise_twins():
    for noise_type in (NoiseType.MISSING_EVIDENCE, NoiseType.FALSE_PREMISE):
        ops = injector(noise_type).applies.operations
        assert Operation.COUNT not in ops and Operation.EXISTENCE not in ops


def test_a_cohort_count_gets_no_conflicting_duplicate_but_a_patient_count_may():
    excluded = injector(NoiseType.CONFLICTING_DUPLICATE).applies.excluded
    assert (Level.POPULATION, Operation.COUNT) in excluded
    assert (Level.PATIENT, Operation.COUNT) not in excluded


def test_value_noise_needs_the_measured_value_the_answer_rests_on():
    for noise_type in (NoiseType.IMPLAUSIBLE_VALUE, NoiseType.UNIT_MISMATCH):
        assert injector(noise_type).applies.needs_measure


def test_every_drop_reason_is_one_the_builder_gives_and_the_architecture_names():
    # A reason nothing produces misleads the reader of a drop report, and one the docs omit goes unexplained.
    from pathlib import Path

    from pipeline.noise.registry import DropReason

    repo = Path(__file__).resolve().parents[3]
    source = "".join(p.read_text() for p in (repo / "pipeline" / "noise").glob("*.py") if p.name != "registry.py")
    docs = (repo / "docs" / "architecture.md").read_text()
    for reason in DropReason:
        assert f"DropReason.{reason.name}" in source, f"{reason.value}: nothing drops a candidate for it"
        assert f"`{reason.value}`" in docs, f"{reason.value}: docs/architecture.md does not name it"
