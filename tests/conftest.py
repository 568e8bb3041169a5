"""Shared fixtures: the real MIMIC-IV demo from ../shared, and databases built once per session."""

from pathlib import Path

import pytest

pytest_plugins = ["tests.interrupt_signals"]  # the fresh_signals fixture

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


@pytest.fixture(scope="session")
def demo_db(demo_dir, tmp_path_factory) -> Path:
    """The real demo as PhysioNet ships it here: 30 tables (no chartevents)."""
    from pipeline.loader import load_mimic

    path = tmp_path_factory.mktemp("demo") / "demo.duckdb"
    load_mimic([demo_dir], path, allow_missing=True)
    return path


@pytest.fixture(scope="session")
def demo_full_db(demo_dir, demo_chartevents_dir, tmp_path_factory) -> Path:
    """The demo with the chartevents reconstruction overlaid: all 31 tables."""
    from pipeline.loader import load_mimic

    path = tmp_path_factory.mktemp("demo_full") / "demo_full.duckdb"
    load_mimic([demo_dir, demo_chartevents_dir], path)
    return path


SYNTHETIC_PATIENTS = 200
SYNTHETIC_SEED = 7


@pytest.fixture(scope="session")
def synthetic_db(tmp_path_factory) -> Path:
    """A small synthetic MIMIC-IV (all 31 tables): 200 patients, seed 7."""
    from pipeline.synthetic import generate_synthetic

    path = tmp_path_factory.mktemp("synthetic") / "synthetic.duckdb"
    generate_synthetic(path, patients=SYNTHETIC_PATIENTS, seed=SYNTHETIC_SEED)
    return path


@pytest.fixture
def small_statement_readers(monkeypatch):
    """``spy(*modules)``: the threads of every small-statement reader those modules open, in order (a
    list that fills as they open them)."""
    from contextlib import contextmanager

    from pipeline import duckdb_memory

    opened: list[int] = []
    real = duckdb_memory.small_statement_reader

    @contextmanager
    def recording(path):
        with real(path) as con:
            opened.append(con.execute("SELECT current_setting('threads')").fetchone()[0])
            yield con

    def spy(*modules) -> list[int]:
        for module in modules:
            monkeypatch.setattr(module, "small_statement_reader", recording)
        return opened

    return spy
