"""``robustgym load DIR [DIR ...] --db PATH``: build the source database from MIMIC-IV folders."""

import argparse
import logging
import sys
from pathlib import Path

from pipeline.vocabulary import Intent

EXIT_BAD_SOURCE = 2
# The loader's messages name its Python keywords; here they are the command's flags.
CLI_SPELLING = {"allow_missing": "--allow-missing", "strict": "--strict"}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "load", help="load MIMIC-IV folders (PhysioNet layout) into a DuckDB source database",
        description="Load MIMIC-IV in PhysioNet's layout (hosp/*.csv.gz, icu/*.csv.gz; plain .csv "
                    "accepted) into one DuckDB file. Every problem with the input is listed at once; "
                    "a failed load leaves an existing database untouched.")
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                   help="a MIMIC-IV folder; later folders supply tables the earlier ones lack")
    p.add_argument("--db", required=True, type=Path, metavar="PATH", help="the DuckDB file to write")
    p.add_argument("--allow-missing", action="store_true",
                   help="build without absent tables; the intents that need them are recorded as disabled")
    p.add_argument("--intent", dest="intents", action="append", choices=[i.value for i in Intent],
                   metavar="INTENT",
                   help="an intent that must stay available even with --allow-missing (repeatable; "
                        f"one of: {', '.join(i.value for i in Intent)})")
    p.add_argument("--strict", action="store_true",
                   help="fail on repeated natural keys and links naming no row (default: report them as warnings)")
    p.add_argument("--threads", type=int, metavar="N", help="DuckDB worker threads (default: all cores)")
    p.add_argument("--quiet", action="store_true", help="no per-table progress on stderr")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pipeline.loader import SourceError, load_mimic  # imported here: `robustgym --help` stays quick

    progress = None if args.quiet else (lambda message: print(message, file=sys.stderr, flush=True))
    # The integrity warnings are printed below as "warning: ..."; the loader's log would repeat them.
    loader_log = logging.getLogger("pipeline.loader")
    if not any(isinstance(h, logging.NullHandler) for h in loader_log.handlers):
        loader_log.addHandler(logging.NullHandler())
    try:
        report = load_mimic(args.dirs, args.db, allow_missing=args.allow_missing, intents=args.intents,
                            progress=progress, threads=args.threads, strict=args.strict)
    except SourceError as e:
        print(e.render(CLI_SPELLING), file=sys.stderr)
        return EXIT_BAD_SOURCE
    for finding in report.integrity.findings:
        print(f"warning: {finding.describe()}", file=sys.stderr)
    print(render_report(report))
    return 0


def render_report(report) -> str:
    """Row counts per table, then what is missing and the fingerprint."""
    width = max(len(name) for name in [*report.row_counts, "total"])
    numbers = [f"{n:,}" for n in report.row_counts.values()]
    total = f"{sum(report.row_counts.values()):,}"
    digits = max(len(s) for s in [*numbers, total, "rows"])
    lines = [f"{'table':<{width}}  {'rows':>{digits}}", f"{'-' * width}  {'-' * digits}"]
    lines += [f"{name:<{width}}  {n:>{digits}}" for name, n in zip(report.row_counts, numbers)]
    lines += [f"{'-' * width}  {'-' * digits}", f"{'total':<{width}}  {total:>{digits}}", ""]
    if report.missing_tables:
        lines.append(f"missing tables: {', '.join(report.missing_tables)}")
        lines.append(f"intents disabled: {', '.join(report.disabled_intents) or 'none'}")
    findings = report.integrity.findings
    if findings:
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in report.integrity.by_kind().items() if n)
        lines.append(f"integrity: {len(findings)} warning(s) ({kinds} rows); --strict makes them errors")
    else:
        lines.append(f"integrity: {report.integrity.checked} keys and links checked, nothing found")
    lines.append(f"database: {report.db_path}")
    lines.append(f"fingerprint: {report.fingerprint}")
    lines.append(f"time: {report.seconds:.1f} s")
    return "\n".join(lines)
