"""``robustgym build``: run the whole pipeline, source to release, and say where the release is.

Every asset of the Dagster code location (``assets.definitions``) is materialized in-process, in
dependency order, with the same checks as in the UI: a failed blocking check stops the build and
nothing is published; a check that warns is printed with its evidence. Long stages report their
progress (``pipeline.progress``), shown with an ETA. With ``DAGSTER_HOME`` set, the runs are
recorded in that instance (and show in ``dg dev``); otherwise in a throwaway one, with Dagster's
telemetry off.
"""

import argparse
import os
import sys
import time
from pathlib import Path


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _setting(text: str) -> tuple[str, object]:
    import json

    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name.strip(), json.loads(value)
    except json.JSONDecodeError:
        return name.strip(), value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "build", help="build a release: source, clean tasks, noisy twins, contracts, publish",
        description="Run the whole pipeline in-process (the Dagster asset graph, source to release) and "
                    "print where the release is and its counts. By default on the built-in synthetic "
                    "MIMIC-IV; --source DIR [DIR ...] builds from your MIMIC-IV download instead.")
    p.add_argument("--source", nargs="+", default=["synthetic"], metavar="SOURCE",
                   help="'synthetic' (default) or PhysioNet-layout MIMIC-IV folder(s); later folders supply "
                        "tables the earlier ones lack")
    p.add_argument("--allow-missing", action="store_true", help="build from MIMIC-IV folders lacking tables")
    p.add_argument("--strict", action="store_true",
                   help="fail on the source's integrity findings (duplicate keys, dangling links) instead of "
                        "warning; real MIMIC-IV carries some")
    p.add_argument("--patients", type=_positive, default=1000, metavar="N",
                   help="synthetic patients (default 1000)")
    p.add_argument("--seed", type=_non_negative, default=0, metavar="S", help="seed for every stage (default 0)")
    p.add_argument("--version", default="", metavar="X.Y.Z",
                   help="release version (default: package version + content digest, e.g. 0.1.0+3fa9c1e0b2d4)")
    p.add_argument("--data-dir", type=Path, default=Path("data"), help="intermediate stage outputs (default data/)")
    p.add_argument("--releases-dir", type=Path, default=Path("releases"), help="published releases (default releases/)")
    p.add_argument("--set", dest="settings", type=_setting, action="append", default=[], metavar="NAME=VALUE",
                   help="any other asset config field, e.g. --set tasks_per_template=5 (repeatable)")
    p.add_argument("--workers", type=_positive, default=os.cpu_count() or 1, metavar="N",
                   help="partitions of one stage (intents, noise levels) built at once, each in its own process "
                        f"(default: the core count, {os.cpu_count() or 1}); the release is the same for any N")
    p.add_argument("--verbose", action="store_true", help="also show Dagster's own log")
    p.set_defaults(run=run)


def settings_from(args: argparse.Namespace) -> dict:
    synthetic = args.source == ["synthetic"]
    settings = {"kind": "synthetic" if synthetic else "mimic_iv",
                "mimic_dirs": [] if synthetic else [str(Path(d).resolve()) for d in args.source],
                "allow_missing": args.allow_missing, "strict": args.strict, "patients": args.patients, "seed": args.seed,
                "version": args.version}
    settings.update(dict(args.settings))
    return settings


class ProgressPrinter:
    """Prints what the build reports: step lines and plain messages as they come, a stage's progress
    events with an ETA. On a terminal an event rewrites one line in place; elsewhere (a log file, CI)
    a stage prints its first and last event and one every ``every`` seconds in between."""

    def __init__(self, out=None, every: float = 10.0, clock=None):
        import time

        from pipeline.progress import Eta

        self.out = out or sys.stderr
        self.clock = clock or time.monotonic
        self.eta = Eta(clock=self.clock)
        self.every = every
        self.live = bool(getattr(self.out, "isatty", lambda: False)())
        self._last_printed: dict[tuple[str, str], float] = {}
        self._open_line = False

    def __call__(self, message: str) -> None:
        from pipeline.progress import ProgressEvent, format_seconds

        if not isinstance(message, ProgressEvent):
            self._write(message)
            return
        left = self.eta.update(message)
        eta = f" (ETA {format_seconds(left)})" if left is not None and message.done < message.total else ""
        line = f"    {message}{eta}"
        if self.live:
            print("\r" + line[:160].ljust(160), end="", file=self.out, flush=True)
            self._open_line = True
            return
        key, now = (message.stage, message.unit), self.clock()
        edge = message.done in (0, message.total)
        if edge or now - self._last_printed.get(key, float("-inf")) >= self.every:
            self._last_printed[key] = now
            self._write(line)

    def _write(self, line: str) -> None:
        if self._open_line:
            print(file=self.out)
            self._open_line = False
        print(line, file=self.out, flush=True)


def cli_instance():
    """The instance the build records its runs in, with Dagster's telemetry off (no banner in the
    middle of a build): ``$DAGSTER_HOME``'s storage when set, so the runs show in ``dg dev``
    (its dagster.yaml with telemetry overridden for this process only), else a throwaway one."""
    import os

    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    home = os.environ.get("DAGSTER_HOME")
    if home:
        ref = InstanceRef.from_dir(os.path.expanduser(home), overrides={"telemetry": {"enabled": False}})
        return dg.DagsterInstance.from_ref(ref)
    return dg.DagsterInstance.ephemeral(settings={"telemetry": {"enabled": False}})


EXIT_LOCKED = 75  # EX_TEMPFAIL: another build holds the folder; try again later


def run(args: argparse.Namespace, defs=None) -> int:
    """One build at a time per data folder (``pipeline.build_lock``): a second one says who holds it."""
    from pipeline.build_lock import BuildLocked, build_lock

    say = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    for option, folder in (("--data-dir", args.data_dir), ("--releases-dir", args.releases_dir)):
        if folder.exists() and not folder.is_dir():  # found now, not after the whole pipeline ran
            print(f"{option} {folder} is a file; it must name a folder", file=sys.stderr)
            return 2
    try:
        with build_lock(args.data_dir, command="robustgym build", say=say):
            return _run_locked(args, defs)
    except BuildLocked as exc:  # raised only when taking the lock
        print(exc, file=sys.stderr)
        return EXIT_LOCKED


def _run_locked(args: argparse.Namespace, defs=None) -> int:
    # Dagster and the pipeline are imported here: `robustgym --help` stays quick.
    from assets.release.rebuild import config_fields
    from assets.resources import ProjectPaths

    if defs is None:
        from assets.definitions import defs
    known = config_fields(defs)
    unknown = sorted({name for name, _ in args.settings} - set(known))
    if unknown:
        print(f"--set {', '.join(unknown)}: no asset has such a config field; known: {', '.join(sorted(known))}",
              file=sys.stderr)
        return 2
    paths = ProjectPaths(data_dir=str(args.data_dir), releases_dir=str(args.releases_dir))
    before = release_folders(paths.releases)
    try:
        return _build_and_report(args, defs, paths)
    except KeyboardInterrupt:
        # The release step publishes by renaming a finished folder into place; a Ctrl-C in the moment
        # after that (or while the summary prints) must not say the target was left as it was.
        published = sorted(release_folders(paths.releases) - before)
        if not published:
            raise
        from robustgym.cli import EXIT_INTERRUPTED

        print(f"robustgym build: interrupted after publishing; release {published[-1]} is complete at "
              f"{paths.releases / published[-1]}", file=sys.stderr)
        return EXIT_INTERRUPTED


def release_folders(releases: Path) -> set[str]:
    """The published version folders in ``releases`` (not ``latest``, not a publish in progress)."""
    from pipeline.release import LATEST

    if not releases.is_dir():
        return set()
    return {p.name for p in releases.iterdir() if p.is_dir() and not p.is_symlink() and p.name != LATEST
            and not p.name.startswith(".")}


def _build_and_report(args: argparse.Namespace, defs, paths) -> int:
    from assets.release.rebuild import run_graph
    from pipeline.vocabulary import AssetName
    from pipeline.release.manifest import counts_markdown, noise_counts_markdown, provenance_lines, read_manifest

    instance = cli_instance()
    say = ProgressPrinter()
    started = time.perf_counter()
    with instance:
        graph = run_graph(defs, settings=settings_from(args), resources={"paths": paths}, instance=instance,
                          progress=say, log_level=None if args.verbose else "CRITICAL", workers=args.workers)
    if not graph.success:
        step = graph.failed
        print(f"build FAILED at {step.label if step else '(nothing to run)'}: {step.error if step else ''}",
              file=sys.stderr)
        for check in step.failed_checks if step else ():
            print(f"\ncheck {check.asset}.{check.check} ({check.severity}) failed:", file=sys.stderr)
            print(check.evidence, file=sys.stderr)
        print("nothing was published", file=sys.stderr)
        return 1
    published = graph.last(AssetName.RELEASE.value)
    if published is None or "path" not in published.metadata:
        print(f"the graph has no {AssetName.RELEASE.value} asset: nothing was published", file=sys.stderr)
        return 1
    release_dir = Path(published.metadata["path"])
    manifest = read_manifest(release_dir)
    counts = manifest["counts"]
    print(counts_markdown(counts))
    print()
    print(noise_counts_markdown(counts))
    print()
    for line in provenance_lines(manifest):
        print(line)
    print()
    reused = published.metadata.get("reused") == "True"
    unchanged = " (unchanged: identical to the published one)" if reused else ""
    print(f"release {manifest['version']}: {release_dir}{unchanged}")
    print(f"tasks: {counts['total']} ({counts['clean']} clean, {counts['noise']} noisy twins); "
          f"train {counts['by_split']['train']}, validation {counts['by_split']['validation']}, "
          f"test {counts['by_split']['test']}")
    print(f"source: {manifest['source']['kind']} {manifest['source']['fingerprint'][:12]}; "
          f"base database: {manifest['base_database'] or 'not shipped (see README.md)'}; "
          f"built in {time.perf_counter() - started:.0f} s")
    return 0
