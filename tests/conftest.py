"""Shared fixtures: the real MIMIC-IV demo from ../shared, and databases built once per session."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DEMO = SHARED / "mimic-iv-demo"
DEMO_CHARTEVENTS = SHARED / "mimic-iv-demo-chartevents"


@pytest.fixture(scope="session")
def demo_dir() -> Path:
    if not (DEMO / "hosp" / "patients.csv.gz").exists():
        pytest.fail(f"the MIMIC-IV demo is expected at {DEMO} (see ../shared/README.md)")
    return DEMO


@pytest.fixture(scope="session")
def demo_chartevents_dir() -> Path:
    if not (DEMO_CHARTEVENTS / "icu" / "chartevents.csv.gz").exists():
        pytest.fail(f"the demo chartevents reconstruction is expected at {DEMO_CHARTEVENTS}")
    return DEMO_CHARTEVENTS
