"""Time the MIMIC-IV loader on the demo (31 tables: demo + chartevents overlay) against the floor.

The floor is what plain DuckDB takes over the same files in the same run: ``CREATE TABLE AS SELECT *
FROM read_csv(file)`` with type auto-detection, into a file database, checkpointed. The loader does
more (declared types, row_id, header checks, sha256 and a full gzip verification of every file on a
second thread, the integrity check of natural keys and links, metadata); the target is to stay
within 1.5x of the floor.

    python benchmarks/source_load.py [--repeat 3] [--threads N]

Prints a markdown table; paste it under "Source load" in benchmarks/README.md.
"""

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from pipeline.integrity import check_integrity
from pipeline.loader import digest_file, find_sources, load_mimic

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO.parent / "shared" / "mimic-iv-demo"
CHARTEVENTS = REPO.parent / "shared" / "mimic-iv-demo-chartevents"


def floor(files: list[Path], db: Path, threads: int | None) -> float:
    db.unlink(missing_ok=True)
    started = time.perf_counter()
    con = duckdb.connect(str(db))
    if threads:
        con.execute(f"SET threads = {threads}")
    for f in files:
        name = f.name.split(".")[0]
        con.execute(f"CREATE TABLE \"{name}\" AS SELECT * FROM read_csv('{f}')")
    con.execute("CHECKPOINT")
    con.close()
    return time.perf_counter() - started


def loader(dirs: list[Path], db: Path, threads: int | None) -> tuple[float, int]:
    started = time.perf_counter()
    report = load_mimic(dirs, db, threads=threads)
    return time.perf_counter() - started, sum(report.row_counts.values())


def digests(dirs: list[Path]) -> float:
    files, _ = find_sources(dirs)
    started = time.perf_counter()
    for src in files.values():
        digest_file(src)
    return time.perf_counter() - started


def integrity(db: Path) -> float:
    with duckdb.connect(str(db), read_only=True) as con:
        started = time.perf_counter()
        check_integrity(con)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="DuckDB threads for both (default: all cores)")
    args = parser.parse_args()

    dirs = [DEMO, CHARTEVENTS]
    files, problems = find_sources(dirs)
    assert not problems and len(files) == 31, f"expected the demo and chartevents under {REPO.parent / 'shared'}"
    paths = [s.path for s in files.values()]
    size = sum(p.stat().st_size for p in paths)

    times: dict[str, list[float]] = {"floor": [], "loader": [], "digest": [], "integrity": []}
    rows = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            # Alternate the order so drift in machine load hits both sides alike.
            order = ("floor", "loader") if i % 2 == 0 else ("loader", "floor")
            for what in order:
                if what == "floor":
                    times["floor"].append(floor(paths, Path(tmp) / "floor.duckdb", args.threads))
                else:
                    seconds, rows = loader(dirs, Path(tmp) / "loader.duckdb", args.threads)
                    times["loader"].append(seconds)
                    times["integrity"].append(integrity(Path(tmp) / "loader.duckdb"))
            times["digest"].append(digests(dirs))

    med = {k: statistics.median(v) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    print(f"MIMIC-IV demo + chartevents overlay: 31 tables, {rows:,} rows, {size / 1e6:.1f} MB gzip; "
          f"{args.repeat} runs each, duckdb {duckdb.__version__}, {os.cpu_count()} cores, "
          f"threads={args.threads or 'default'}, load average {os.getloadavg()[0]:.2f}")
    print()
    print("| step | median s | min s | rows/s (median) | vs floor (median) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| floor: DuckDB `read_csv` auto-detect, CREATE TABLE AS | {med['floor']:.2f} | {low['floor']:.2f} "
          f"| {rows / med['floor']:,.0f} | 1.00x |")
    print(f"| `load_mimic` (typed, row_id, checks, integrity, fingerprint) | {med['loader']:.2f} | {low['loader']:.2f} "
          f"| {rows / med['loader']:,.0f} | {med['loader'] / med['floor']:.2f}x |")
    print(f"| of which overlapped: sha256 + gzip verification alone | {med['digest']:.2f} | {low['digest']:.2f} "
          f"| | |")
    print(f"| of which: integrity check (natural keys and links) alone | {med['integrity']:.2f} | "
          f"{low['integrity']:.2f} | | |")


if __name__ == "__main__":
    main()
