"""Fixtures of the environment's tests: a real release built once per session from the real demo."""

from pathlib import Path

import pytest

from robustgym.env import Env
from robustgym.release import Release, load_release
from tests.robustgym.release_fixture import build_demo_release


@pytest.fixture(scope="session")
def demo_release_dir(demo_full_db, tmp_path_factory) -> Path:
    return build_demo_release(demo_full_db, tmp_path_factory.mktemp("releases"))


@pytest.fixture(scope="session")
def demo_release(demo_release_dir) -> Release:
    return load_release(demo_release_dir)


@pytest.fixture()
def env(demo_release):
    with Env(demo_release) as env:
        yield env
