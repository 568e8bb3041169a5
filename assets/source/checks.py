"""Checks that re-read the source database: every table against its generated data contract."""

import dagster as dg

from assets.resources import ProjectPaths
from pipeline.contracts import check_source_database, results_markdown
from pipeline.vocabulary import AssetName

SOURCE_TABLES_CHECK = "source_tables_contract"


@dg.asset_check(asset=AssetName.SOURCE_DATABASE.value, name=SOURCE_TABLES_CHECK, blocking=True,
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


CHECKS = [source_tables_contract]
