"""``robustgym eval --release PATH --agent NAME --trials K [--split S] --out DIR``: evaluate an agent.

Writes ``trajectories.jsonl`` (one line per episode, as it runs), then ``report.json``,
``report.md`` and ``report.png`` into DIR, and prints the headline numbers.
"""

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from pipeline.vocabulary import Split

EXIT_BAD_RELEASE = 2
TRAJECTORIES = "trajectories.jsonl"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "eval", help="run an agent over a release split and write a report",
        description="Run an agent on every task of a release split, K trials each, in the sandboxed "
                    "environment. Writes trajectories.jsonl, report.json, report.md and report.png.")
    p.add_argument("--release", required=True, type=Path, metavar="PATH",
                   help="a release folder (releases/<version>) or a releases folder with 'latest'")
    p.add_argument("--agent", required=True, metavar="NAME",
                   help="a registered agent: oracle, naive, checking, openai (reads ROBUSTGYM_LLM_* variables)")
    p.add_argument("--trials", type=int, default=1, metavar="K", help="episodes per task (default 1)")
    p.add_argument("--split", choices=[s.value for s in Split], help="one split (default: all)")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="where the report goes")
    p.add_argument("--base-database", type=Path, metavar="PATH",
                   help="the base DuckDB file, for releases that do not ship one (credentialed MIMIC-IV)")
    p.add_argument("--wrong-penalty", type=float, default=1.0, metavar="X",
                   help="reliability cost of a wrong answer relative to a correct one (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed handed to the agent (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


class ProgressBar:
    """Progress on stderr: redrawn in place on a terminal (at most 10 times a second), a line per
    tenth of the run otherwise (logs stay short)."""

    def __init__(self, label: str, stream=None, width: int = 30):
        self.label, self.stream, self.width = label, stream or sys.stderr, width
        self.started, self.successes, self.last_draw, self.last_tenth = time.perf_counter(), 0, 0.0, -1
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, done: int, total: int, trajectory) -> None:
        self.successes += trajectory.reward >= 1.0
        now = time.perf_counter()
        if self.tty and done < total and now - self.last_draw < 0.1:
            return
        tenth = 10 * done // total
        if not self.tty and tenth == self.last_tenth:
            return
        self.last_draw, self.last_tenth = now, tenth
        filled = int(self.width * done / total)
        rate = done / max(now - self.started, 1e-9)
        line = (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} "
                f"success {self.successes / done:.0%} {rate:.1f} ep/s")
        self.stream.write(("\r" + line + ("\n" if done == total else "")) if self.tty else line + "\n")
        self.stream.flush()


def run(args: argparse.Namespace) -> int:
    from robustgym.agents import make_agent
    from robustgym.metrics import summarize
    from robustgym.release import ReleaseError, load_release
    from robustgym.report import write_report
    from robustgym.runner import run_agent

    try:
        release = load_release(args.release, base_database=args.base_database)
    except (ReleaseError, FileNotFoundError) as exc:
        print(exc, file=sys.stderr)
        return EXIT_BAD_RELEASE
    try:
        agent = make_agent(args.agent)
    except (KeyError, ValueError) as exc:
        print(exc.args[0] if exc.args else exc, file=sys.stderr)
        return EXIT_BAD_RELEASE
    args.out.mkdir(parents=True, exist_ok=True)
    trajectories_path = args.out / TRAJECTORIES
    trajectories_path.unlink(missing_ok=True)
    progress = None if args.quiet else ProgressBar(f"{agent.name} {args.split or 'all'}")
    started = time.perf_counter()
    trajectories = run_agent(release, agent, split=args.split, trials=args.trials, seed=args.seed,
                             trajectory_path=trajectories_path, progress=progress)
    summary = summarize(trajectories, wrong_penalty=args.wrong_penalty)
    meta = {"agent": agent.name, "release": release.version, "split": args.split, "trials": args.trials,
            "seed": args.seed, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - started, 3), "trajectories": TRAJECTORIES}
    paths = write_report(summary, meta, args.out)
    o = summary["overall"]
    fmt = lambda x: "–" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    print(f"{agent.name} on {release.version} ({args.split or 'all splits'}): clean {fmt(o['clean']['success'])}, "
          f"noise {fmt(o['noise']['success'])}, reliability {summary['reliability']['score']}")
    print("wrote " + ", ".join(str(p) for p in [trajectories_path, *paths.values()]))
    return 0
