"""Clean tasks and twins built once per session on the real demo (31 tables) and the synthetic database."""

import pytest

TASKS_PER_TEMPLATE = 3
TARGET_PAIRS = 300  # enough that every noise type gets twins in both levels where it applies


def _build(db):
    from pipeline.noise import NoiseConfig, build_pairs
    from pipeline.templates import extract_clean_tasks

    clean = extract_clean_tasks(db, tasks_per_template=TASKS_PER_TEMPLATE, seed=0).tasks
    return db, clean, build_pairs(db, clean, NoiseConfig(target_pairs=TARGET_PAIRS), seed=0)


@pytest.fixture(scope="session")
def demo_built(demo_full_db):
    return _build(demo_full_db)


@pytest.fixture(scope="session")
def synthetic_built(synthetic_db):
    return _build(synthetic_db)


@pytest.fixture(scope="session", params=["demo", "synthetic"])
def built(request):
    """(database path, clean tasks, NoiseResult) on the demo and on the synthetic database."""
    return request.getfixturevalue(f"{request.param}_built")
