"""``robustgym compare REPORT_DIR... [--out DIR]``: several agents' reports in one leaderboard.

Each REPORT_DIR is the output folder of ``robustgym eval`` (its ``report.json`` is read). The table
(best reliability first) is printed; with ``--out`` it is also written as ``leaderboard.md`` and
``leaderboard.json`` with a chart (``leaderboard.png``, ``leaderboard.svg``). Reports of different
releases or splits are not comparable and are refused unless ``--allow-mixed``.
"""

import argparse
import json
import sys
from pathlib import Path

EXIT_BAD_INPUT = 2


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="put several eval reports into one leaderboard table and chart",
        description="Read report.json from each REPORT_DIR (written by robustgym eval) and print one leaderboard, "
                    "best reliability first; --out also writes leaderboard.md/.json/.png/.svg.")
    p.add_argument("reports", nargs="+", type=Path, metavar="REPORT_DIR", help="folders written by robustgym eval")
    p.add_argument("--out", type=Path, metavar="DIR", help="where the leaderboard files go")
    p.add_argument("--allow-mixed", action="store_true",
                   help="compare reports of different releases or splits (their numbers are not comparable)")
    p.set_defaults(run=run)


def _read(folder: Path, problems: list[str]) -> dict | None:
    from robustgym.report import REPORT_JSON

    path = folder if folder.suffix == ".json" else folder / REPORT_JSON
    try:
        report = json.loads(path.read_text())
    except FileNotFoundError:
        problems.append(f"{path}: not found (run robustgym eval --out {folder} first)")
        return None
    except json.JSONDecodeError as exc:
        problems.append(f"{path}: not JSON ({exc})")
        return None
    missing = [k for k in ("meta", "overall", "reliability", "pass_k", "episodes") if k not in report]
    if not missing and "pairs" not in report["overall"]:
        missing = ["overall.pairs"]
    if missing:
        problems.append(f"{path}: not a robustgym report (missing {', '.join(missing)}; re-run robustgym eval)")
        return None
    return report


def run(args: argparse.Namespace) -> int:
    from robustgym.report import leaderboard_markdown, leaderboard_rows, write_leaderboard

    problems: list[str] = []
    reports = [r for r in (_read(folder, problems) for folder in args.reports) if r is not None]
    if not problems and not args.allow_mixed:
        kinds = sorted({(str(r["meta"].get("release")), str(r["meta"].get("split"))) for r in reports})
        if len(kinds) > 1:
            problems.append("the reports cover different releases or splits ("
                            + "; ".join(f"release {rel}, split {split}" for rel, split in kinds)
                            + "): their numbers are not comparable (--allow-mixed compares them anyway)")
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        return EXIT_BAD_INPUT
    print(leaderboard_markdown(leaderboard_rows(reports)), end="")
    if args.out:
        paths = write_leaderboard(reports, args.out)
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
