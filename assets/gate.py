"""Blocking checks decided inside the asset's own step, on the output it has just written.

Dagster blocks downstream steps on a failed blocking check only within one run. An asset backfill
(*Materialize all*) counts a partition as done as soon as its materialization event exists, even
when a blocking check of the same run then fails, and launches the downstream partitions meanwhile.
So a stage writes its partition's output to a pending file, evaluates its checks on that file, and
only when none fails with ERROR severity promotes the file and reports the materialization. When
one does, every check evaluation is still recorded on the partition (the Checks tab shows the
failure with its evidence), the pending file is removed and the step fails: the partition shows as
failed, the previous output stays as it was, and nothing downstream starts.
"""

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import dagster as dg

EVIDENCE = "evidence"  # the metadata key every failed check fills: what failed, how often, an example


def partitioned_check(name: str, asset: str, partitions_def: dg.PartitionsDefinition | None, *,
                      blocking: bool = False, description: str | None = None) -> dg.AssetCheckSpec:
    """A check spec evaluated per partition, so one partition's result never stands for another's."""
    with warnings.catch_warnings():
        # Partitioned checks are a preview feature in Dagster 1.13; tests/assets exercise what we rely on.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.AssetCheckSpec(name, asset=asset, blocking=blocking, description=description,
                                 partitions_def=partitions_def)


def pending_path(final: Path) -> Path:
    """Where a partition's output waits for its checks: next to the final file (same filesystem, so
    the promotion is an atomic rename), under a name no stage reads (not ``*.parquet``)."""
    return final.with_name(f"{final.name}.pending")


def promote(pending: Path, final: Path) -> None:
    os.replace(pending, final)


def _blocking(context: dg.AssetExecutionContext) -> set[str]:
    return {spec.name for spec in context.assets_def.check_specs if spec.blocking}


def blocking_failures(context: dg.AssetExecutionContext, results: Sequence[dg.AssetCheckResult]) -> list:
    blocking = _blocking(context)
    return [r for r in results if r.check_name in blocking and not r.passed
            and r.severity is dg.AssetCheckSeverity.ERROR]


def gate(context: dg.AssetExecutionContext, results: Sequence[dg.AssetCheckResult],
         pending: Path | None = None) -> list[dg.AssetCheckResult]:
    """``results`` to report with the materialization, or, when a blocking check failed, record them
    on the partition, remove ``pending`` and fail the step with the evidence."""
    failed = blocking_failures(context, results)
    if not failed:
        return list(results)
    partition = context.partition_key if context.has_partition_key else None
    blocking = _blocking(context)
    for r in results:
        context.log_event(dg.AssetCheckEvaluation(
            asset_key=r.asset_key or context.asset_key, check_name=r.check_name, passed=r.passed,
            severity=r.severity, metadata=r.metadata, partition=partition, description=r.description,
            blocking=r.check_name in blocking))
    if pending is not None:
        pending.unlink(missing_ok=True)
    where = context.asset_key.to_user_string() + (f"[{partition}]" if partition else "")
    names = ", ".join(r.check_name for r in failed)
    raise dg.Failure(
        description=f"{where}: blocking check(s) failed: {names}; nothing was materialized",
        metadata={f"{r.check_name}: {EVIDENCE}": r.metadata.get(EVIDENCE, dg.MetadataValue.text("(no evidence)"))
                  for r in failed})
