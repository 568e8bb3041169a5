"""A contract run as a Dagster check result: pass/fail, severity, and the evidence as metadata.

Shared by every stage's contract checks, which live next to the assets they guard.
"""

import dagster as dg
import duckdb

from assets.resources import ProjectPaths
from pipeline.source_db import read_source_info

from pipeline.contracts import Contract, ContractResult, results_markdown


def contract_check_name(contract: Contract | str) -> str:
    return f"{Contract(contract).value}_contract"


def contract_check_result(result: ContractResult, asset_key: str | None = None) -> dg.AssetCheckResult:
    """Failed when any expectation failed; ERROR severity (which blocks) only when a critical one did."""
    blocking = result.blocking_failures
    return dg.AssetCheckResult(
        check_name=contract_check_name(result.contract),
        asset_key=asset_key,
        passed=not result.failures,
        severity=dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN,
        metadata={
            "summary": result.summary(),
            "expectations": len(result.results),
            "critical_failures": len(blocking),
            "warnings": len(result.failures) - len(blocking),
            "failures": dg.MetadataValue.md(result.failures_markdown()),
            "results": dg.MetadataValue.md(results_markdown(result.results)),
            "suite": f"data_contracts/{result.contract}.json",
        })


def source_fingerprint(paths: ProjectPaths) -> str:
    """The fingerprint of the source database the tasks must have been built on."""
    with duckdb.connect(str(paths.source_db), read_only=True) as con:
        return read_source_info(con).fingerprint
