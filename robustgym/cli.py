"""EHR-RobustGym: build, publish and evaluate Clean-Noise EHR tasks.

Each subcommand lives in ``robustgym/commands/<name>.py`` and exposes
``register(subparsers)``; adding one is adding its module to ``COMMANDS``."""

import argparse
import importlib
import sys

COMMANDS = ("load", "synth", "eval", "build", "compare", "serve")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="robustgym", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"robustgym.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args) or 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
