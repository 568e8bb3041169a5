"""The whole pipeline, synthetic generation through the published release, at growing patient counts.

Each size is one ``robustgym build --patients N`` in its own process (``build_timing``), so its peak
memory is its own. Per size: each stage's wall time, the build's peak RSS and CPU (its workers
included), the source database's size and rows, clean tasks and twins. Then each stage's growth
exponent b in ``seconds = a x rows^b`` (least squares on logs) and the release time those fits predict for the full MIMIC-IV's 365K
patients (rows grow with patients at the largest size's rows per patient). The task count is fixed
by the config (``target_pairs``), so an exponent above 1 means a stage's cost per task grows with the
database.

    python benchmarks/scale.py                         # 1,000, 10,000 and 30,000 patients
    python benchmarks/scale.py --sizes 1000 10000 30000 100000 --workers 2
    python benchmarks/scale.py --sizes 365000 --results scale.json   # add one size to earlier ones

``--results FILE`` keeps each size's measurements as it finishes (sizes already in the file are not
run again, and the tables and fits cover every size in it), so a long series survives an
interruption and a later size can join the earlier ones. Prints markdown tables; paste them under "Scale" in benchmarks/README.md.
"""

import argparse
import json
import math
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from build_timing import BuildRun, StageTime, timed_build  # benchmarks/build_timing.py

FULL_MIMIC_PATIENTS = 364_627
TWO_HOURS = 7200.0


def _facts(work: Path) -> dict:
    import duckdb

    db = work / "data" / "source.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT starts_with(table_name, '_')")
                  .fetchall()]
        rows = sum(con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables)
    manifest = json.loads(next((work / "releases").glob("*/manifest.json")).read_text())
    return {"rows": rows, "db_mib": db.stat().st_size / 2**20, "clean": manifest["counts"]["clean"],
            "twins": manifest["counts"]["noise"]}


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """(a, b) of y = a * x^b by least squares on logs."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-3)) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    b = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sum((x - mx) ** 2 for x in lx)
    return math.exp(my - b * mx), b


def _read_results(path: Path | None) -> dict[int, tuple[BuildRun, dict]]:
    if path is None or not path.exists():
        return {}
    out = {}
    for entry in json.loads(path.read_text()):
        run = dict(entry["run"], stages=[StageTime(**s) for s in entry["run"]["stages"]])
        out[int(entry["patients"])] = (BuildRun(**run), entry["facts"])
    return out


def _write_results(path: Path | None, runs: list[tuple[int, BuildRun, dict]]) -> None:
    if path is None:
        return
    entries = [{"patients": n, "run": asdict(run), "facts": facts} for n, run, facts in sorted(runs, key=lambda r: r[0])]
    path.write_text(json.dumps(entries, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 30_000])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results", type=Path, help="JSON file to keep each size's measurements in and reuse")
    args = parser.parse_args()
    earlier = _read_results(args.results)
    runs: list[tuple[int, BuildRun, dict]] = [(n, run, facts) for n, (run, facts) in earlier.items()]
    load = os.getloadavg()[0]
    for n in args.sizes:
        if n in earlier:
            continue
        before = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="robustgym-scale-") as tmp:
            work = Path(tmp)
            run = timed_build(["--patients", str(n), "--seed", str(args.seed)], args.workers, work)
            if run.code:
                print(f"{n} patients: the build failed (exit {run.code}):\n{run.tail}", file=sys.stderr)
                return 1
            facts = dict(_facts(work), load=[round(before, 2), round(os.getloadavg()[0], 2)])
        runs.append((n, run, facts))
        _write_results(args.results, runs)
        print(f"{n} patients: {run.wall:.0f} s, peak {run.peak_rss_mib:.0f} MiB, {facts['rows']:,} rows", flush=True)

    runs.sort(key=lambda r: r[0])
    stages = [s.asset for s in runs[0][1].stages]
    print(f"\n{os.cpu_count()} cores, --workers {args.workers}; load average {load:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after\n")
    print("| patients | load avg before/after | rows | DB MiB | clean tasks | twins | peak RSS MiB | whole release s | "
          "build CPU s | " + " | ".join(f"{s} s" for s in stages) + " |")
    print("| " + " | ".join(["---:"] * (9 + len(stages))) + " |")
    for n, run, f in runs:
        by = {s.asset: s.wall for s in run.stages}
        load_pair = "/".join(f"{x:.1f}" for x in f.get("load", [])) or "-"
        print(f"| {n:,} | {load_pair} | {f['rows']:,} | {f['db_mib']:.0f} | {f['clean']:,} | {f['twins']:,} | "
              f"{run.peak_rss_mib:.0f} | {run.wall:.0f} | {run.cpu:.0f} | "
              + " | ".join(f"{by.get(s, 0):.1f}" for s in stages) + " |")
    if len(runs) < 2:
        return 0
    rows = [f["rows"] for _, _, f in runs]
    full_rows = rows[-1] / runs[-1][0] * FULL_MIMIC_PATIENTS
    print(f"\nGrowth in source rows, extrapolated to {FULL_MIMIC_PATIENTS:,} patients (~{full_rows:,.0f} rows):\n")
    print("| stage | exponent b | predicted s at full scale |")
    print("| --- | ---: | ---: |")
    total = 0.0
    for stage in [*stages, "whole release"]:
        ys = [run.wall if stage == "whole release" else next((s.wall for s in run.stages if s.asset == stage), 0.0)
              for _, run, _ in runs]
        a, b = _fit(rows, ys)
        predicted = a * full_rows ** b
        if stage != "whole release":
            total += predicted
        print(f"| {stage} | {b:.2f} | {predicted:,.0f} |")
    rss_a, rss_b = _fit(rows, [run.peak_rss_mib for _, run, _ in runs])
    print(f"\nsum of the stages at full scale: {total:,.0f} s ({total / 3600:.1f} h; "
          f"{'within' if total <= TWO_HOURS else 'beyond'} two hours); peak RSS ~{rss_a * full_rows ** rss_b:,.0f} MiB "
          f"(exponent {rss_b:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
