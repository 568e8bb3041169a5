"""A contract run as a Dagster check result: pass/fail, severity, and the evidence as metadata.

Shared by every stage's contract checks, which run next to the assets they guard.
"""

import dagster as dg

from assets.gate import EVIDENCE
from assets.resources import ProjectPaths
from pipeline.contracts import Contract, ContractResult, results_markdown
from pipeline.duckdb_memory import open_read_only
from pipeline.source_db import read_source_info


def contract_check_name(contract: Contract | str) -> str:
    return f"{Contract(contract).value}_contract"


def evidence_text(failures) -> str:
    """One line per failed expectation: severity, where, the expectation, how many, a few examples."""
    return "\n".join(f.describe() for f in failures)


def contract_check_result(result: ContractResult, asset_key: str | None = None) -> dg.AssetCheckResult:
    """Failed when any expectation failed; ERROR severity (which blocks) only when a critical one did."""
    blocking = result.blocking_failures
    metadata = {
        "summary": result.summary(),
        "critical_failures": len(blocking),
        "warnings": len(result.failures) - len(blocking),
        "failures": dg.MetadataValue.md(result.failures_markdown()),
        "results": dg.MetadataValue.md(results_markdown(result.results)),
        "suite": f"data_contracts/{result.contract}.json",
    }
    if result.failures:
        metadata[EVIDENCE] = dg.MetadataValue.text(evidence_text(result.failures))
    return dg.AssetCheckResult(
        check_name=contract_check_name(result.contract),
        asset_key=asset_key,
        passed=not result.failures,
        severity=dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN,
        metadata=metadata)


def source_fingerprint(paths: ProjectPaths) -> str:
    """The fingerprint of the source database the tasks must have been built on."""
    if not paths.source_db.exists():
        raise dg.Failure(f"no source database at {paths.source_db}: materialize source_database first")
    with open_read_only(paths.source_db) as con:
        return read_source_info(con).fingerprint
