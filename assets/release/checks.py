"""Checks that re-read what was written: the published release."""

import json

import dagster as dg
import duckdb
import polars as pl

from assets.resources import ProjectPaths
from pipeline.release import resolve_release
from pipeline.release.task_files import sha256_file
from pipeline.vocabulary import AssetName, Split


class ReleaseCheck:
    """Names of the release group's standalone checks (its contract checks are named by contract)."""

    READS_BACK = "release_reads_back"


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


CHECKS = [release_reads_back]
