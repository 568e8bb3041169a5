"""``robustgym build`` in a child process, with each stage's wall time, the child's peak memory and the
CPU it spent (its workers included).

A stage's wall time runs from the line where the build announces it (``[k/N] asset ...``, or
``[k-m/N] asset[p1], asset[p2] ... (2 at a time)`` for partitions built together) to the line where
its last step reports (``[k/N] asset[p] ok in S s, C s of CPU``); the step seconds and the steps' CPU
are summed too, so a parallel stage shows both what it cost and how long it took.
"""

import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_STARTED = re.compile(r"^\[\d+(?:-\d+)?/\d+\] (?P<labels>.+?) \.\.\.")
_FINISHED = re.compile(r"^\[\d+/\d+\] (?P<label>\S+) (?:ok|FAILED).* in (?P<seconds>[\d.]+) s"
                       r"(?:, (?P<cpu>[\d.]+) s of CPU)?$")


@dataclass(frozen=True)
class StageTime:
    asset: str
    wall: float  # seconds from announced to its last step's report
    summed: float  # the steps' own seconds, added up
    steps: int
    # The steps' CPU (each step's process and the sandboxes it waited for), added up; NaN in results
    # saved before it was recorded.
    cpu: float = math.nan


@dataclass(frozen=True)
class BuildRun:
    wall: float
    stages: list[StageTime]
    code: int
    peak_rss_mib: float  # the largest process of the build (its forked workers included)
    tail: str  # the last lines of its stderr, for a failure
    # User + system seconds of the build and every worker it waited for (NaN in results saved before it
    # was recorded: scale.py reads those back).
    cpu: float = math.nan


def timed_build(build_args: list[str], workers: int, work: Path) -> BuildRun:
    """Run ``robustgym build BUILD_ARGS --workers N`` with its data and releases under ``work``."""
    command = [sys.executable, "-m", "robustgym.cli", "build", *build_args, "--workers", str(workers),
               "--data-dir", str(work / "data"), "--releases-dir", str(work / "releases")]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    began: dict[str, float] = {}
    ended: dict[str, float] = {}
    seconds: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    tail: list[str] = []
    for line in proc.stderr:
        now = time.perf_counter() - started
        line = line.rstrip("\n")
        tail = (tail + [line])[-20:]
        if m := _STARTED.match(line):
            for label in m["labels"].split(", "):
                began.setdefault(label.split("[", 1)[0], now)
        elif m := _FINISHED.match(line):
            asset = m["label"].split("[", 1)[0]
            ended[asset] = now
            seconds.setdefault(asset, []).append(float(m["seconds"]))
            cpu.setdefault(asset, []).append(float(m["cpu"]) if m["cpu"] else math.nan)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    stages = [StageTime(a, ended[a] - began[a], sum(seconds[a]), len(seconds[a]), sum(cpu[a]))
              for a in began if a in ended]
    return BuildRun(wall, stages, os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, "\n".join(tail),
                    cpu=usage.ru_utime + usage.ru_stime)
