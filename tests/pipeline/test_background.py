"""A background call runs beside its caller and hands back its value or its exception."""

import threading

import pytest

from pipeline.background import BackgroundCall


def test_the_call_runs_while_the_caller_goes_on_and_its_value_is_handed_back():
    caller_went_on = threading.Event()

    def waits_for_the_caller() -> str:
        # Started at once: it can only end after the caller has passed the constructor.
        assert caller_went_on.wait(timeout=10), "the call did not run beside its caller"
        return "value"

    call = BackgroundCall(waits_for_the_caller, name="test-call")
    caller_went_on.set()
    assert call.result() == "value"


def test_the_calls_exception_is_raised_by_result_and_not_by_wait():
    def fails(what: str) -> None:
        raise LookupError(what)

    call = BackgroundCall(fails, "not found", name="test-call")
    call.wait()
    with pytest.raises(LookupError, match="not found"):
        call.result()


def test_the_thread_is_a_daemon_so_an_interrupted_caller_does_not_wait_for_it():
    release = threading.Event()
    call = BackgroundCall(release.wait, 10, name="test-daemon")
    try:
        (thread,) = [t for t in threading.enumerate() if t.name == "test-daemon"]
        assert thread.daemon
    finally:
        release.set()
        call.wait()
