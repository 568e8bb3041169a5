"""A background call runs beside its caller, hands back its value or its exception, and does not
outlive its block unless the block was interrupted; while any runs, the interpreter switches
threads often enough that the caller's statements do not wait on the other thread."""

import sys
import threading

import pytest

from pipeline.background import SWITCH_INTERVAL_S, BackgroundCall


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


@pytest.fixture
def default_switch_interval():
    saved = sys.getswitchinterval()
    sys.setswitchinterval(0.005)  # Python's default
    yield
    sys.setswitchinterval(saved)


def test_the_switch_interval_is_lowered_while_calls_run_and_put_back_after_the_last(default_switch_interval):
    # A thread back from DuckDB would otherwise wait up to 5 ms for the interpreter lock per statement.
    first_may_end, second_may_end = threading.Event(), threading.Event()
    first = BackgroundCall(lambda: first_may_end.wait(timeout=10), name="test-first")
    second = BackgroundCall(lambda: second_may_end.wait(timeout=10), name="test-second")
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S, rel=0.05)
    first_may_end.set()
    first.result()
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S, rel=0.05), "put back while a call still runs"
    second_may_end.set()
    second.result()
    assert sys.getswitchinterval() == pytest.approx(0.005, rel=0.05)


def test_a_failed_call_puts_the_switch_interval_back(default_switch_interval):
    def fails() -> None:
        raise LookupError("no")

    call = BackgroundCall(fails, name="test-call")
    with pytest.raises(LookupError):
        call.result()
    assert sys.getswitchinterval() == pytest.approx(0.005, rel=0.05)


def test_a_switch_interval_already_lower_is_left_as_it_is():
    saved = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S / 5)
    try:
        seen = BackgroundCall(sys.getswitchinterval, name="test-call").result()
        assert seen == pytest.approx(SWITCH_INTERVAL_S / 5, rel=0.05)
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S / 5, rel=0.05)
    finally:
        sys.setswitchinterval(saved)
