"""A background call runs beside its caller, hands back its value or its exception, and does not
outlive its block unless the block was interrupted."""

import threading

import pytest

from pipeline.background import BackgroundCall


def test_the_call_runs_while_the_caller_goes_on_and_its_value_is_handed_back():
    caller_went_on = threading.Event()

    def waits_for_the_caller() -> str:
        # Started at once: it can only end after the caller has passed the constructor.
        assert caller_went_on.wait(timeout=10), "the call did not run beside its caller"
        return "value"

    with BackgroundCall(waits_for_the_caller, name="test-call") as call:
        caller_went_on.set()
        assert call.result() == "value"


def test_the_calls_exception_is_raised_by_result_not_by_the_block():
    def fails(what: str) -> None:
        raise LookupError(what)

    with BackgroundCall(fails, "not found", name="test-call") as call:
        pass
    with pytest.raises(LookupError, match="not found"):
        call.result()


def _slow_call(release: threading.Event, ended: list) -> BackgroundCall:
    def waits() -> None:
        release.wait(timeout=10)
        ended.append(True)

    return BackgroundCall(waits, name="test-slow")


def test_a_block_that_fails_waits_for_its_call_before_the_failure_goes_on():
    # The process may go on, and fork, after an ordinary failure: no call may still be running then.
    release, ended = threading.Event(), []
    with pytest.raises(ValueError):
        with _slow_call(release, ended):
            threading.Timer(0.2, release.set).start()
            raise ValueError("the step failed")
    assert ended == [True]


def test_an_interrupted_block_leaves_at_once_on_a_daemon_thread():
    release, ended = threading.Event(), []
    with pytest.raises(KeyboardInterrupt):
        with _slow_call(release, ended) as call:
            raise KeyboardInterrupt
    try:
        assert ended == []
        (thread,) = [t for t in threading.enumerate() if t.name == "test-slow"]
        assert thread.daemon
    finally:
        release.set()
        call.result()
