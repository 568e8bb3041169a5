"""Full builds with the real stages: templates extract clean tasks, the noise stage builds twins with
proofs, and the release is published, on the synthetic source and on the MIMIC-IV demo."""

import dataclasses
import json

import duckdb
import polars as pl
import pytest

from pipeline.release import build_release
from pipeline.release.task_files import sha256_file
from pipeline.vocabulary import NoiseType, Split

TARGET_TWINS = 150  # enough groups that every split gets some (splits are drawn per patient and group)


def _noise_shares(config) -> dict[str, float]:
    return {t.value: config.share(t) for t in NoiseType if config.share(t) > 0}


def _upstream(db):
    from pipeline.noise.build import build_pairs
    from pipeline.noise.mix import NoiseConfig
    from pipeline.templates.extract import extract_clean_tasks

    config = NoiseConfig(target_pairs=TARGET_TWINS)
    clean = extract_clean_tasks(db, tasks_per_template=2, seed=0).tasks
    twins = build_pairs(db, clean, config, seed=0).twins
    named = {t.clean_task_id for t in twins}
    return [t for t in clean if t.task_id in named] + list(twins), _noise_shares(config)


@pytest.fixture(scope="module", params=["synthetic_db", "demo_db"])
def built(request, tmp_path_factory):
    db = request.getfixturevalue(request.param)
    tasks, shares = _upstream(db)
    result = build_release(tasks, source_db=db, version="1.0.0", releases_dir=tmp_path_factory.mktemp("releases"),
                           seed=0, config={"tasks_per_template": 2, "target_pairs": TARGET_TWINS},
                           noise_shares=shares)
    return request.param, db, tasks, shares, result


def test_the_release_reads_back_with_polars_and_duckdb_and_matches_the_manifest(built):
    _, _, tasks, _, result = built
    manifest = json.loads((result.path / "manifest.json").read_text())
    for rel, f in manifest["files"].items():
        assert sha256_file(result.path / rel) == f["sha256"], rel
        if rel.endswith(".parquet"):
            assert pl.read_parquet(result.path / rel).height == f["rows"]
    glob = str(result.path / "tasks" / "*.parquet")
    got = duckdb.sql(f"SELECT split, intent, level, coalesce(noise_type, 'clean'), count(*) "
                     f"FROM read_parquet('{glob}') GROUP BY ALL").fetchall()
    assert sorted(got) == sorted((c["split"], c["intent"], c["level"], c["noise_type"], c["tasks"])
                                 for c in manifest["counts"]["by_category"])
    assert manifest["counts"]["total"] == len(tasks) and manifest["counts"]["noise"] == TARGET_TWINS
    assert all(manifest["counts"]["by_split"][s.value] > 0 for s in Split)


def test_the_environment_loads_the_release(built):
    from robustgym.release import load_release

    _, db, tasks, _, result = built
    release = load_release(result.path)
    assert len(release.tasks()) == len(tasks)
    assert release.fingerprint == result.manifest["source"]["fingerprint"]


def test_every_contract_ran_and_passed(built):
    _, _, _, _, result = built
    assert {c.contract: c.passed for c in result.contracts} == {
        "clean_tasks": True, "noisy_twins": True, "pairs": True, "release_splits": True}


def test_the_base_database_ships_for_synthetic_and_demo_sources(built):
    name, db, _, _, result = built
    assert result.manifest["source"]["terms"] == {"synthetic_db": "synthetic", "demo_db": "mimic_iv_demo"}[name]
    assert sha256_file(result.path / "base.duckdb") == sha256_file(db)


def test_two_full_builds_give_byte_identical_task_files(built, tmp_path):
    name, db, tasks, shares, result = built
    if name == "synthetic_db":
        # Everything again from a freshly generated database: generator, templates, noise, release.
        from pipeline.synthetic import generate_synthetic
        from tests.conftest import SYNTHETIC_PATIENTS, SYNTHETIC_SEED

        db = tmp_path / "again.duckdb"
        generate_synthetic(db, patients=SYNTHETIC_PATIENTS, seed=SYNTHETIC_SEED)
        tasks, shares = _upstream(db)
    again = build_release(tasks, source_db=db, version="1.0.0", releases_dir=tmp_path / "releases", seed=0,
                          config={"tasks_per_template": 1, "target_pairs": TARGET_TWINS}, noise_shares=shares)
    for s in Split:
        rel = f"tasks/{s.value}.parquet"
        assert (again.path / rel).read_bytes() == (result.path / rel).read_bytes(), rel


def test_a_noise_mix_off_its_configured_shares_is_refused(built, tmp_path):
    from pipeline.contracts import ContractViolation

    _, db, tasks, shares, _ = built
    skewed = dict(shares)
    first = next(iter(skewed))
    skewed[first] += 0.5
    with pytest.raises(ContractViolation, match="noise_mix"):
        build_release([dataclasses.replace(t) for t in tasks], source_db=db, version="1.0.0",
                      releases_dir=tmp_path, noise_shares=skewed)
    assert list(tmp_path.iterdir()) == []
