"""The mix config: shares per level and type, whole-number targets, and the realised mix report."""

from collections import Counter

import pytest

from pipeline.noise import DEFAULT_TARGET_PAIRS, Mix, NoiseConfig, targets
from pipeline.vocabulary import NOISE_LEVEL_OF, Intent, Level, NoiseLevel, NoiseType


def test_default_targets_split_5486_pairs_equally_over_levels_then_types():
    goal = targets(NoiseConfig())
    assert sum(goal.values()) == DEFAULT_TARGET_PAIRS == 5486
    per_level = Counter()
    for t, n in goal.items():
        per_level[NOISE_LEVEL_OF[t]] += n
    assert max(per_level.values()) - min(per_level.values()) <= 1
    assert goal[NoiseType.IMPLAUSIBLE_VALUE] > goal[NoiseType.MISSING_EVIDENCE] > goal[NoiseType.FALSE_PREMISE]


def test_configured_shares_are_followed():
    config = NoiseConfig(target_pairs=100, level_shares={"record": 1.0, "value": 0.0, "query": 0.0},
                         type_shares={"missing_evidence": 0.5, "conflicting_duplicate": 0.25,
                                      "orphaned_record": 0.25})
    goal = targets(config)
    assert goal[NoiseType.MISSING_EVIDENCE] == 50 and goal[NoiseType.ORPHANED_RECORD] == 25
    assert goal[NoiseType.UNIT_MISMATCH] == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"level_shares": {"record": 0.5, "value": 0.2, "query": 0.2}}, "level_shares must sum to 1"),
    ({"type_shares": {t: 0.1 for t in NoiseType}}, "type_shares of level record must sum to 1"),
    ({"target_pairs": -1}, "target_pairs must be >= 0"),
    ({"level_shares": {"recrd": 1.0}}, "'recrd' is not a valid NoiseLevel"),
])
def test_an_inconsistent_config_is_refused_with_what_is_wrong(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NoiseConfig(**kwargs)


def test_the_mix_reports_counts_per_cell_and_drift_from_the_targets():
    counts = Counter({(Intent.LABORATORY, Level.PATIENT, NoiseLevel.RECORD, NoiseType.MISSING_EVIDENCE): 3,
                      (Intent.DIAGNOSES, Level.POPULATION, NoiseLevel.QUERY, NoiseType.FALSE_PREMISE): 1})
    mix = Mix(counts, {NoiseType.MISSING_EVIDENCE: 2, NoiseType.FALSE_PREMISE: 2}, tolerance=0.1)
    assert mix.total == 4 and mix.by("noise_type")[NoiseType.MISSING_EVIDENCE] == 3
    assert mix.drift()[NoiseType.MISSING_EVIDENCE] == pytest.approx(0.25) and not mix.within_tolerance
    table = mix.markdown()
    assert "| laboratory | patient | 3 |" in table and "| target |" in table
