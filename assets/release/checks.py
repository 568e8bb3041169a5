"""Checks that re-read what was written: the source tables, and the published release."""

import json

import dagster as dg
import duckdb
import polars as pl

from assets.release.contract_results import contract_check_result
from assets.resources import ProjectPaths
from pipeline.contracts import (
    Contract,
    check_clean_tasks,
    check_noisy_twins,
    check_pairs,
    check_source_database,
    results_markdown,
    split_by_variant,
)
from pipeline.release import resolve_release
from pipeline.release.assembly import pair_up, read_task_files, task_files
from pipeline.release.task_files import sha256_file
from pipeline.source_db import read_source_info
from pipeline.vocabulary import AssetName, Intent, Split


class ReleaseCheck:
    """Names of the release group's standalone checks (the contract checks are named by contract)."""

    SOURCE_TABLES = "source_tables_contract"
    READS_BACK = "release_reads_back"


@dg.asset_check(asset=AssetName.SOURCE_DATABASE.value, name=ReleaseCheck.SOURCE_TABLES, blocking=True,
                description="data_contracts/source/<table>.json (generated from pipeline/schema.py) on every table")
def source_tables_contract(paths: ProjectPaths) -> dg.AssetCheckResult:
    """Every loaded table has the schema's columns and types, row ids and NOT NULL columns."""
    results = check_source_database(paths.source_db)
    failures = [f for r in results for f in r.failures]
    blocking = [f for f in failures if f.blocking]
    return dg.AssetCheckResult(
        passed=bool(results) and not failures,
        severity=dg.AssetCheckSeverity.ERROR if blocking or not results else dg.AssetCheckSeverity.WARN,
        metadata={
            "tables_checked": len(results),
            "expectations": sum(len(r.results) for r in results),
            "critical_failures": len(blocking),
            "warnings": len(failures) - len(blocking),
            "tables_failing": ", ".join(r.contract.split("/", 1)[1] for r in results if not r.passed) or "none",
            "failures": dg.MetadataValue.md(results_markdown(failures) if failures else "all expectations met"),
        })


# Not partitioned (like the templates stage's own checks): after each intent's run it re-reads every
# intent file present, so the coverage rule applies to the intents built so far.
@dg.asset_check(asset=AssetName.CLEAN_TASKS.value, name=f"{Contract.CLEAN_TASKS.value}_contract", blocking=True,
                description="data_contracts/clean_tasks.json on every intent's clean tasks written so far")
def clean_tasks_contract(paths: ProjectPaths) -> dg.AssetCheckResult:
    """Clean tasks meet their contract: ids, vocabulary, typed answers, outcomes, one source database."""
    files = {i.value: paths.clean_tasks_dir / f"{i.value}.parquet" for i in Intent}
    present = {i: f for i, f in files.items() if f.exists()}
    table = read_task_files(present.values())
    if table is None:
        return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR,
                                   metadata={"problem": f"no clean task file under {paths.clean_tasks_dir}"})
    return contract_check_result(check_clean_tasks(table, source_fingerprint=_fingerprint(paths),
                                                   intents=sorted(present)))


def _fingerprint(paths: ProjectPaths) -> str:
    with duckdb.connect(str(paths.source_db), read_only=True) as con:
        return read_source_info(con).fingerprint


# Like clean_tasks_contract, not partitioned: after each noise level's run it re-reads every level
# file written so far. The mix is checked on the release candidate, once every level is built.
@dg.multi_asset_check(
    specs=[dg.AssetCheckSpec(f"{c.value}_contract", asset=AssetName.NOISE_PAIRS.value, blocking=True,
                             description=f"data_contracts/{c.value}.json on the twins written so far")
           for c in (Contract.NOISY_TWINS, Contract.PAIRS)],
)
def noise_contracts(paths: ProjectPaths):
    """Twins meet their contract (proof, patch, vocabulary), and each names a clean task that exists."""
    twins = read_task_files(task_files(paths.noise_dir))
    clean = read_task_files(task_files(paths.clean_tasks_dir))
    if twins is None or clean is None:
        for c in (Contract.NOISY_TWINS, Contract.PAIRS):
            yield dg.AssetCheckResult(check_name=f"{c.value}_contract", passed=False,
                                      asset_key=AssetName.NOISE_PAIRS.value, severity=dg.AssetCheckSeverity.ERROR,
                                      metadata={"problem": f"no task files under {paths.noise_dir} or "
                                                           f"{paths.clean_tasks_dir}"})
        return
    asset = AssetName.NOISE_PAIRS.value
    yield contract_check_result(check_noisy_twins(twins, source_fingerprint=_fingerprint(paths)), asset)
    # Only the clean tasks some twin names: the others are not pairs and never reach a release.
    pairs = pair_up(split_by_variant(clean)[0], twins)
    yield contract_check_result(check_pairs(pairs.clean, pairs.twins), asset)


def read_back_problems(release_dir) -> tuple[list[str], dict]:
    """What disagrees between a published release's files and its manifest, read with polars and DuckDB."""
    manifest = json.loads((release_dir / "manifest.json").read_text())
    problems = []
    for rel, f in manifest["files"].items():
        if sha256_file(release_dir / rel) != f["sha256"]:
            problems.append(f"{rel}: sha256 differs from the manifest")
    for split in Split:
        rel = f"tasks/{split.value}.parquet"
        rows = pl.read_parquet(release_dir / rel).height
        if rows != manifest["files"][rel]["rows"]:
            problems.append(f"{rel}: polars reads {rows} rows, the manifest says {manifest['files'][rel]['rows']}")
    glob = str(release_dir / "tasks" / "*.parquet").replace("'", "''")
    got = duckdb.sql(f"SELECT split, intent, level, coalesce(noise_type, 'clean'), count(*) "
                     f"FROM read_parquet('{glob}') GROUP BY ALL").fetchall()
    want = [(c["split"], c["intent"], c["level"], c["noise_type"], c["tasks"])
            for c in manifest["counts"]["by_category"]]
    if sorted(got) != sorted(want):
        problems.append(f"DuckDB counts per split x intent x level x noise type differ from the manifest "
                        f"({len(set(got) ^ set(want))} categories)")
    return problems, manifest


@dg.asset_check(asset=AssetName.RELEASE.value, name=ReleaseCheck.READS_BACK,
                description="the published files read back with polars and DuckDB and match the manifest")
def release_reads_back(paths: ProjectPaths) -> dg.AssetCheckResult:
    """The latest release reads back with polars and DuckDB, with the manifest's hashes and counts."""
    release_dir = resolve_release(paths.releases)
    problems, manifest = read_back_problems(release_dir)
    return dg.AssetCheckResult(passed=not problems, metadata={
        "release": dg.MetadataValue.path(str(release_dir)),
        "version": manifest["version"],
        "files_checked": len(manifest["files"]),
        "problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"),
    })


CHECKS = [source_tables_contract, clean_tasks_contract, noise_contracts, release_reads_back]
