"""``robustgym eval --release PATH --agent NAME --trials K [--split S] --out DIR``: evaluate an agent.

Writes ``trajectories.jsonl`` (one line per episode, as it runs), then ``report.json``,
``report.md``, ``report.png`` and ``report.svg`` into DIR, and prints the headline numbers.
``--concurrency N`` plays N episodes at a time (for agents that wait on an endpoint);
``--resume`` continues an interrupted run from its ``trajectories.jsonl``.
"""

import argparse
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from pipeline.vocabulary import Split

from robustgym.commands.release_arguments import EXIT_BAD_RELEASE, add_release_arguments, open_release

EXIT_BAD_RUN = 2
TRAJECTORIES = "trajectories.jsonl"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "eval", help="run an agent over a release split and write a report",
        description="Run an agent on every task of a release split, K trials each, in the sandboxed "
                    "environment. Writes trajectories.jsonl, report.json, report.md, report.png and report.svg.")
    add_release_arguments(p)
    p.add_argument("--agent", required=True, metavar="NAME",
                   help="a registered agent: oracle, naive, checking, the floors abstain and clean_answer, "
                        "openai (reads ROBUSTGYM_LLM_* variables)")
    p.add_argument("--trials", type=_positive, default=1, metavar="K", help="episodes per task (default 1)")
    p.add_argument("--concurrency", type=_positive, default=1, metavar="N",
                   help="episodes played at a time, each on its own connection (default 1); an LLM agent "
                        "mostly waits on its endpoint, so N of 8-32 speeds it up about N times")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="continue the run recorded in DIR/trajectories.jsonl: episodes already there are "
                            "not played again")
    again.add_argument("--overwrite", action="store_true", help="discard DIR/trajectories.jsonl and start afresh")
    p.add_argument("--split", choices=[s.value for s in Split], help="one split (default: all)")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="where the report goes")
    p.add_argument("--wrong-penalty", type=float, default=1.0, metavar="X",
                   help="reliability cost of a wrong answer relative to a correct one (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed handed to the agent and the bootstrap (default 0)")
    p.add_argument("--resamples", type=int, default=1000, metavar="B",
                   help="bootstrap resamples of patients for the 95%% intervals (default 1000; 0: none)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class ProgressBar:
    """Progress on stderr: redrawn in place on a terminal (at most 10 times a second), a line per
    tenth of the run otherwise (logs stay short). The rate and the ETA count only the episodes of
    this run (``already``: episodes a resumed run found recorded)."""

    def __init__(self, label: str, stream=None, width: int = 30, already: int = 0):
        self.label, self.stream, self.width, self.already = label, stream or sys.stderr, width, already
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
        played = max(done - self.already, 1)
        elapsed = max(now - self.started, 1e-9)
        rate = played / elapsed
        eta = f"ETA {_duration((total - done) / rate)}" if done < total else f"took {_duration(elapsed)}"
        line = (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} "
                f"success {self.successes / played:.0%} {rate:.1f} ep/s {eta}")
        self.stream.write(("\r" + line + ("\n" if done == total else "")) if self.tty else line + "\n")
        self.stream.flush()


def run(args: argparse.Namespace) -> int:
    from robustgym.agents import make_agent
    from robustgym.metrics import summarize
    from robustgym.report import write_report
    from robustgym.runner import ResumeError, run_agent
    from robustgym.trajectory import recover_jsonl

    release = open_release(args, splits=[args.split] if args.split else None)  # one split: decode no other
    if release is None:
        return EXIT_BAD_RELEASE
    try:
        agent = make_agent(args.agent)
    except (KeyError, ValueError) as exc:
        print(exc.args[0] if exc.args else exc, file=sys.stderr)
        return EXIT_BAD_RELEASE
    args.out.mkdir(parents=True, exist_ok=True)
    trajectories_path = args.out / TRAJECTORIES
    recorded = []
    if args.resume:
        try:
            recorded = recover_jsonl(trajectories_path)
        except ValueError as exc:
            print(f"cannot resume: {exc}", file=sys.stderr)
            return EXIT_BAD_RUN
    elif trajectories_path.exists() and trajectories_path.stat().st_size and not args.overwrite:
        print(f"{trajectories_path} already holds a run: --resume continues it, --overwrite starts afresh",
              file=sys.stderr)
        return EXIT_BAD_RUN
    else:
        trajectories_path.unlink(missing_ok=True)
    progress = None if args.quiet else ProgressBar(f"{agent.name} {args.split or 'all'}", already=len(recorded))
    started = time.perf_counter()
    try:
        trajectories = run_agent(release, agent, split=args.split, trials=args.trials, seed=args.seed,
                                 trajectory_path=trajectories_path, concurrency=args.concurrency,
                                 recorded=recorded, progress=progress)
    except ResumeError as exc:
        print(f"cannot resume from {trajectories_path}: {exc}", file=sys.stderr)
        return EXIT_BAD_RUN
    summary = summarize(trajectories, wrong_penalty=args.wrong_penalty, resamples=args.resamples, seed=args.seed)
    meta = {"agent": agent.name, "release": release.version, "split": args.split, "trials": args.trials,
            "seed": args.seed, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - started, 3), "trajectories": TRAJECTORIES,
            "concurrency": args.concurrency, "resumed_episodes": len(recorded)}
    paths = write_report(summary, meta, args.out)
    o = summary["overall"]
    fmt = lambda x: "–" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    print(f"{agent.name} on {release.version} ({args.split or 'all splits'}): clean {fmt(o['clean']['success'])}, "
          f"noise {fmt(o['noise']['success'])}, pairs {fmt(o['pairs']['success'])}, "
          f"reliability {summary['reliability']['score']}")
    print("wrote " + ", ".join(str(p) for p in [trajectories_path, *paths.values()]))
    return 0
