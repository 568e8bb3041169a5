"""The source stage's check: every table of the database just built against its generated contract.

It runs inside ``source_database``'s step on the pending database (see ``assets/gate.py``), so a
database that breaks a critical expectation never replaces the current one.
"""

import dagster as dg

from assets.contract_results import evidence_text
from assets.gate import EVIDENCE
from pipeline.contracts import ContractResult, check_source_database, results_markdown

SOURCE_TABLES_CHECK = "source_tables_contract"


def source_tables_contract(db_path, results: list[ContractResult] | None = None) -> dg.AssetCheckResult:
    """Every loaded table has the schema's columns and types, row ids and NOT NULL columns.
    ``results``: the contract's results found while the database was built (None: read it now)."""
    results = check_source_database(db_path) if results is None else results
    failures = [f for r in results for f in r.failures]
    blocking = [f for f in failures if f.blocking]
    metadata = {
        "tables_checked": len(results),
        "critical_failures": len(blocking),
        "warnings": len(failures) - len(blocking),
        "tables_failing": ", ".join(r.contract.split("/", 1)[1] for r in results if not r.passed) or "none",
        "failures": dg.MetadataValue.md(results_markdown(failures) if failures else "all expectations met"),
    }
    if failures or not results:
        metadata[EVIDENCE] = evidence_text(failures) if failures else "no MIMIC-IV table to check"
    return dg.AssetCheckResult(
        check_name=SOURCE_TABLES_CHECK,
        passed=bool(results) and not failures,
        severity=dg.AssetCheckSeverity.ERROR if blocking or not results else dg.AssetCheckSeverity.WARN,
        metadata=metadata)
