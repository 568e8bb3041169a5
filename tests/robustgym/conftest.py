"""Fixtures of the environment's tests, built once per session from the real demo database.

- ``demo_release``: a small hand-made release (tests/robustgym/release_fixture.py) whose tasks the
  sandbox and environment tests know by construction (which rows a twin hides, which value it
  changes).
- ``pipeline_release``: a release built by the pipeline itself (templates, noise, release stage) on
  the same database, with the reference floors scored by the build (``robustgym.floors``): what
  the reference agents are scored on.
"""

from collections import Counter
from pathlib import Path

import pytest

from robustgym.env import Env
from robustgym.release import Release, load_release
from tests.robustgym.release_fixture import build_demo_release

CLEAN_PER_CELL = 2  # clean tasks per (intent, level): enough for every split to hold clean and noisy tasks


@pytest.fixture(scope="session")
def demo_release_dir(demo_full_db, tmp_path_factory) -> Path:
    return build_demo_release(demo_full_db, tmp_path_factory.mktemp("releases"))


@pytest.fixture(scope="session")
def demo_release(demo_release_dir) -> Release:
    return load_release(demo_release_dir)


@pytest.fixture(scope="session")
def pipeline_release(demo_full_db, tmp_path_factory) -> Release:
    from pipeline.noise.build import build_pairs
    from pipeline.release.publish import build_release
    from pipeline.templates.extract import extract_clean_tasks
    from robustgym.floors import release_floors

    extracted = extract_clean_tasks(demo_full_db, tasks_per_template=1, seed=0)
    per: Counter = Counter()
    clean = []
    for task in extracted.tasks:
        if per[(task.intent, task.level)] < CLEAN_PER_CELL:
            per[(task.intent, task.level)] += 1
            clean.append(task)
    twins = build_pairs(demo_full_db, clean, seed=0).twins
    with_twins = {t.clean_task_id for t in twins}
    clean = [t for t in clean if t.task_id in with_twins]  # the release contract wants a twin per clean task
    result = build_release(clean + list(twins), source_db=demo_full_db, version="0.0.1",
                           releases_dir=tmp_path_factory.mktemp("pipeline_releases"), seed=0,
                           intents=sorted({t.intent.value for t in clean}), score_release=release_floors)
    return load_release(result.path, base_database=demo_full_db)


@pytest.fixture()
def env(demo_release):
    with Env(demo_release) as env:
        yield env
