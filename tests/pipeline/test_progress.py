"""The progress protocol: events that are their own text, an ETA on the consumer side, listeners."""

import pickle

import pytest

from pipeline.progress import Eta, ProgressEvent, format_seconds, listening, reporter


def test_an_event_is_its_one_line_text_and_carries_its_counts():
    event = ProgressEvent("templates", "template", 3, 17, "lab_last_value", "40 tasks, 2 fillings rejected")
    assert event == "templates: template 3/17 lab_last_value: 40 tasks, 2 fillings rejected"
    assert (event.stage, event.unit, event.done, event.total, event.label) == (
        "templates", "template", 3, 17, "lab_last_value")
    assert event.fraction == pytest.approx(3 / 17)
    copy = pickle.loads(pickle.dumps(event))
    assert isinstance(copy, ProgressEvent) and copy.label == "lab_last_value" and copy == event


def test_a_count_outside_its_total_is_refused():
    with pytest.raises(ValueError, match="done=5"):
        ProgressEvent("noise", "noise type", 5, 4)


def test_the_eta_extrapolates_the_pace_since_the_first_event():
    now = [100.0]
    eta = Eta(clock=lambda: now[0])
    assert eta.update(ProgressEvent("templates", "template", 0, 10)) is None
    now[0] = 104.0
    assert eta.update(ProgressEvent("templates", "template", 2, 10)) == pytest.approx(16.0)  # 2 s a unit, 8 left
    now[0] = 110.0
    assert eta.update(ProgressEvent("templates", "template", 10, 10)) == 0.0
    # Another stage is timed on its own; a stage that starts again restarts its clock.
    assert eta.update(ProgressEvent("noise", "noise type", 0, 3)) is None
    now[0] = 200.0
    assert eta.update(ProgressEvent("templates", "template", 0, 5)) is None
    now[0] = 203.0
    assert eta.update(ProgressEvent("templates", "template", 1, 5)) == pytest.approx(12.0)
    assert format_seconds(75) == "1:15" and format_seconds(3725) == "1:02:05"


def test_a_reporter_writes_to_its_log_and_to_every_listener_while_listening():
    logged, heard = [], []
    report = reporter(logged.append)
    report("before")
    with listening(heard.append):
        report(ProgressEvent("noise", "noise type", 1, 9, "missing_evidence"))
        report("a plain message")
    report("after")
    assert logged == ["before", "noise: noise type 1/9 missing_evidence", "a plain message", "after"]
    assert heard == ["noise: noise type 1/9 missing_evidence", "a plain message"]
    assert isinstance(heard[0], ProgressEvent)
