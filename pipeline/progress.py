"""Progress of long stages: structured events from the domain core, an ETA computed by whoever shows them.

A stage that works through countable units (templates, noise types, tables) calls its ``progress``
callback with a :class:`ProgressEvent`: which stage, what unit, how many are done of how many, and
the unit just finished. An event *is* its one-line text (a ``str`` subclass), so every callback
written for plain messages (``print``, a logger's ``info``, Dagster's ``context.log.info``) keeps
working unchanged, while a consumer that wants structure reads the attributes. Free-text messages
(``str`` that is not an event) stay allowed: a stage that has not adopted events yet still reports.

The producer never measures time. A consumer that shows an ETA feeds the events it receives to an
:class:`Eta`, which extrapolates from the pace of the units done so far.

In-process consumers that cannot hand a callback down (``robustgym build`` runs the stages inside
Dagster) subscribe with :func:`listening`; the Dagster assets pass their callback through
:func:`reporter`, which writes to the run's log and hands every message to the current listeners.
"""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Progress = Callable[[str], None]  # receives ProgressEvent or plain text


class ProgressEvent(str):
    """``stage``: e.g. "templates"; ``unit``: what is counted ("template"); ``done`` of ``total``
    units are finished; ``label``: the unit just finished; ``note``: what it gave (free text)."""

    stage: str
    unit: str
    done: int
    total: int
    label: str
    note: str

    def __new__(cls, stage: str, unit: str, done: int, total: int, label: str = "", note: str = ""):
        if total < 0 or not 0 <= done <= total:
            raise ValueError(f"progress of {stage}: done={done} must lie within 0..total={total}")
        text = f"{stage}: {unit} {done}/{total}" + (f" {label}" if label else "") + (f": {note}" if note else "")
        event = super().__new__(cls, text)
        event.stage, event.unit, event.done, event.total, event.label, event.note = (
            stage, unit, done, total, label, note)
        return event

    def __reduce__(self):  # pickles (and copies) as an event, not as the bare text
        return ProgressEvent, (self.stage, self.unit, self.done, self.total, self.label, self.note)

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


def emit(progress: Progress | None, event: str) -> None:
    if progress is not None:
        progress(event)


class Eta:
    """Seconds left in a stage, extrapolated from the units done since the stage's first event.

    One ``Eta`` can follow several stages: each (stage, unit) pair is timed from its own first event.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        # (stage, unit) -> (time of the first event, units done then, last event's done and total)
        self._runs: dict[tuple[str, str], tuple[float, int, int, int]] = {}

    def update(self, event: ProgressEvent) -> float | None:
        """Seconds left after ``event``, or None while nothing has been timed yet."""
        now = self._clock()
        key = (event.stage, event.unit)
        run = self._runs.get(key)
        # A count going back, or another total, means the stage started again: time it afresh.
        if run is None or event.done < run[2] or event.total != run[3]:
            self._runs[key] = (now, event.done, event.done, event.total)
            return None if event.done < event.total else 0.0
        start, done_at_start = run[0], run[1]
        self._runs[key] = (start, done_at_start, event.done, event.total)
        done = event.done - done_at_start
        if done <= 0:
            return None
        return (now - start) / done * (event.total - event.done)


def format_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    minutes, s = divmod(seconds, 60)
    hours, m = divmod(minutes, 60)
    return f"{hours}:{m:02d}:{s:02d}" if hours else f"{m}:{s:02d}"


# ------------------------------------------------------------------ in-process listeners

_listeners: list[Progress] = []
_lock = threading.Lock()


@contextmanager
def listening(callback: Progress) -> Iterator[None]:
    """Hand every message a :func:`reporter` sends, in this process, to ``callback`` while the block runs."""
    with _lock:
        _listeners.append(callback)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(callback)


def reporter(log: Progress | None = None) -> Progress:
    """A progress callback for a domain function: each message goes to ``log`` and to the listeners."""

    def report(message: str) -> None:
        if log is not None:
            log(message)
        with _lock:
            listeners = list(_listeners)
        for listener in listeners:
            listener(message)

    return report
