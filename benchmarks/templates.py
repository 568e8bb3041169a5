"""Time clean-task extraction: N = 1,000 and 10,000 tasks on the MIMIC-IV demo and on a synthetic
database of 1,000 patients. Target: 10,000 tasks from the demo in under 60 s.

The demo is loaded with the chartevents reconstruction overlaid (31 tables, so every intent runs);
the synthetic database is generated with seed 0. Building the databases is not part of the timing.
"N tasks" is the first extraction whose ``tasks_per_template`` yields at least N: the script starts
from N / templates and raises ``tasks_per_template`` until the total reaches N (population
templates run out of fillings early, so the patient-level ones make up the rest); the time reported
is that extraction's, from opening the database to the last task.

    python benchmarks/templates.py [--sizes 1000 10000] [--patients 1000] [--repeat 1]

Prints a markdown table; paste it under "Templates" in benchmarks/README.md.
"""

import argparse
import math
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from pipeline.loader import load_mimic
from pipeline.synthetic import generate_synthetic
from pipeline.templates import REGISTRY, extract_clean_tasks

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO.parent / "shared" / "mimic-iv-demo"
CHARTEVENTS = REPO.parent / "shared" / "mimic-iv-demo-chartevents"


def extract_at_least(db: Path, n: int, repeat: int) -> dict:
    per_template = math.ceil(n / len(REGISTRY))
    while True:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            result = extract_clean_tasks(db, tasks_per_template=per_template, seed=0)
            times.append(time.perf_counter() - started)
        total = len(result.tasks)
        if total >= n:
            break
        # Too few: grow in proportion to the shortfall (with a margin), never by less than one.
        per_template = max(per_template + 1, math.ceil(per_template * n / max(total, 1) * 1.1))
    return {"per_template": per_template, "tasks": total, "seconds": statistics.median(times),
            "rejected": sum(sum(c.values()) for c in result.rejections.values()),
            "examined": sum(result.examined.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--patients", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1, help="extractions per measurement (median reported)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        demo, synthetic = Path(tmp) / "demo.duckdb", Path(tmp) / "synthetic.duckdb"
        started = time.perf_counter()
        load_mimic([DEMO, CHARTEVENTS], demo)
        demo_build = time.perf_counter() - started
        started = time.perf_counter()
        generate_synthetic(synthetic, patients=args.patients, seed=0)
        synthetic_build = time.perf_counter() - started
        rows = []
        for label, db in (("MIMIC-IV demo (100 patients, 31 tables)", demo),
                          (f"synthetic ({args.patients:,} patients, seed 0)", synthetic)):
            for n in args.sizes:
                r = extract_at_least(db, n, args.repeat)
                rows.append((label, n, r))
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    load = os.getloadavg()[0]
    print(f"```\n{len(REGISTRY)} templates; duckdb {duckdb.__version__}, {os.cpu_count()} cores, load average "
          f"{load:.2f}; database builds (not timed below): demo {demo_build:.1f} s, synthetic {synthetic_build:.1f} s; "
          f"peak RSS of the whole run {peak_mb:,.0f} MB\n```\n")
    print("| database | N | tasks_per_template | tasks | fillings examined | rejected | seconds | tasks/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, n, r in rows:
        print(f"| {label} | {n:,} | {r['per_template']} | {r['tasks']:,} | {r['examined']:,} | {r['rejected']:,} | "
              f"{r['seconds']:.1f} | {r['tasks'] / r['seconds']:,.0f} |")


if __name__ == "__main__":
    main()
