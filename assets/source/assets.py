"""The `source` group: the MIMIC-IV (or synthetic MIMIC-IV) database every later stage queries."""

from pathlib import Path

import dagster as dg

from assets.gate import gate, pending_path, promote
from assets.metadata import ROW_COUNT, code_version, distribution
from assets.resources import ProjectPaths
from assets.source.checks import SOURCE_TABLES_CHECK, source_tables_contract
from assets.stale_outputs import remove_outputs_of_other_sources
from pipeline.contracts.results import ContractResult
from pipeline.contracts.source_check import TableByTableCheck
from pipeline.duckdb_memory import open_read_only
from pipeline.source_audit import audit_chart, audit_source, write_audit
from pipeline.source_db import read_source_info, row_counts
from pipeline.vocabulary import AssetName, Group, SourceKind

CODE_VERSION = code_version("pipeline.schema", "pipeline.loader", "pipeline.synthetic", "pipeline.source_db")


class SourceConfig(dg.Config):
    """Which source to build: the built-in synthetic MIMIC-IV (default) or MIMIC-IV folders."""

    kind: str = SourceKind.SYNTHETIC.value
    patients: int = 1000
    seed: int = 0
    # PhysioNet-layout folders (hosp/, icu/); later folders supply tables the earlier ones lack.
    mimic_dirs: list[str] = []
    allow_missing: bool = False
    # Integrity findings (duplicate keys, dangling links) fail the load instead of warning.
    strict: bool = False


def build_source(config: SourceConfig, target: Path, log) -> list[ContractResult] | None:
    """Build the source database at ``target``; the source contract's results when they were found
    during the build (a MIMIC-IV load), else None (the check reads the built database)."""
    kind = SourceKind(config.kind)
    if kind is SourceKind.SYNTHETIC:
        from pipeline.synthetic import generate_synthetic

        generate_synthetic(target, patients=config.patients, seed=config.seed, progress=log)
        return None
    from pipeline.loader import load_mimic

    if not config.mimic_dirs:
        raise dg.Failure("source kind 'mimic_iv' needs mimic_dirs: the PhysioNet-layout folder(s) to load")
    # The load runs in DuckDB, outside the interpreter: the contract (Great Expectations' import, then
    # each table as it is loaded) runs meanwhile. Not beside the synthetic generator, which is Python
    # and would only take turns with it.
    with TableByTableCheck() as contract:
        load_mimic([Path(d) for d in config.mimic_dirs], target, allow_missing=config.allow_missing,
                   strict=config.strict, progress=log, on_table_loaded=contract.loaded)
    return contract.results()


def _fingerprint(db: Path) -> str | None:
    if not db.exists():
        return None
    with open_read_only(db) as con:
        return read_source_info(con).fingerprint


@dg.asset(name=AssetName.SOURCE_DATABASE.value, group_name=Group.SOURCE.value, kinds={"duckdb"},
          code_version=CODE_VERSION, tags={"stage": Group.SOURCE.value},
          check_specs=[dg.AssetCheckSpec(SOURCE_TABLES_CHECK, asset=AssetName.SOURCE_DATABASE.value, blocking=True,
                                         description="data_contracts/source/TABLE.json (generated from "
                                                     "pipeline/schema.py) on every table")])
def source_database(context: dg.AssetExecutionContext, config: SourceConfig,
                    paths: ProjectPaths) -> dg.MaterializeResult:
    """The source EHR database (DuckDB): synthetic MIMIC-IV by default, or your MIMIC-IV download."""
    target = paths.source_db
    pending = pending_path(target)
    found = build_source(config, pending, context.log.info)
    check_results = gate(context, [source_tables_contract(pending, found)], pending)
    with open_read_only(pending) as con:
        info = read_source_info(con)
        counts = row_counts(con)
    promote(pending, target)
    removed = remove_outputs_of_other_sources(paths, info.fingerprint)
    if removed:
        context.log.info(f"removed outputs built on another source: {', '.join(removed)}")
    return dg.MaterializeResult(metadata={
        ROW_COUNT: sum(counts.values()),
        "source_kind": info.kind,
        "fingerprint": info.fingerprint,
        "path": dg.MetadataValue.path(str(target)),
        "database_bytes": target.stat().st_size,
        "tables": dg.MetadataValue.text(str(len(counts))),
        "rows_per_table": distribution([("table", "string"), ("rows", "int")], sorted(counts.items())),
        "outputs_of_other_sources_removed": dg.MetadataValue.text(", ".join(removed) or "none"),
    }, check_results=check_results)


AUDIT_CODE_VERSION = code_version("pipeline.noise.anomalies", "pipeline.source_audit", "pipeline.noise.physiology",
                                  "pipeline.noise.row_roles")


@dg.asset(name=AssetName.SOURCE_ANOMALIES.value, group_name=Group.SOURCE.value, kinds={"duckdb", "parquet"},
          code_version=AUDIT_CODE_VERSION, tags={"stage": Group.SOURCE.value},
          deps=[AssetName.SOURCE_DATABASE.value])
def source_anomalies(context: dg.AssetExecutionContext, paths: ProjectPaths) -> dg.MaterializeResult:
    """The source's own anomalies per table (duplicates, rows outside their stay, dangling links, values outside
    physiological limits, unusual units): clean tasks never rest on a flagged row."""
    with open_read_only(paths.source_db) as con:
        audit, flagged = audit_source(con)
    write_audit(audit, flagged, paths.source_audit, paths.source_flagged_rows)
    chart = audit_chart(audit, paths.data / "source_anomalies.png")
    for lossy in audit.lossy_inputs:
        context.log.warning(f"{lossy.path} is {lossy.what}")
    checked = sum(audit.rows_checked.values())
    return dg.MaterializeResult(metadata={
        ROW_COUNT: audit.rows_flagged,
        "rows_checked": dg.MetadataValue.text(f"{checked:,}"),
        "flagged_per_table_and_kind": distribution(
            [("table", "string"), ("anomaly", "string"), ("status", "string"), ("rows", "int")],
            [(c.table, c.kind, c.status, c.rows) for c in audit.counts]),
        "examples": dg.MetadataValue.md(audit.markdown()),
        "chart": dg.MetadataValue.md(f"![flagged rows per table and kind]({chart.as_uri()})"),
        "lossy_inputs": dg.MetadataValue.md("\n".join(f"- `{i.path}`: {i.what}" for i in audit.lossy_inputs)
                                            or "none known"),
        "loader_integrity_findings": dg.MetadataValue.text(str(len(audit.integrity))),
        "fingerprint": audit.fingerprint,
        "path": dg.MetadataValue.path(str(paths.source_audit)),
    })


ASSETS = [source_database, source_anomalies]
CHECKS: list = []  # the source contract runs inside the asset's step (assets/gate.py)
