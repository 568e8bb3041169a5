"""The SQL worker's statement deadline: one thread that interrupts a statement once its time is up,
and never one that has finished."""

import threading
import time

import duckdb
import pytest

from robustgym.sql_worker import StatementDeadline

LONG_SQL = "SELECT sum(i) FROM range(300000000000) t(i)"  # minutes of work


@pytest.fixture()
def deadline():
    d = StatementDeadline()
    yield d
    d.close()


def _watchers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "statement-deadline"]


def test_a_statement_past_its_time_is_interrupted(deadline):
    con = duckdb.connect()
    started = time.monotonic()
    deadline.start(con, 0.3)
    with pytest.raises(duckdb.InterruptException):
        con.execute(LONG_SQL).fetchall()
    deadline.finish()
    assert 0.3 <= time.monotonic() - started < 5
    assert con.execute("SELECT 42").fetchone() == (42,)  # the connection serves the next statement


class _Interrupts:
    """Counts the interrupts a connection receives."""

    def __init__(self):
        self.count = 0

    def interrupt(self) -> None:
        self.count += 1


def test_a_finished_statement_is_not_interrupted_after_its_time(deadline):
    finished, overrun = _Interrupts(), _Interrupts()
    deadline.start(finished, 0.2)
    deadline.finish()
    time.sleep(0.4)  # past the deadline the statement had
    assert finished.count == 0
    deadline.start(overrun, 0.2)
    time.sleep(0.4)
    assert overrun.count == 1  # once, not again while the statement winds down
    deadline.finish()


def test_one_thread_serves_every_statement_and_closing_ends_it():
    before = len(_watchers())
    d = StatementDeadline()
    con = duckdb.connect()
    for _ in range(50):
        d.start(con, 30)
        con.execute("SELECT 1").fetchall()
        d.finish()
    assert len(_watchers()) == before + 1
    d.close()
    assert len(_watchers()) == before
