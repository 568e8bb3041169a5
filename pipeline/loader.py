"""Load MIMIC-IV in PhysioNet's layout into one DuckDB file.

Input: one or more folders in PhysioNet's layout (``hosp/<table>.csv.gz``, ``icu/<table>.csv.gz``;
plain ``.csv`` accepted). Folders overlay: a later folder supplies the tables an earlier one lacks
(and wins where both have a table), so the demo plus a folder holding only
``icu/chartevents.csv.gz`` is a complete source. Output: one DuckDB file with every table under its
MIMIC-IV name, ``row_id`` first, the types declared in ``pipeline/schema.py`` (nothing is
type-guessed), and ``_robustgym_meta`` with the input fingerprint.

The load runs in phases so that a user fixes a bad folder in one pass:

1. Find every table's file and read every header: missing tables, paths that exist but are not a
   readable file (a directory, a broken or looping link, no permission), empty files, header-only
   files, files that are not gzip, renamed, missing, unknown or duplicate columns. A folder that is
   wrong as a whole is one problem, not one per table it lacks. Any problem stops the
   load here, before a database is touched: these take a second to find, while a full MIMIC-IV load
   takes long enough that nobody should wait for it to learn that a header is wrong.
2. Load table by table into a temporary database while a second thread hashes every file and
   checks its gzip stream end to end (DuckDB's gzip reader does not verify checksums: a corrupt
   file can load garbage silently). Each table's failures (values that do not parse as the declared
   type, ragged rows, empty NOT NULL values, truncated or corrupt gzip) are collected and loading
   goes on with the next table.
3. If anything failed, one ``SourceError`` lists every problem, the temporary database is discarded
   and a database already at the target keeps its bytes (``source_db.atomic_database``).
4. Natural keys and links are checked on the loaded tables (``pipeline.integrity``): findings are
   warnings stored in the metadata, or errors (step 3) when the load is strict.

``row_id`` is ``row_number() OVER () - 1`` over the CSV scan. DuckDB plans an empty ``OVER ()`` as
a streaming window, which is not a parallel operator: the scan feeding it runs in one thread, in
file order, whatever ``threads`` is (tests/pipeline/test_loader.py checks this on a file large
enough that a parallel scan does reorder). The numbered rows are then stored sorted by
``source_db.STORAGE_ORDER`` (subject_id, itemid where a table has them): row_id keeps the file
position, only the physical order changes.
"""

import csv
import errno
import gzip
import hashlib
import json
import logging
import os
import re
import stat
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipeline.capabilities import INTENT_TABLES, available_intents, disabled_intents, intents_needing, tables_for
from pipeline.duckdb_memory import bound
from pipeline.integrity import IntegrityReport, check_integrity, write_integrity
from pipeline.schema import ROW_ID, SCHEMA_VERSION, TABLES, Column, Table, create_table_sql
from pipeline.source_db import SourceInfo, atomic_database, index_lookups, row_counts, storage_order, \
    write_source_info
from pipeline.vocabulary import Intent, SourceKind

logger = logging.getLogger(__name__)

LOADER_VERSION = "2"

SUFFIXES = (".csv.gz", ".csv")
_CHUNK = 1 << 20
_MAX_HEADER_BYTES = 1 << 16
# Bad records reported per table: enough to see a pattern, few enough to read.
_SHOWN_PER_TABLE = 5
# Rejected records DuckDB keeps per file while diagnosing; a shifted column can reject every row.
_REJECTS_LIMIT = 1000
_REJECTS_TABLE = "_robustgym_rejects"
_REJECTS_SCAN = "_robustgym_rejects_scan"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: the file, and where known the column and line."""

    file: str
    column: str | None
    # 1-based, the header is line 1. For values DuckDB rejects a record counts as one line even if a
    # quoted value spans several; MIMIC-IV's files have few such values.
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f", line {self.line}"
        if self.column is not None:
            where += f", column {self.column}"
        return f"{where}: {self.message}"


# How an option is named in a message. ``str()`` serves Python callers and the places that show it
# as is (the Dagster UI, ``robustgym build``), so it names both; ``robustgym load`` renders its flags.
PYTHON_SPELLING = {"allow_missing": "allow_missing=True (--allow-missing on the command line)",
                   "strict": "strict=True (--strict on the command line)"}


class SourceError(Exception):
    """The input folder(s) cannot be loaded; ``problems`` lists every reason found.

    ``hint`` may name options as ``{allow_missing}`` or ``{strict}``: ``render`` spells them for the
    caller (``str()`` names the Python keyword and the flag, ``robustgym load`` its flags only).
    """

    def __init__(self, problems: Sequence[Problem], hint: str = ""):
        self.problems = tuple(problems)
        self.hint = hint
        super().__init__(self.render(PYTHON_SPELLING))

    def render(self, spelling: dict[str, str]) -> str:
        n = len(self.problems)
        lines = [f"cannot load MIMIC-IV: {n} problem{'' if n == 1 else 's'}"]
        lines += [f"  - {p}" for p in self.problems]
        if self.hint:
            lines.append(self.hint.format(**spelling))
        return "\n".join(lines)


@dataclass(frozen=True)
class SourceFile:
    table: Table
    path: Path
    root: Path  # the folder it was found in

    @property
    def relpath(self) -> str:
        return self.path.relative_to(self.root).as_posix()

    @property
    def gzipped(self) -> bool:
        return self.path.name.endswith(".gz")


@dataclass(frozen=True)
class FileDigest:
    size: int
    sha256: str
    problem: Problem | None  # a broken gzip stream


@dataclass(frozen=True)
class LoadReport:
    db_path: Path
    fingerprint: str
    row_counts: dict[str, int]  # table -> rows, schema order
    missing_tables: tuple[str, ...]
    disabled_intents: tuple[Intent, ...]
    seconds: float
    integrity: IntegrityReport  # the findings, as warnings (a strict load with findings raises instead)


# ------------------------------------------------------------------ phase 1: files and headers


@dataclass(frozen=True)
class FoundSources:
    files: dict[str, SourceFile]  # table -> the file that will be loaded
    problems: list[Problem]
    unreadable: set[str]  # tables whose file exists but cannot be read: present, not missing
    bad_folders: bool  # a folder itself is wrong: the tables it lacks say nothing more


IS_DIRECTORY = "is a directory, not a table file"


def probe_path(path: Path) -> tuple[bool, str | None]:
    """Whether a directory entry exists at ``path``, and why it cannot be read as a table file.

    A directory, a broken or looping symbolic link, a file without read permission or a special file
    exists (the user put something there) but is not a table: an error, never a "missing" table.
    """
    try:
        st = os.stat(path)  # follows links
    except FileNotFoundError:
        if os.path.islink(path):
            return True, f"is a broken symbolic link: its target {os.readlink(path)!r} does not exist"
        return False, None
    except NotADirectoryError:
        return False, None
    except OSError as e:
        if e.errno == errno.ELOOP:
            return True, "is a symbolic-link loop (it never reaches a file)"
        if e.errno == errno.EACCES:
            return True, "cannot be reached: permission denied on a folder on its path"
        return True, f"cannot be read: {e.strerror}"
    if stat.S_ISDIR(st.st_mode):
        return True, IS_DIRECTORY
    if not stat.S_ISREG(st.st_mode):
        return True, "is not a regular file (a pipe, socket or device?)"
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        reason = "permission denied" if e.errno == errno.EACCES else e.strerror
        return True, f"cannot be read: {reason}"
    return True, None


def folder_problem(root: Path) -> str | None:
    """Why ``root`` is not a folder to look for tables in (None when it is one)."""
    exists, why = probe_path(root)
    if not exists:
        return "does not exist: expected a MIMIC-IV folder"
    if why is None:
        return "is a file, not a folder: expected a MIMIC-IV folder (PhysioNet's layout: hosp/ and icu/)"
    return None if why == IS_DIRECTORY else why


def find_sources(dirs: Sequence[Path]) -> tuple[dict[str, SourceFile], list[Problem]]:
    """Each table's file (later folders overlay earlier ones), and problems with the folders."""
    found = locate_sources(dirs)
    return found.files, found.problems


def locate_sources(dirs: Sequence[Path]) -> FoundSources:
    """``find_sources`` with what the loader needs besides: unreadable tables, wrong folders."""
    files: dict[str, SourceFile] = {}
    problems: list[Problem] = []
    unreadable: set[str] = set()
    bad_folders = False
    if not dirs:
        problems.append(Problem("(no folder)", None, None, "no MIMIC-IV folder was given"))
        bad_folders = True
    for root in (Path(d) for d in dirs):
        why = folder_problem(root)
        if why is not None:
            problems.append(Problem(str(root), None, None, why))
            bad_folders = True
            continue
        found = 0
        for module in sorted({t.module for t in TABLES}):
            try:
                os.listdir(root / module)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as e:
                problems.append(Problem(str(root / module), None, None, f"cannot be read: {e.strerror}"))
                unreadable |= {t.name for t in TABLES if t.module == module}
                found += 1
        for t in TABLES:
            if t.name in unreadable:
                continue
            candidates = []
            for path in (root / t.module / f"{t.name}{s}" for s in SUFFIXES):
                exists, why = probe_path(path)
                if why is not None:
                    problems.append(Problem(str(path), None, None, why))
                    unreadable.add(t.name)
                elif exists:
                    candidates.append(path)
            if t.name in unreadable:
                found += 1
                files.pop(t.name, None)  # an error anyway; and never "missing"
                continue
            if not candidates:
                continue
            found += 1
            files[t.name] = SourceFile(t, candidates[0], root)
            if len(candidates) > 1:
                problems.append(Problem(str(candidates[0]), None, None,
                                        f"both {candidates[0].name} and {candidates[1].name} exist; "
                                        "keep one so it is clear which is loaded"))
        if not found:
            problems.append(Problem(str(root), None, None,
                                    "holds no MIMIC-IV table file: expected PhysioNet's layout, "
                                    "hosp/<table>.csv.gz and icu/<table>.csv.gz"))
            bad_folders = True
    return FoundSources(files, problems, unreadable, bad_folders)


def read_header(src: SourceFile) -> tuple[list[str] | None, list[Problem]]:
    """The file's header fields, or the problems that stop it being read (empty, not gzip, ...)."""
    f = str(src.path)
    if src.path.stat().st_size == 0:
        return None, [Problem(f, None, None, "the file is empty (0 bytes): an interrupted download? "
                                             "fetch it again")]
    opener = gzip.open if src.gzipped else open
    try:
        with opener(src.path, "rb") as fh:
            first = fh.readline(_MAX_HEADER_BYTES)
            second = fh.readline(64)
    except gzip.BadGzipFile as e:
        return None, [Problem(f, None, None, f"is not a gzip file although it is named .gz ({e})")]
    except EOFError:
        return None, [Problem(f, None, 1, "truncated gzip: the compressed data ends inside the header "
                                          "(an interrupted download?)")]
    except (zlib.error, OSError) as e:
        return None, [Problem(f, None, 1, f"corrupt gzip: {e}")]
    if not src.gzipped and first.startswith(b"\x1f\x8b"):
        return None, [Problem(f, None, None, "is gzip-compressed although it is named .csv: name it .csv.gz")]
    try:
        text = first.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError as e:
        return None, [Problem(f, None, 1, f"the header is not UTF-8 text ({e.reason} at byte {e.start})")]
    if not first.endswith(b"\n") and len(first) >= _MAX_HEADER_BYTES:
        return None, [Problem(f, None, 1, f"the first line is longer than {_MAX_HEADER_BYTES} bytes: "
                                          "not a CSV header")]
    header = next(csv.reader([text]), [])
    if not second:
        return header, [Problem(f, None, None, f"has a header but no rows: {src.table.name} cannot be empty")]
    return header, []


def map_header(src: SourceFile, header: list[str]) -> tuple[list[Column], list[Problem]]:
    """The schema column behind each header field, in file order (matched case-insensitively)."""
    t, f = src.table, str(src.path)
    spelling: dict[str, Column] = {}
    for c in t.columns:
        spelling[c.name.lower()] = c
        if c.header:
            spelling[c.header.lower()] = c
    mapped: list[Column] = []
    unknown: list[str] = []
    problems: list[Problem] = []
    for field in header:
        c = spelling.get(field.strip().lower())
        if c is None:
            unknown.append(field)
        elif c in mapped:
            problems.append(Problem(f, c.name, 1, f"column {field!r} appears twice in the header"))
        else:
            mapped.append(c)
    missing = [c.name for c in t.columns if c not in mapped]
    for field in unknown:
        hint = f" (renamed? the header lacks {', '.join(missing)})" if missing else ""
        problems.append(Problem(f, field, 1, f"unexpected column {field!r}: {t.name} in {SCHEMA_VERSION} "
                                             f"has no such column{hint}"))
    for name in missing:
        problems.append(Problem(f, name, 1, f"column {name!r} of {t.name} is missing from the header"))
    return mapped, problems


def missing_table_problems(missing: Sequence[str], dirs: Sequence[Path], allow_missing: bool,
                           intents: tuple[Intent, ...] | None) -> list[Problem]:
    """A problem for every missing table the caller cannot do without."""
    if not allow_missing:
        required = set(missing)
    else:
        required = tables_for(intents or ())
    looked = ", ".join(str(d) for d in dirs)
    problems = []
    for t in TABLES:
        if t.name not in missing or t.name not in required:
            continue
        needers = intents_needing(t.name)
        if allow_missing:
            needers = tuple(i for i in needers if i in (intents or ()))
            why = f"the intents you asked for need it: {', '.join(needers)}"
        elif needers:
            why = f"needed by the intents {', '.join(needers)}"
        else:
            why = "no intent needs it, but a complete MIMIC-IV load includes it"
        problems.append(Problem(t.relpath, None, None,
                                f"table {t.name} is missing (no {t.module}/{t.name}.csv.gz or .csv "
                                f"in {looked}); {why}"))
    return problems


def no_intent_problem(present: Iterable[str], dirs: Sequence[Path]) -> Problem | None:
    """With missing tables allowed, a load that could serve no intent is still useless: an error."""
    present = set(present)
    if available_intents(present):
        return None
    lacks = "; ".join(f"{i} lacks {', '.join(sorted(INTENT_TABLES[i] - present))}" for i in Intent)
    return Problem(", ".join(str(d) for d in dirs), None, None,
                   f"with the missing tables allowed, no question intent could be built ({lacks})")


# ------------------------------------------------------------------ phase 2: load


def digest_file(src: SourceFile) -> FileDigest:
    """sha256 and size of the file; for gzip also inflate it end to end so checksums are verified."""
    h = hashlib.sha256()
    size = 0
    inflater = zlib.decompressobj(wbits=31) if src.gzipped else None
    fed = False  # the current gzip member has received data and not yet ended
    lines = 0
    problem = None
    with open(src.path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
            data = chunk
            while inflater is not None and problem is None and data:
                try:
                    out = inflater.decompress(data)
                except zlib.error as e:
                    problem = _corrupt_gzip(src, str(e), lines)
                    break
                fed = True
                lines += out.count(b"\n")
                if inflater.eof:  # a member ended; PhysioNet's files have one, gzip allows several
                    data = inflater.unused_data
                    inflater = zlib.decompressobj(wbits=31)
                    fed = False
                else:
                    data = b""
    if inflater is not None and problem is None and fed:
        problem = Problem(str(src.path), None, lines + 1,
                          f"truncated gzip: the compressed data stops at line {lines + 1} "
                          f"after {size:,} bytes (an interrupted download?); fetch the file again")
    return FileDigest(size, h.hexdigest(), problem)


def _corrupt_gzip(src: SourceFile, error: str, lines: int) -> Problem:
    if "incorrect data check" in error or "incorrect length check" in error:
        return Problem(str(src.path), None, None,
                       f"corrupt gzip: the data does not match its checksum ({error}); fetch the file again")
    return Problem(str(src.path), None, lines + 1,
                   f"corrupt gzip: the compressed data is damaged near line {lines + 1} ({error}); "
                   "fetch the file again")


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _ident(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def _read_csv(src: SourceFile, mapped: list[Column], *, rejects: bool = False) -> str:
    # Types come from schema.py by name; the file's own order decides the positions, so a file whose
    # columns are permuted still loads each value into its column.
    columns = "{" + ", ".join(f"{_lit(c.name)}: {_lit(c.type)}" for c in mapped) + "}"
    extra = (f", store_rejects=true, rejects_table={_lit(_REJECTS_TABLE)}, "
             f"rejects_scan={_lit(_REJECTS_SCAN)}, rejects_limit={_REJECTS_LIMIT}") if rejects else ""
    return (f"read_csv({_lit(str(src.path))}, header=true, auto_detect=false, columns={columns}, "
            f"delim=',', quote='\"', escape='\"', strict_mode=true{extra})")


def _load_table(con: duckdb.DuckDBPyConnection, src: SourceFile, mapped: list[Column]) -> tuple[int, list[Problem]]:
    t = src.table
    con.execute(create_table_sql(t))
    select = ", ".join(_ident(c.name) for c in t.columns)
    try:
        numbered = f"SELECT row_number() OVER () - 1 AS {ROW_ID}, {select} FROM {_read_csv(src, mapped)}"
        order = storage_order([ROW_ID, *t.column_names])
        if order:  # numbered in file order first, then stored in clustered order (source_db.STORAGE_ORDER)
            numbered = f"SELECT * FROM ({numbered}) ORDER BY {order}"
        rows = con.execute(f"INSERT INTO {_ident(t.name)} {numbered}").fetchone()[0]
    except duckdb.Error as e:
        return 0, _diagnose(con, src, mapped, e)
    if rows == 0:
        return 0, [Problem(str(src.path), None, None, f"has a header but no rows: {t.name} cannot be empty")]
    return rows, []


def _diagnose(con: duckdb.DuckDBPyConnection, src: SourceFile, mapped: list[Column],
              error: duckdb.Error) -> list[Problem]:
    """Turn a failed load into problems naming file, line, column and value."""
    if isinstance(error, duckdb.IOException):
        return [_reword(src, error)]
    # Rescan collecting every bad record (DuckDB's error names only the first). Hashing every
    # column makes the scan convert every value; count(*) alone would skip the conversions.
    every = ", ".join(_ident(c.name) for c in mapped)
    try:
        con.execute(f"SELECT count(hash({every})) FROM {_read_csv(src, mapped, rejects=True)}").fetchall()
        rejects = con.execute(
            f"SELECT line, column_name, error_type, csv_line, error_message FROM {_REJECTS_TABLE} "
            "ORDER BY line").fetchall()
        con.execute(f"DROP TABLE IF EXISTS {_REJECTS_TABLE}")
        con.execute(f"DROP TABLE IF EXISTS {_REJECTS_SCAN}")
    except duckdb.Error:
        rejects = []
    if rejects:
        return _reject_problems(src, rejects)
    if isinstance(error, duckdb.ConstraintException):
        found = _null_problems(con, src, mapped)
        if found:
            return found
    return [_reword(src, error)]


_CONVERT = re.compile(r'Could not convert string "(?P<value>.*?)" to \'(?P<type>[^\']+)\'', re.S)
_LINE = re.compile(r"CSV Error on Line: (\d+)")
_COLUMN = re.compile(r'converting column "([^"]+)"')


def _value_message(src: SourceFile, column: str | None, error_message: str) -> str | None:
    m = _CONVERT.search(error_message)
    if not m:
        return None
    declared = column and next((c.type for c in src.table.columns if c.name == column), None)
    return f"{m['value']!r} is not a valid {declared or m['type']}"


_STRUCTURAL = {"TOO MANY COLUMNS", "MISSING COLUMNS", "UNQUOTED VALUE", "LINE SIZE OVER MAXIMUM",
               "INVALID ENCODING", "INVALID UNICODE"}
_COUNTS = re.compile(r"Expected Number of Columns: (\d+) Found: (\d+)")


def _reject_problems(src: SourceFile, rejects: list[tuple]) -> list[Problem]:
    by_line: dict[int, list[tuple]] = {}
    for r in rejects:
        by_line.setdefault(int(r[0]), []).append(r)
    out = []
    for line, errors in list(by_line.items())[:_SHOWN_PER_TABLE]:
        structural = [e for e in errors if e[2] in _STRUCTURAL]
        # A line with the wrong number of fields also fails to convert the shifted values: the
        # field count is the cause worth reporting.
        for _, column, error_type, csv_line, error_message in structural[:1] or errors:
            column = column if isinstance(column, str) and not structural else None
            message = _value_message(src, column, error_message)
            counts = _COUNTS.search(error_message)
            if message is None and counts:
                found = int(counts[2])
                message = (f"the line has {found} field{'' if found == 1 else 's'} where "
                           f"{src.table.name} has {counts[1]} "
                           "(a stray delimiter or quote?)")
            if message is None:
                message = f"{error_type.lower()}: {error_message}"
            # Both ends: a surplus or missing field shows at the end of the line.
            shown = csv_line if len(csv_line) <= 160 else f"{csv_line[:90]} ... {csv_line[-60:]}"
            if structural:
                message += f"; the line reads {shown!r}"
            out.append(Problem(str(src.path), column, line, message))
    more = len(by_line) - _SHOWN_PER_TABLE
    if more > 0:
        counted = f"{more:,}" + (" or more" if len(rejects) >= _REJECTS_LIMIT else "")
        out.append(Problem(str(src.path), None, None, f"... and {counted} more bad lines"))
    return out


def _null_problems(con: duckdb.DuckDBPyConnection, src: SourceFile, mapped: list[Column]) -> list[Problem]:
    required = [c for c in src.table.columns if not c.nullable]
    aggregates = ", ".join(
        f"count(*) FILTER (WHERE {_ident(c.name)} IS NULL), min(line) FILTER (WHERE {_ident(c.name)} IS NULL)"
        for c in required)
    row = con.execute(f"SELECT {aggregates} FROM (SELECT row_number() OVER () + 1 AS line, * "
                      f"FROM {_read_csv(src, mapped)})").fetchone()
    out = []
    for i, c in enumerate(required):
        n, first = row[2 * i], row[2 * i + 1]
        if n:
            out.append(Problem(str(src.path), c.name, int(first),
                               f"empty on {n:,} line{'s' if n > 1 else ''} (first shown), but "
                               f"{src.table.name}.{c.name} is declared NOT NULL"))
    return out


def _reword(src: SourceFile, error: duckdb.Error) -> Problem:
    text = str(error)
    line = _LINE.search(text)
    column = _COLUMN.search(text)
    col = column[1] if column else None
    message = _value_message(src, col, text)
    if message is None:
        message = text.split("\n", 1)[0]
        message = re.sub(r"^[A-Za-z ]*Error: ", "", message)
        message = message.replace(f": {src.path}", "").strip()
        if "GZIP" in message:
            message = f"broken gzip file: {message}"
    return Problem(str(src.path), col, int(line[1]) if line else None, message)


# ------------------------------------------------------------------ the load


def fingerprint_of(digests: dict[str, FileDigest]) -> tuple[str, dict]:
    """The source fingerprint and what went into it; ``digests`` is keyed by relative path."""
    payload = {
        "schema_version": SCHEMA_VERSION,
        "loader_version": LOADER_VERSION,
        "files": [{"path": rel, "size": d.size, "sha256": d.sha256} for rel, d in sorted(digests.items())],
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(canonical).hexdigest(), payload


def load_mimic(dirs: Sequence[Path], db_path: Path, *, allow_missing: bool = False,
               intents: Iterable[Intent | str] | None = None,
               progress: Callable[[str], None] | None = None,
               threads: int | None = None, strict: bool = False,
               on_table_loaded: Callable[[duckdb.DuckDBPyConnection, str], None] | None = None) -> LoadReport:
    """Load PhysioNet-layout folder(s) into the DuckDB file ``db_path``; raise ``SourceError`` with
    every problem found if the input is not sound (the file at ``db_path`` is then untouched).

    ``allow_missing`` builds without absent tables and records them, and the intents they disable,
    in the source metadata (a load that leaves no intent buildable is still an error); ``intents``
    names intents that must stay available even then (a missing table one of them needs is still an
    error). ``threads`` caps DuckDB's worker threads. Repeated natural keys and references naming no
    row (``pipeline.integrity``) are warnings, logged and stored under ``integrity`` in the source
    metadata; ``strict`` makes them errors. ``on_table_loaded(con, table)`` is called in the loading
    thread as each table is made (it will not change again), e.g. to check it while the next one loads.
    """
    started = time.perf_counter()
    dirs = [Path(d) for d in dirs]
    db_path = Path(db_path)
    wanted = None if intents is None else tuple(Intent(i) for i in intents)

    def say(message: str) -> None:
        logger.info(message)
        if progress:
            progress(message)

    found_sources = locate_sources(dirs)
    files, problems = found_sources.files, list(found_sources.problems)
    layouts: dict[str, list[Column]] = {}
    for name, src in files.items():
        header, found = read_header(src)
        if header is not None:
            layouts[name], mapping_problems = map_header(src, header)
            found += mapping_problems
        problems += found
    missing = tuple(t.name for t in TABLES if t.name not in files and t.name not in found_sources.unreadable)
    disabled = disabled_intents(missing)
    missing_problems = []
    # A wrong folder explains every table it lacks: one message for it, not one per table.
    if not found_sources.bad_folders:
        missing_problems = missing_table_problems(missing, dirs, allow_missing, wanted)
        if allow_missing and not missing_problems:
            useless = no_intent_problem(set(files) | found_sources.unreadable, dirs)
            missing_problems += [useless] if useless else []
    problems += missing_problems
    if problems:
        hint = ""
        if missing_problems and not allow_missing:
            hint = ("To build without the missing tables, pass {allow_missing}; that disables the intents: "
                    f"{', '.join(disabled) or 'none'}.")
        raise SourceError(problems, hint)

    ordered = [files[t.name] for t in TABLES if t.name in files]
    say(f"loading {len(ordered)} MIMIC-IV tables from {', '.join(map(str, dirs))} into {db_path}")
    if missing:
        say(f"missing tables (allowed): {', '.join(missing)}; intents disabled: "
            f"{', '.join(disabled) or 'none'}")
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="robustgym-digest")
    try:
        # Submitted in load order, the digests keep pace with the load on a second core.
        digests: dict[str, Future[FileDigest]] = {s.table.name: pool.submit(digest_file, s) for s in ordered}
        with atomic_database(db_path) as con:
            bound(con)  # the clustered ORDER BY of a large event table spills instead of taking the machine
            if threads is not None:
                con.execute(f"SET threads = {int(threads)}")
            for src in ordered:
                t0 = time.perf_counter()
                rows, found = _load_table(con, src, layouts[src.table.name])
                seconds = time.perf_counter() - t0
                broken = digests[src.table.name].result().problem
                if broken is not None:
                    found = [broken]  # DuckDB's complaints about a damaged stream are its echoes
                problems += found
                if found:
                    say(f"{src.relpath}: FAILED ({len(found)} problem{'s' if len(found) > 1 else ''})")
                else:
                    say(f"{src.relpath}: {rows:,} rows in {seconds:.2f} s "
                        f"({rows / max(seconds, 1e-9):,.0f} rows/s)")
                    if on_table_loaded is not None and not problems:
                        on_table_loaded(con, src.table.name)
            if problems:
                raise SourceError(problems)
            say("checking natural keys and links")
            integrity = check_integrity(con)
            if integrity and strict:
                raise SourceError([Problem(str(files[f.table].path), f.column, None, f.what())
                                   for f in integrity.findings],
                                  "The load is strict ({strict}): without it these are recorded as warnings.")
            for finding in integrity.findings:
                logger.warning("integrity: %s", finding.describe())
            fingerprint, details = fingerprint_of(
                {s.relpath: digests[s.table.name].result() for s in ordered})
            details["tables_missing"] = list(missing)
            details["intents_disabled"] = [str(i) for i in disabled]
            index_lookups(con)
            write_source_info(con, SourceInfo(SourceKind.MIMIC_IV.value, fingerprint, details))
            write_integrity(con, integrity)
            counts = row_counts(con)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    seconds = time.perf_counter() - started
    say(f"loaded {len(counts)} tables, {sum(counts.values()):,} rows in {seconds:.1f} s; "
        f"fingerprint {fingerprint}; integrity: {len(integrity.findings)} finding(s)")
    return LoadReport(db_path, fingerprint, counts, missing, disabled, seconds, integrity)
