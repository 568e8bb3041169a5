"""Time and peak memory of the synthetic MIMIC-IV generator at several patient counts.

Each size runs in its own subprocess, so its peak resident memory (read with ``os.wait4`` from
that child's resource usage) is its own and not the largest seen so far.

    python benchmarks/synthetic.py                 # 100, 1,000 and 10,000 patients
    python benchmarks/synthetic.py --sizes 100 1000 --seed 3
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time
from pipeline.synthetic import generate_synthetic
started = time.perf_counter()
counts = generate_synthetic(sys.argv[1], patients=int(sys.argv[2]), seed=int(sys.argv[3]))
print(json.dumps({"seconds": time.perf_counter() - started, "rows": sum(counts.values()),
                  "chartevents": counts["chartevents"], "labevents": counts["labevents"]}))
"""


def run_size(patients: int, seed: int, workdir: Path) -> dict:
    db = workdir / f"synthetic_{patients}.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(patients), str(seed)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = time.perf_counter()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"generating {patients} patients failed:\n{err}")
    result = json.loads(out.strip().splitlines()[-1])
    # ru_maxrss is in KiB on Linux.
    result.update(patients=patients, wall=wall, peak_mib=usage.ru_maxrss / 1024, db_mib=db.stat().st_size / 2**20)
    db.unlink()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1_000, 10_000])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import duckdb
    import numpy

    print(f"synthetic MIMIC-IV, seed {args.seed}; python {platform.python_version()}, duckdb {duckdb.__version__}, "
          f"numpy {numpy.__version__}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print()
    print("| patients | rows | generate s | process s | ms / patient | peak RSS MiB | database MiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="synthetic_bench_") as tmp:
        for patients in args.sizes:
            r = run_size(patients, args.seed, Path(tmp))
            print(f"| {patients:,} | {r['rows']:,} | {r['seconds']:.1f} | {r['wall']:.1f} | "
                  f"{1000 * r['seconds'] / patients:.2f} | {r['peak_mib']:.0f} | {r['db_mib']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
