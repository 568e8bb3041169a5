"""EHR-RobustGym: build, publish and evaluate Clean-Noise EHR tasks.

Each subcommand lives in ``robustgym/commands/<name>.py`` and exposes
``register(subparsers)``; adding one is adding its module to ``COMMANDS``.

``main`` is the one place where a failure becomes what the user reads: one message naming what
failed and a non-zero exit status (``--verbose``, which every command accepts, adds the
traceback), and Ctrl-C or SIGTERM ends a command with status 130, however the code it landed in
ended (``pipeline/interrupts.py``). Commands write their targets atomically, so a failure or an
interrupt leaves what was there before untouched."""

import argparse
import errno
import importlib
import sys
import traceback
from collections.abc import Callable

COMMANDS = ("load", "synth", "eval", "build", "compare", "serve")

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130

VERBOSE_HELP = "on failure, also print the traceback"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="robustgym", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"robustgym.commands.{name}").register(sub)
    for command in sub.choices.values():
        try:
            command.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
        except argparse.ArgumentError:
            pass  # the command has its own --verbose (build: Dagster's log too)
    return parser


def main(argv: list[str] | None = None) -> int:
    from pipeline.interrupts import InterruptWatch

    args = build_parser().parse_args(argv)
    # Only to tell a failure that follows a Ctrl-C: an interrupt a finaliser drops is still printed
    # (the command goes on), as without the watch; `build` keeps those quiet and stops (run_graph).
    with InterruptWatch(quiet=()) as interrupts:
        try:
            return args.run(args) or 0
        except KeyboardInterrupt:
            return _interrupted(args)
        except Exception as exc:  # noqa: BLE001 - the single place a failure becomes a message
            if interrupts.received():  # e.g. DuckDB's "Query interrupted": the failure is the Ctrl-C
                return _interrupted(args)
            return _failed(args, exc)


def _interrupted(args: argparse.Namespace) -> int:
    print(f"robustgym {args.command}: interrupted; its target was left as it was", file=sys.stderr)
    return EXIT_INTERRUPTED


def _failed(args: argparse.Namespace, exc: Exception) -> int:
    verbose = getattr(args, "verbose", False)
    if verbose:
        traceback.print_exception(exc)
    print(f"robustgym {args.command} failed: {failure_message(exc)}", file=sys.stderr)
    if not verbose:
        print("(run it again with --verbose to see the traceback)", file=sys.stderr)
    return EXIT_FAILED


# ---------------------------------------------------------------- exception -> one line

_ERRNO_HINTS = {
    errno.ENOSPC: "the disk is full",
    errno.EFBIG: "the disk is full or a file-size limit was reached",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "check the permissions of the file and its folder",
    errno.EPERM: "check the permissions of the file and its folder",
    errno.EEXIST: "it exists and is not a folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder",
}


def _os_message(exc: OSError) -> str:
    if type(exc).__module__ != "builtins" and exc.strerror:  # our own OSErrors carry a full message
        return exc.strerror
    where = ""
    if exc.filename is not None:
        where = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 is not None else "") + ": "
    hint = _ERRNO_HINTS.get(exc.errno)
    return f"{where}{exc.strerror or exc}" + (f" ({hint})" if hint else "")


def _duckdb_message(exc: Exception) -> str:
    text = str(exc)
    # An invalidated database repeats the error that invalidated it: that one is the cause.
    if 'Original error: "' in text:
        text = text.split('Original error: "', 1)[1].rsplit('"', 1)[0]
    return f"DuckDB: {text.strip().splitlines()[0]}"


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else '(no message)'}"


# First match wins; DuckDB is recognised by module so that `robustgym --help` never imports it.
_MESSAGES: tuple[tuple[Callable[[Exception], bool], Callable], ...] = (
    (lambda e: type(e).__module__.split(".")[0] in ("duckdb", "_duckdb"), _duckdb_message),
    (lambda e: isinstance(e, OSError), _os_message),
    (lambda e: True, _first_line),
)


def failure_message(exc: Exception) -> str:
    """One line saying what failed, for a person; the traceback is for ``--verbose``."""
    return next(render(exc) for matches, render in _MESSAGES if matches(exc))


if __name__ == "__main__":
    sys.exit(main())
