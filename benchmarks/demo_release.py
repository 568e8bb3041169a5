"""The whole demo release (``robustgym build`` on the MIMIC-IV demo with the chartevents
reconstruction) next to a raw DuckDB load of the same 31 files, in the same run, as a ratio.

The raw load is ``source_load.floor``: ``CREATE TABLE AS SELECT * FROM read_csv(file)`` for every
table into a file database (the median of ``--repeat`` runs). The build runs in its own process with
``--workers N`` (default: the core count); each stage's wall time is taken from when the build
announces it to when its last partition reports, next to the CPU its steps spent (each step's process
and the SQL sandboxes it waited for, as the build reports it); the CPU the build and its workers
spent in all is printed under the table. Target (issue 15): the release within 15x the raw load.

    python benchmarks/demo_release.py [--workers N] [--repeat 3]

Prints a markdown table; paste it under "Demo release" in benchmarks/README.md.
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from build_timing import timed_build  # benchmarks/build_timing.py
from source_load import CHARTEVENTS, DEMO, floor  # benchmarks/source_load.py

from pipeline.loader import find_sources


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3, help="raw loads to take the median of (default 3)")
    args = parser.parse_args()
    files, _ = find_sources([DEMO, CHARTEVENTS])
    with tempfile.TemporaryDirectory(prefix="robustgym-bench-") as tmp:
        work = Path(tmp)
        raw = statistics.median(floor([s.path for s in files.values()], work / "raw.duckdb", None)
                                for _ in range(args.repeat))
        load_before = os.getloadavg()[0]
        run = timed_build(["--source", str(DEMO), str(CHARTEVENTS)], args.workers, work)
    if run.code:
        print(f"the build failed (exit {run.code}):\n{run.tail}", file=sys.stderr)
        return 1
    print(f"MIMIC-IV demo + chartevents reconstruction ({len(files)} tables); {os.cpu_count()} cores, "
          f"--workers {args.workers}; load average {load_before:.2f} before the build, "
          f"{os.getloadavg()[0]:.2f} after\n")
    print("| stage | wall s | steps | summed step s | steps' CPU s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for stage in run.stages:
        print(f"| {stage.asset} | {stage.wall:.1f} | {stage.steps} | {stage.summed:.1f} | {stage.cpu:.1f} |")
    steps_cpu = sum(stage.cpu for stage in run.stages)
    print(f"| **whole release** (process wall) | **{run.wall:.1f}** | | | {steps_cpu:.1f} |")
    # On two cores the wall time moves with the machine's load; the CPU the build spent moves less,
    # and it bounds what more parallel work could gain (CPU / cores).
    print(f"\nCPU (user + system) of the build and its workers: {run.cpu:.1f} s, {run.cpu / run.wall:.2f} cores "
          f"on average; at least {run.cpu / args.workers:.1f} s of wall on {args.workers} worker(s); "
          f"{run.cpu - steps_cpu:.1f} s of it outside the steps (start-up, forks, the command's own work)")
    print(f"\nraw DuckDB read_csv load of the same files: {raw:.1f} s (median of {args.repeat}); "
          f"release / raw load = **{run.wall / raw:.1f}x** (target 15x); largest process peak RSS "
          f"{run.peak_rss_mib:.0f} MiB")
    # No schedule beats the CPU over the workers: below this ratio only less CPU gets.
    print(f"\nthe lowest ratio this much CPU allows on {args.workers} worker(s): "
          f"{run.cpu / args.workers / raw:.1f}x; 15x needs the build's CPU under {15 * raw * args.workers:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
