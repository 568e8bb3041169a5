"""The reference agents' difficulty scores: a sample per noise type and mechanism, played in parts."""

import pytest

from robustgym.difficulty import REFERENCE_AGENTS, score_difficulty
from pipeline.vocabulary import Variant


def _score(release, **kwargs) -> dict:
    return score_difficulty(release.tasks(), release.base_database, release.fingerprint, **kwargs)


def test_playing_a_sample_in_parts_scores_it_as_one_sandbox_does(pipeline_release):
    whole = _score(pipeline_release, shares=1)
    in_parts = _score(pipeline_release, shares=3)
    assert in_parts == whole
    assert set(whole["agents"]) == set(REFERENCE_AGENTS)
    for cells in whole["agents"].values():
        assert sum(c["twins"] for c in cells) == whole["twins_played"] > 0
    # Not a vacuous equality: the checking agent gets some twins right and the naive one fewer.
    correct = {agent: sum(c["correct"] for c in cells) for agent, cells in whole["agents"].items()}
    assert correct["checking"] > correct["naive"]


def test_more_parts_than_twins_leaves_no_part_empty(pipeline_release):
    twins = [t for t in pipeline_release.tasks() if t.variant is Variant.NOISE]
    one_cell = [t for t in twins if t.noise_type is twins[0].noise_type][:2]
    clean = [pipeline_release.task(t.clean_task_id) for t in one_cell]
    scored = score_difficulty(clean + one_cell, pipeline_release.base_database, pipeline_release.fingerprint,
                              shares=5)
    assert scored["twins_played"] == len(one_cell)
    assert all(sum(c["twins"] for c in cells) == len(one_cell) for cells in scored["agents"].values())


def test_a_sample_in_no_parts_is_refused(pipeline_release):
    with pytest.raises(ValueError, match="shares must be at least 1"):
        _score(pipeline_release, shares=0)
