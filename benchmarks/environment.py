"""Time the environment on a demo release: reset, sql and python calls, against copying the database.

A reset lays one view per table the task's patch touches over the shared, read-only base database
(O(patch)); the naive way gives each episode its own copy of the database. This script builds a
real demo release with the pipeline (templates, noise, release), then measures over its tasks:

- ``Env(...)``: attaching the base read-only, the shared views, locking the instance (once per Env);
- ``reset``: every task of the release; then its first statement, ``SELECT 1``, which makes the
  episode's connection and views, grouped by the number of rows the task's patch touches;
- ``sql``: a simple query and each task's gold SQL, through the statement check and the limits;
- ``python``: a trivial call and one that calls ``query()`` (a fresh sandboxed process each);
- the naive way: copying the base file, and copying the database into memory with DuckDB;
- the hard limits: statements that build one huge value, under the default limits (5 s, 1 GB), with
  the time until the tool answers and the SQL worker's peak resident memory (``--no-limits`` skips).

    python benchmarks/environment.py [--release DIR --base-database FILE] [--per-cell 2] [--repeat 3]

Targets: reset (with its first statement) under 50 ms, median simple sql call under 20 ms; a
statement over its limits answered within twice the time limit, the worker under twice the memory
limit. Prints markdown tables; paste them under "Environment" in benchmarks/README.md.
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import duckdb

from robustgym.env import Env, Limits
from robustgym.python_sandbox import os_isolation
from robustgym.release import load_release
from robustgym.sql_sandbox import SqlLimits, memory_bytes

# Statements DuckDB's own memory limit and interrupt do not stop (one huge value in one call).
OVER_THE_LIMITS = (
    "SELECT length(repeat('x', 3000000000))",
    "SELECT length(lpad('x', 2147483647, 'y'))",
    "SELECT length(string_agg('xxxxxxxxxx', '')) FROM range(300000000)",
    "SELECT len(list(x)) FROM range(400000000) t(x)",
    "SELECT length(regexp_replace(repeat('a', 400000000), 'a', 'bb', 'g'))",
)

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO.parent / "shared" / "mimic-iv-demo"
CHARTEVENTS = REPO.parent / "shared" / "mimic-iv-demo-chartevents"


def build_demo_release(work: Path, per_cell: int) -> tuple[Path, Path]:
    """The demo (31 tables) loaded, and a release of a few clean tasks per intent and level with their twins."""
    from pipeline.loader import load_mimic
    from pipeline.noise.build import build_pairs
    from pipeline.release.publish import build_release
    from pipeline.templates.extract import extract_clean_tasks

    db = work / "demo.duckdb"
    load_mimic([DEMO, CHARTEVENTS], db)
    extracted = extract_clean_tasks(db, tasks_per_template=1, seed=0)
    per: Counter = Counter()
    clean = []
    for task in extracted.tasks:
        if per[(task.intent, task.level)] < per_cell:
            per[(task.intent, task.level)] += 1
            clean.append(task)
    twins = build_pairs(db, clean, seed=0).twins
    with_twins = {t.clean_task_id for t in twins}
    clean = [t for t in clean if t.task_id in with_twins]
    result = build_release(clean + list(twins), source_db=db, version="0.0.1", releases_dir=work / "releases",
                           seed=0, intents=sorted({t.intent.value for t in clean}))
    return result.path, db


def ms(seconds: list[float]) -> tuple[float, float, float]:
    values = sorted(s * 1000 for s in seconds)
    p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
    return statistics.median(values), p95, values[-1]


def patch_rows(task) -> int:
    return len(task.patch.hide) + len(task.patch.add) + len(task.patch.update)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--release", type=Path, help="an existing release (default: build one from the demo)")
    parser.add_argument("--base-database", type=Path, help="its base database, when it ships none")
    parser.add_argument("--per-cell", type=int, default=2, help="clean tasks per intent and level when building")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of each measurement")
    parser.add_argument("--no-limits", action="store_true", help="skip the statements over the hard limits")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="robustgym-bench-") as tmp:
        work = Path(tmp)
        if args.release:
            release_dir, base = args.release, args.base_database
        else:
            started = time.perf_counter()
            release_dir, base = build_demo_release(work, args.per_cell)
            print(f"built the demo release in {time.perf_counter() - started:.1f} s")
        release = load_release(release_dir, base_database=base)
        tasks = release.tasks()
        limits = Limits(max_tool_calls=1_000_000)

        construct = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            Env(release, limits=limits).close()
            construct.append(time.perf_counter() - started)

        env = Env(release, limits=limits)
        first_statements: dict[str, list[float]] = {
            "0 (clean, query-level)": [], "1-10": [], "11-100": [], ">100": []}
        all_resets, simple, gold = [], [], []
        for _ in range(args.repeat):
            for task in tasks:
                started = time.perf_counter()
                env.reset(task.task_id)
                reset_done = time.perf_counter()
                env.sql("SELECT 1")  # the episode's connection and views are made at its first statement
                first_done = time.perf_counter()
                all_resets.append(reset_done - started)
                n = patch_rows(task)
                first_statements["0 (clean, query-level)" if n == 0 else "1-10" if n <= 10 else "11-100" if n <= 100
                                 else ">100"].append(first_done - reset_done)
                observation = env.sql("SELECT count(*) FROM patients")
                assert observation.ok, observation.content
                simple.append(observation.elapsed_ms / 1000)
                observation = env.sql(task.gold_sql)
                gold.append(observation.elapsed_ms / 1000)
        env.reset(tasks[0].task_id)
        python_plain, python_query = [], []
        for _ in range(max(args.repeat, 5)):
            python_plain.append(env.python("print(1)").elapsed_ms / 1000)
            python_query.append(env.python("print(query('SELECT count(*) AS n FROM patients'))").elapsed_ms / 1000)
        env.close()

        limit_rows = [] if args.no_limits else over_the_limits(release, tasks[0].task_id)

        base_path = release.base_database
        size_mb = base_path.stat().st_size / 1e6
        file_copy, memory_copy = [], []
        for i in range(args.repeat):
            target = work / f"copy{i}.duckdb"
            started = time.perf_counter()
            shutil.copyfile(base_path, target)
            file_copy.append(time.perf_counter() - started)
            target.unlink()
            started = time.perf_counter()
            con = duckdb.connect()
            con.execute(f"ATTACH '{base_path}' AS src (READ_ONLY)")
            con.execute("COPY FROM DATABASE src TO memory")
            memory_copy.append(time.perf_counter() - started)
            con.close()

    sizes = Counter(patch_rows(t) for t in tasks)
    print(f"\nrelease {release.version}: {len(tasks)} tasks ({sum(n for k, n in sizes.items() if k == 0)} with an "
          f"empty patch, largest patch {max(sizes)} rows); base database {size_mb:.1f} MB; {args.repeat} runs; "
          f"duckdb {duckdb.__version__}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}; "
          f"Python sandbox OS layer: {'on' if os_isolation() else 'off'}\n")
    print("| step | n | median ms | p95 ms | max ms |")
    print("| --- | ---: | ---: | ---: | ---: |")
    rows = [("`Env(release)` (attach, views, lock; once)", construct)]
    rows += [("`reset`, all tasks", all_resets)]
    rows += [(f"first statement (`SELECT 1`, connection and views), patch of {k} rows", v)
             for k, v in first_statements.items() if v]
    rows += [("`sql`: `SELECT count(*) FROM patients`", simple), ("`sql`: each task's gold SQL", gold),
             ("`python`: `print(1)`", python_plain), ("`python`: one `query()`", python_query),
             (f"naive: copy the base file ({size_mb:.0f} MB)", file_copy),
             ("naive: copy the database into memory (DuckDB)", memory_copy)]
    for name, values in rows:
        median, p95, worst = ms(values)
        print(f"| {name} | {len(values)} | {median:.2f} | {p95:.2f} | {worst:.2f} |")
    if limit_rows:
        limits = SqlLimits()
        print(f"\nhard limits: timeout {limits.timeout_s:g} s, memory_limit {limits.memory_limit}; a fresh Env "
              "per statement\n")
        print("| statement | answered after s | x time limit | error | worker peak MB | x memory limit |")
        print("| --- | ---: | ---: | --- | ---: | ---: |")
        for query, seconds, kind, peak in limit_rows:
            print(f"| `{query}` | {seconds:.2f} | {seconds / limits.timeout_s:.2f} | {kind} | {peak / 1e6:.0f} | "
                  f"{peak / memory_bytes(limits.memory_limit):.2f} |")


def over_the_limits(release, task_id: str) -> list[tuple[str, float, str, int]]:
    """Each statement in its own Env under the default limits: time to the answer, the error, the
    worker's peak resident memory."""
    out = []
    for query in OVER_THE_LIMITS:
        with Env(release, limits=Limits(sql=SqlLimits(), max_tool_calls=10)) as env:
            env.reset(task_id)
            started = time.perf_counter()
            observation = env.sql(query)
            seconds = time.perf_counter() - started
            out.append((query, seconds, observation.error_kind or "none", env._db.peak_memory_bytes()))
    return out


if __name__ == "__main__":
    main()
