"""What the commands that read a published release (``eval``, ``serve``) share: the ``--release`` and
``--base-database`` arguments and opening the release with one clear message when it cannot be read."""

import argparse
import sys
from pathlib import Path

EXIT_BAD_RELEASE = 2


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--release", required=True, type=Path, metavar="PATH",
                        help="a release folder (releases/<version>) or a releases folder with 'latest'")
    parser.add_argument("--base-database", type=Path, metavar="PATH",
                        help="the base DuckDB file, for releases that do not ship one (credentialed MIMIC-IV)")


def open_release(args: argparse.Namespace, splits: list[str] | None = None):
    """The release ``args`` name (only the tasks of ``splits`` when given), or None after printing why
    it cannot be opened."""
    from robustgym.release import ReleaseError, load_release

    try:
        return load_release(args.release, base_database=args.base_database, splits=splits)
    except (ReleaseError, FileNotFoundError) as exc:
        print(exc, file=sys.stderr)
        return None
