"""Building the partitions of a stage in parallel processes gives the release a serial build gives,
byte for byte: each partition writes only its own files and reads only what earlier stages wrote."""

import hashlib
import shutil

import dagster as dg

from assets.definitions import defs as full_defs
from assets.release.rebuild import run_graph
from assets.resources import ProjectPaths
from pipeline.vocabulary import AssetName

SETTINGS = {"seed": 0, "version": "1.0.0", "tasks_per_template": 1, "target_pairs": 60}


def _without_source(paths: ProjectPaths) -> dg.Definitions:
    """Every asset after the source: both builds start from one source file, so that the shipped
    base.duckdb (a copy of it) is the same file too (DuckDB never writes a database twice alike)."""
    assets = [a for a in full_defs.assets
              if AssetName.SOURCE_DATABASE.value not in {k.to_user_string() for k in a.keys}]
    return dg.Definitions(assets=assets, asset_checks=full_defs.asset_checks, resources={"paths": paths})


def _files(release_dir) -> dict[str, str]:
    return {str(f.relative_to(release_dir)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(release_dir.rglob("*")) if f.is_file()}


def test_a_parallel_build_publishes_the_bytes_of_a_serial_one(tmp_path, synthetic_db, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # the manifest's "created"
    releases, messages = {}, {}
    for workers in (1, 2):
        paths = ProjectPaths(data_dir=str(tmp_path / f"data{workers}"), releases_dir=str(tmp_path / f"rel{workers}"))
        paths.data.mkdir(parents=True)
        shutil.copyfile(synthetic_db, paths.source_db)
        said = messages[workers] = []
        run = run_graph(_without_source(paths), settings=SETTINGS, progress=said.append, log_level="CRITICAL",
                        workers=workers)
        assert run.success, run.failed and (run.failed.label, run.failed.error)
        releases[workers] = paths.releases / "1.0.0"

    serial, parallel = _files(releases[1]), _files(releases[2])
    assert "tasks/test.parquet" in serial and "manifest.json" in serial and "base.duckdb" in serial
    assert parallel == serial
    # The parallel build did run its partitions side by side, and said so.
    assert any("noise_pairs[record], noise_pairs[value], noise_pairs[query] ... (2 at a time)" in m
               for m in messages[2])
    # Each worker's progress reached the parent, named with its partition.
    assert any(m.startswith("templates [laboratory]: template ") for m in messages[2])
    # Steps are reported in partition order, as a serial build reports them.
    def order(said):
        return [m.split("] ", 1)[1].split(" ok in ")[0] for m in said if " ok in " in m]

    assert order(messages[2]) == order(messages[1])


def test_a_failing_partition_fails_the_parallel_build_where_a_serial_build_fails(tmp_path, synthetic_db):
    paths = ProjectPaths(data_dir=str(tmp_path / "data"), releases_dir=str(tmp_path / "rel"))
    paths.data.mkdir(parents=True)
    shutil.copyfile(synthetic_db, paths.source_db)
    # An unknown noise share is refused by every noise level: the first level in partition order is named.
    run = run_graph(_without_source(paths), settings={**SETTINGS, "level_shares": {"record": 2.0}},
                    log_level="CRITICAL", workers=2)
    assert not run.success
    assert (run.failed.asset, run.failed.partition) == (AssetName.NOISE_PAIRS.value, "record")
    assert not (paths.releases / "1.0.0").exists()


_BURN = "import time; end = time.process_time() + 0.4\nwhile time.process_time() < end: pass"


@dg.asset(partitions_def=dg.StaticPartitionsDefinition(["a", "b"]))
def _burns_in_a_child() -> None:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", _BURN], check=True)


def test_a_steps_cpu_counts_the_processes_it_waited_for():
    # The reference agents' SQL runs in sandbox processes: a step's CPU that left them out would hide
    # what the noise stage costs. Serial (in this process) and forked alike.
    for workers in (1, 2):
        said: list[str] = []
        run = run_graph(dg.Definitions(assets=[_burns_in_a_child]), settings={}, progress=said.append,
                        log_level="CRITICAL", workers=workers)
        assert run.success, run.failed and run.failed.error
        assert [s.partition for s in run.steps] == ["a", "b"]
        for step in run.steps:
            assert step.cpu is not None and step.cpu >= 0.35, (workers, step)
            assert any(m.endswith(f"{step.label} ok in {step.seconds:.1f} s, {step.cpu:.1f} s of CPU") for m in said)
