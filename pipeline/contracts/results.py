"""What a contract run found: one result per expectation, with the evidence behind a failure.

A Great Expectations suite's ``success`` is all-or-nothing and ignores how serious each
expectation is. Here every expectation carries a severity in its ``meta`` and the decision to block
is taken per result: a release is refused when a *critical* expectation fails, while a failed
*warning* is reported and lets the run continue.
"""

import json
from dataclasses import dataclass, field
from enum import StrEnum


class Severity(StrEnum):
    CRITICAL = "critical"  # a failure blocks the run: nothing downstream is built or published
    WARNING = "warning"  # a failure is reported; the run continues


MAX_EXAMPLES = 5


@dataclass(frozen=True)
class ExpectationResult:
    """The outcome of one expectation of a contract on one frame."""

    contract: str
    frame: str
    expectation: str  # the Great Expectations expectation type
    column: str | None  # the column (or "a, b" for a column pair) the expectation is about
    severity: Severity
    rule: str  # what the expectation guards against, in words
    success: bool
    unexpected_count: int | None = None
    # A few offending values, each a dict: the value and, where the frame has one, the row's id.
    examples: tuple[dict, ...] = ()
    observed: str | None = None  # the observed value of aggregate expectations
    error: str | None = None  # set when the expectation could not be evaluated (counts as failed)

    @property
    def blocking(self) -> bool:
        return not self.success and self.severity is Severity.CRITICAL

    def describe(self) -> str:
        where = f"{self.contract}/{self.frame}" + (f".{self.column}" if self.column else "")
        what = self.error or (f"{self.unexpected_count} unexpected" if self.unexpected_count is not None
                              else f"observed {self.observed}")
        shown = f"; e.g. {_examples_text(self.examples)}" if self.examples else ""
        return f"[{self.severity}] {where}: {self.expectation} failed ({self.rule}): {what}{shown}"


@dataclass(frozen=True)
class ContractResult:
    """Every expectation result of one contract, in the suite's order."""

    contract: str
    results: tuple[ExpectationResult, ...] = field(default_factory=tuple)

    @property
    def failures(self) -> tuple[ExpectationResult, ...]:
        return tuple(r for r in self.results if not r.success)

    @property
    def blocking_failures(self) -> tuple[ExpectationResult, ...]:
        return tuple(r for r in self.results if r.blocking)

    @property
    def passed(self) -> bool:
        """True when no critical expectation failed (failed warnings do not block)."""
        return not self.blocking_failures

    def summary(self) -> str:
        n = len(self.results)
        return (f"{self.contract}: {n - len(self.failures)}/{n} expectations met, "
                f"{len(self.blocking_failures)} critical failure(s), "
                f"{len(self.failures) - len(self.blocking_failures)} warning(s)")

    def failures_markdown(self) -> str:
        return results_markdown(self.failures) if self.failures else "all expectations met"


class ContractViolation(Exception):
    """Raised when critical expectations fail; carries every contract result for the report."""

    def __init__(self, results: "list[ContractResult] | tuple[ContractResult, ...]", what: str = "data"):
        self.results = tuple(results)
        blocking = [f for r in self.results for f in r.blocking_failures]
        lines = "\n".join(f"  - {f.describe()}" for f in blocking)
        super().__init__(f"{what} breaks {len(blocking)} critical expectation(s):\n{lines}")


def _cell(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text.replace("|", "\\|").replace("\n", " ")


def _examples_text(examples: tuple[dict, ...]) -> str:
    return "; ".join(", ".join(f"{k}={_cell(v)}" for k, v in e.items()) for e in examples)


def results_markdown(results) -> str:
    """A markdown table of expectation results: what failed, where, how often, and examples."""
    lines = ["| contract | frame | expectation | column | severity | unexpected | examples |",
             "| --- | --- | --- | --- | --- | ---: | --- |"]
    for r in results:
        count = r.error or (str(r.unexpected_count) if r.unexpected_count is not None else f"observed {r.observed}")
        lines.append(f"| {r.contract} | {r.frame} | {r.expectation} | {r.column or ''} | {r.severity} "
                     f"| {_cell(count)} | {_cell(_examples_text(r.examples))} |")
    return "\n".join(lines)
