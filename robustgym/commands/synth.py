"""``robustgym synth --patients N --seed S --db PATH``: build the synthetic MIMIC-IV source database."""

import argparse
import sys
import time
from pathlib import Path


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "synth", help="generate a synthetic MIMIC-IV database (all 31 tables)",
        description="Generate a synthetic MIMIC-IV database with the real schema, item ids, labels, units "
                    "and ICD codes. The same seed and patient count always give the same contents; "
                    "a failed build leaves an existing database untouched.")
    p.add_argument("--patients", type=_positive, default=1000, metavar="N", help="number of patients (default 1000)")
    p.add_argument("--seed", type=_non_negative, default=0, metavar="S", help="random seed (default 0)")
    p.add_argument("--db", required=True, type=Path, metavar="PATH", help="the DuckDB file to write")
    p.add_argument("--quiet", action="store_true", help="no per-chunk progress on stderr")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.synthetic import generate_synthetic  # imported here: `robustgym --help` stays quick

    progress = None if args.quiet else (lambda message: print(message, file=sys.stderr, flush=True))
    started = time.perf_counter()
    counts = generate_synthetic(args.db, patients=args.patients, seed=args.seed, progress=progress)
    print(render_counts(counts))
    print(f"database: {args.db}")
    print(f"patients: {args.patients}, seed: {args.seed}, time: {time.perf_counter() - started:.1f} s")
    return 0


def render_counts(counts: dict[str, int]) -> str:
    """Row counts per table and their total, aligned in two columns."""
    width = max(len(name) for name in [*counts, "total"])
    numbers = [f"{n:,}" for n in counts.values()]
    total = f"{sum(counts.values()):,}"
    digits = max(len(s) for s in [*numbers, total, "rows"])
    lines = [f"{'table':<{width}}  {'rows':>{digits}}", f"{'-' * width}  {'-' * digits}"]
    lines += [f"{name:<{width}}  {n:>{digits}}" for name, n in zip(counts, numbers)]
    lines += [f"{'-' * width}  {'-' * digits}", f"{'total':<{width}}  {total:>{digits}}"]
    return "\n".join(lines)
