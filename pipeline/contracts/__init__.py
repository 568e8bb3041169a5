"""Data contracts: Great Expectations suites in ``data_contracts/`` run on the pipeline's data.

- ``check_source_database(db_path)``: one result per source table (suites generated from the schema).
- ``check_clean_tasks``, ``check_noisy_twins``, ``check_pairs``, ``check_task_set``: task contracts.
- ``check_release_splits(files)``: the release's split tables as read back.

Every result lists each expectation with its severity and evidence; ``ContractResult.passed`` is
False only when a *critical* expectation failed.
"""

from pipeline.contracts.results import (
    ContractResult,
    ContractViolation,
    ExpectationResult,
    Severity,
    results_markdown,
)
from pipeline.contracts.source_check import check_source_database
from pipeline.contracts.task_checks import (
    Contract,
    check_clean_tasks,
    check_noisy_twins,
    check_pairs,
    check_release_splits,
    check_task_set,
    split_by_variant,
)

__all__ = [
    "Contract", "ContractResult", "ContractViolation", "ExpectationResult", "Severity",
    "check_clean_tasks", "check_noisy_twins", "check_pairs", "check_release_splits",
    "check_source_database", "check_task_set", "results_markdown", "split_by_variant",
]
