"""Each Great Expectations expectation's configuration built once per validation run, not ~100 times.

``Expectation.configuration`` (great-expectations 1.x) is a property that rebuilds an
``ExpectationConfiguration`` from the expectation's pydantic fields on every access, and a run reads
it about 114 times per expectation (the metric kwargs are looked up one key at a time, each through
a fresh configuration): half the time a contract takes. Nothing changes an expectation's fields
while a suite runs, so within ``configurations_built_once`` the first configuration built for an
expectation is the one every later access gets. Outside the block, and in any other thread, the
property behaves as Great Expectations wrote it.

Tests hold the results to those of runs without the memo (``tests/pipeline/contracts/test_runner.py``).
If a later Great Expectations no longer has the property, nothing is installed and contracts run
as they are, only slower; a test notices.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_runs = threading.local()  # .memo: id(expectation) -> (expectation, configuration), during a run
_build = None  # Great Expectations' own property getter, once installed


def _configuration(self):
    memo = getattr(_runs, "memo", None)
    if memo is None:
        return _build(self)
    found = memo.get(id(self))
    if found is None:
        # The expectation is kept with its configuration: its id cannot be reused during the run.
        found = memo[id(self)] = (self, _build(self))
    return found[1]


def install() -> bool:
    """Put the memoizing property on ``Expectation`` (once); False if Great Expectations has none."""
    global _build
    from great_expectations.expectations.expectation import Expectation

    current = Expectation.__dict__.get("configuration")
    if isinstance(current, property) and current.fget is _configuration:
        return True
    if not isinstance(current, property) or current.fget is None:
        return False
    _build = current.fget
    Expectation.configuration = property(_configuration, doc=current.__doc__)
    return True


@contextmanager
def configurations_built_once() -> Iterator[None]:
    """Within the block, in this thread, each expectation's configuration is built on first access
    and reused after. Nested blocks share the outer block's memo."""
    install()
    outer = getattr(_runs, "memo", None)
    _runs.memo = {} if outer is None else outer
    try:
        yield
    finally:
        _runs.memo = outer
