"""The `source` group: the MIMIC-IV (or synthetic MIMIC-IV) database every later stage queries."""

from pathlib import Path

import dagster as dg
import duckdb

from assets.resources import ProjectPaths
from pipeline.source_db import read_source_info, row_counts
from pipeline.vocabulary import AssetName, Group, SourceKind


class SourceConfig(dg.Config):
    """Which source to build: the built-in synthetic MIMIC-IV (default) or MIMIC-IV folders."""

    kind: str = SourceKind.SYNTHETIC.value
    patients: int = 1000
    seed: int = 0
    # PhysioNet-layout folders (hosp/, icu/); later folders supply tables the earlier ones lack.
    mimic_dirs: list[str] = []
    allow_missing: bool = False


def build_source(config: SourceConfig, target: Path, log) -> None:
    kind = SourceKind(config.kind)
    if kind is SourceKind.SYNTHETIC:
        from pipeline.synthetic import generate_synthetic

        generate_synthetic(target, patients=config.patients, seed=config.seed, progress=log)
    else:
        from pipeline.loader import load_mimic

        if not config.mimic_dirs:
            raise dg.Failure("source kind 'mimic_iv' needs mimic_dirs: the PhysioNet-layout folder(s) to load")
        load_mimic([Path(d) for d in config.mimic_dirs], target, allow_missing=config.allow_missing,
                   progress=log)


def _counts_table(counts: dict[str, int]) -> str:
    lines = ["| table | rows |", "| --- | ---: |"]
    lines += [f"| {name} | {n:,} |" for name, n in counts.items()]
    return "\n".join(lines)


@dg.asset(name=AssetName.SOURCE_DATABASE.value, group_name=Group.SOURCE.value, kinds={"duckdb"})
def source_database(context: dg.AssetExecutionContext, config: SourceConfig,
                    paths: ProjectPaths) -> dg.MaterializeResult:
    """The source EHR database (DuckDB): synthetic MIMIC-IV by default, or your MIMIC-IV download."""
    target = paths.source_db
    build_source(config, target, context.log.info)
    with duckdb.connect(str(target), read_only=True) as con:
        info = read_source_info(con)
        counts = row_counts(con)
    return dg.MaterializeResult(metadata={
        "source_kind": info.kind,
        "fingerprint": info.fingerprint,
        "path": dg.MetadataValue.path(str(target)),
        "database_bytes": target.stat().st_size,
        "tables": len(counts),
        "total_rows": sum(counts.values()),
        "row_counts": dg.MetadataValue.md(_counts_table(counts)),
    })


ASSETS = [source_database]
