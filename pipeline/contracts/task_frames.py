"""The frames the task contracts are evaluated on, derived from task tables.

Great Expectations checks columns of one table. The rules about tasks span rows and tables (a twin
and its clean task, a patient across splits) or nested values (an answer's fields, a proof), so they
are expressed as expectations over frames computed here: a frame of one row per column with its
type, a flat frame of one row per task with a ``*_problem`` text column per rule (null when the row
is fine, else what is wrong, which becomes the evidence), and aggregate frames (twins per clean task,
splits per patient, the noise mix). The expectations themselves, with their severities, live in the
JSON suites in ``data_contracts/``.

Every builder accepts a table that breaks the schema (a missing or mistyped column) without raising:
the ``columns`` frame reports the break and a derived column that cannot be computed is left out,
which fails its expectations with "column not found" rather than crashing the run.
"""

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping

import pyarrow as pa

from pipeline.task_model import arrow_schema
from pipeline.vocabulary import AnswerType, Intent, Level, NoiseLevel, NoiseType, Split, Status

# Columns of the flat `tasks` frame copied from the task table as they are (when present).
FLAT_COLUMNS = ("task_id", "clean_task_id", "variant", "intent", "level", "template_id", "paraphrase",
                "question", "subject_id", "gold_sql", "answer_type", "unit", "tolerance",
                "expected_status", "noise_level", "noise_type", "base_fingerprint", "split")

_ANSWER_FIELD = {AnswerType.NUMBER: "number", AnswerType.TEXT: "text", AnswerType.TEXT_SET: "items",
                 AnswerType.TEXT_RANKED: "items", AnswerType.BOOLEAN: "boolean",
                 AnswerType.TIMESTAMP: "timestamp"}
_ANSWER_FIELDS = ("number", "text", "items", "boolean", "timestamp")


def as_arrow(table) -> pa.Table:
    if hasattr(table, "to_arrow") and not isinstance(table, pa.Table):  # polars
        return table.to_arrow()
    return table


# ---------------------------------------------------------------------------------------- types

def canonical_type(t: pa.DataType) -> str:
    """A type's name with the physical string and list variants folded (polars writes large_string
    and string_view where pyarrow writes string) and without nullability (polars drops it for
    nested fields); nested types keep their field names and types."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if _is_list(t):
        return f"list<{canonical_type(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{f.name}: {canonical_type(f.type)}" for f in t) + ">"
    return str(t)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t)


def expected_task_columns() -> list[tuple[str, str]]:
    """(column, canonical type) of a task row, from ``pipeline.task_model.arrow_schema()``."""
    return [(f.name, canonical_type(f.type)) for f in arrow_schema()]


def columns_frame(table) -> pa.Table:
    schema = as_arrow(table).schema
    return pa.table({"column": [f.name for f in schema], "type": [canonical_type(f.type) for f in schema]})


# ---------------------------------------------------------------------------------- row problems

def _answer_problem(answer_type: str | None, answer: dict | None, what: str) -> str | None:
    """Why ``answer`` does not parse as ``answer_type`` (None when it does)."""
    try:
        kind = AnswerType(answer_type)
    except ValueError:
        return f"{what}: answer type {answer_type!r} is not an AnswerType"
    if answer is None:
        return f"{what}: no answer"
    wanted = _ANSWER_FIELD[kind]
    others = [f for f in _ANSWER_FIELDS if f != wanted and answer.get(f) is not None]
    if others:
        return f"{what}: a {kind} answer has {', '.join(others)} set"
    value = answer.get(wanted)
    if value is None:
        return f"{what}: a {kind} answer has no {wanted}"
    if kind is AnswerType.NUMBER and not (isinstance(value, (int, float)) and math.isfinite(value)):
        return f"{what}: number {value!r} is not a finite number"
    if kind is AnswerType.TEXT and not value.strip():
        return f"{what}: text answer is blank"
    if kind in (AnswerType.TEXT_SET, AnswerType.TEXT_RANKED):
        if any(item is None or not str(item).strip() for item in value):
            return f"{what}: {kind} answer has a blank item"
        if kind is AnswerType.TEXT_SET and len(set(value)) != len(value):
            return f"{what}: text_set answer repeats an item"
    return None


def _row_answer_problem(row: dict) -> str | None:
    if row.get("variant") == "clean":
        return _answer_problem(row.get("answer_type"), row.get("answer"), "gold answer")
    if row.get("answer") is not None:
        return "a twin carries a gold answer (twins have none; their outcomes say what is accepted)"
    return None


def _outcomes_problem(row: dict) -> str | None:
    outcomes = row.get("accepted_outcomes") or []
    if not outcomes:
        return "no accepted outcome: the verifier could never pass this task"
    statuses = [o.get("status") for o in outcomes]
    unknown = [s for s in statuses if s not in {x.value for x in Status}]
    if unknown:
        return f"accepted outcome status {unknown[0]!r} is not a Status"
    for o in outcomes:
        if o.get("status") == Status.ANSWERED:
            problem = _answer_problem(row.get("answer_type"), o.get("answer"), "accepted answer")
            if problem:
                return problem
        elif o.get("answer") is not None:
            return f"outcome {o.get('status')!r} carries an answer; only 'answered' does"
    if row.get("expected_status") not in statuses:
        return f"expected status {row.get('expected_status')!r} is not among the accepted outcomes {statuses}"
    if row.get("variant") == "clean" and row.get("answer") is not None:
        if not any(o.get("status") == Status.ANSWERED and o.get("answer") == row.get("answer") for o in outcomes):
            return "no accepted outcome is 'answered' with the gold answer"
    return None


def _proof_problem(row: dict) -> str | None:
    if row.get("variant") == "clean":
        return None if row.get("proof") is None else "a clean task carries a proof of noise"
    proof = row.get("proof")
    if proof is None:
        return "no proof that the noise changes what the data supports"
    if not proof.get("check"):
        return "the proof names no check"
    if not proof.get("passed"):
        return f"proof {proof.get('check')!r} did not pass: {proof.get('detail')}"
    return None


def _patch_problem(row: dict) -> str | None:
    patch = row.get("patch") or {}
    hide, add, update = patch.get("hide") or [], patch.get("add") or [], patch.get("update") or []
    empty = not (hide or add or update)
    if any(r.get("row_id") is None or r["row_id"] < 0 for r in [*hide, *update]):
        return "the patch hides or updates a row with a negative row_id (source rows are >= 0)"
    if any(r.get("row_id") is None or r["row_id"] >= 0 for r in add):
        return "the patch adds a row with a non-negative row_id (added rows are negative)"
    level = row.get("noise_level")
    if row.get("variant") == "clean":
        return None if empty else "a clean task has a patch"
    if level in (NoiseLevel.RECORD, NoiseLevel.VALUE) and empty:
        return f"a {level}-level twin has an empty patch: its database equals the clean one"
    if level == NoiseLevel.QUERY and not empty:
        return "a query-level twin patches the database (query-level noise changes only the question)"
    return None


def _subject_problem(row: dict) -> str | None:
    if row.get("level") == Level.PATIENT and row.get("subject_id") is None:
        return "a patient-level task has no subject_id (splits group by it)"
    if row.get("level") == Level.POPULATION and row.get("subject_id") is not None:
        return "a population-level task has a subject_id"
    return None


_PROBLEMS = {
    "answer_problem": (("variant", "answer_type", "answer"), _row_answer_problem),
    "outcomes_problem": (("variant", "answer_type", "answer", "accepted_outcomes", "expected_status"),
                         _outcomes_problem),
    "proof_problem": (("variant", "proof"), _proof_problem),
    "patch_problem": (("variant", "noise_level", "patch"), _patch_problem),
    "subject_problem": (("level", "subject_id"), _subject_problem),
}


def tasks_frame(table) -> pa.Table:
    """One row per task: the scalar columns as written, plus one ``*_problem`` column per rule."""
    table = as_arrow(table)
    names = set(table.column_names)
    out = {c: table.column(c) for c in FLAT_COLUMNS if c in names}
    rules = {column: (needs, rule) for column, (needs, rule) in _PROBLEMS.items() if set(needs) <= names}
    # Only the columns the rules read become Python objects (not the evidence lists, the questions, ...).
    read = sorted({c for needs, _ in rules.values() for c in needs})
    rows = table.select(read).to_pylist() if read else []
    for column, (_, rule) in rules.items():
        out[column] = pa.array([rule(r) for r in rows], pa.string())
    for column in ("accepted_outcomes", "evidence"):
        if column in names and _is_list(table.schema.field(column).type):  # else left out: see the module
            out[f"n_{column}"] = _lengths(table.column(column))
    return pa.table(out) if out else pa.table({"_empty": pa.array([None] * table.num_rows, pa.null())})


def _lengths(column: pa.ChunkedArray) -> pa.Array:
    """Items per list, a missing list counted as none."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.list_value_length(column), 0).cast(pa.int64())


# --------------------------------------------------------------------------------- aggregates

def _values(table: pa.Table, column: str) -> list:
    return table.column(column).to_pylist() if column in table.column_names else []


def coverage_frame(table, intents=None, levels=None) -> pa.Table:
    """Tasks per intent and per level, including the ones with none (which is what is checked).
    ``levels=[]`` leaves the levels out (a part of the tasks, e.g. one intent, need not hold both)."""
    table = as_arrow(table)
    intents = [Intent(i) for i in (intents or list(Intent))]
    levels = [Level(v) for v in (list(Level) if levels is None else levels)]
    by_intent, by_level = Counter(_values(table, "intent")), Counter(_values(table, "level"))
    categories = [f"intent={i.value}" for i in intents] + [f"level={v.value}" for v in levels]
    counts = [by_intent.get(i.value, 0) for i in intents] + [by_level.get(v.value, 0) for v in levels]
    return pa.table({"category": categories, "n_tasks": pa.array(counts, pa.int64())})


def noise_mix_frame(table, shares: Mapping[str, float] | None) -> pa.Table:
    """Observed against configured share of twins per noise type (or per noise level, by the keys
    of ``shares``); a type observed but not configured has a configured share of 0."""
    table = as_arrow(table)
    shares = dict(shares or {})
    if not shares:
        return pa.table({"category": pa.array([], pa.string()), "configured_share": pa.array([], pa.float64()),
                         "observed_share": pa.array([], pa.float64()), "deviation": pa.array([], pa.float64())})
    by_type = all(k in {t.value for t in NoiseType} for k in shares)
    dimension = "noise_type" if by_type else "noise_level"
    total_share = sum(shares.values()) or 1.0
    observed = Counter(_values(table, dimension))
    n = sum(observed.values()) or 1
    keys = sorted(set(shares) | {k for k in observed if k is not None})
    configured = [shares.get(k, 0.0) / total_share for k in keys]
    seen = [observed.get(k, 0) / n for k in keys]
    return pa.table({"category": [f"{dimension}={k}" for k in keys],
                     "configured_share": pa.array(configured, pa.float64()),
                     "observed_share": pa.array(seen, pa.float64()),
                     "deviation": pa.array([abs(a - b) for a, b in zip(seen, configured)], pa.float64())})


_INHERITED = ("intent", "level", "template_id", "base_fingerprint")


def twin_links_frame(clean, twins) -> pa.Table:
    """One row per twin: the clean task it names and whether it inherits that task's identity."""
    clean, twins = as_arrow(clean), as_arrow(twins)
    by_id = {r.get("task_id"): r for r in clean.select([c for c in ("task_id", *_INHERITED)
                                                        if c in clean.column_names]).to_pylist()}
    rows = twins.select([c for c in ("task_id", "clean_task_id", *_INHERITED)
                         if c in twins.column_names]).to_pylist()
    problems = []
    for r in rows:
        parent = by_id.get(r.get("clean_task_id"))
        differ = [f for f in _INHERITED if parent is not None and f in r and f in parent and r[f] != parent[f]]
        problems.append(f"differs from its clean task in {', '.join(differ)}" if differ else None)
    return pa.table({"task_id": [r.get("task_id") for r in rows],
                     "clean_task_id": pa.array([r.get("clean_task_id") for r in rows], pa.string()),
                     "inheritance_problem": pa.array(problems, pa.string())})


def clean_twins_frame(clean, twins) -> pa.Table:
    """One row per clean task: how many twins name it."""
    clean, twins = as_arrow(clean), as_arrow(twins)
    n = Counter(_values(twins, "clean_task_id"))
    ids = _values(clean, "task_id")
    return pa.table({"task_id": pa.array(ids, pa.string()),
                     "n_twins": pa.array([n.get(i, 0) for i in ids], pa.int64())})


def ids_frame(*tables) -> pa.Table:
    ids, variants = [], []
    for t in map(as_arrow, tables):
        ids += _values(t, "task_id") if "task_id" in t.column_names else []
        variants += _values(t, "variant") if "variant" in t.column_names else [None] * t.num_rows
    return pa.table({"task_id": pa.array(ids, pa.string()), "variant": pa.array(variants, pa.string())})


# ------------------------------------------------------------------------------------- splits

def split_columns_frames(files: Mapping[str, object]) -> tuple[pa.Table, pa.Table]:
    """(column, type) of every split file, and in how many files each column appears."""
    cols, types, where = [], [], []
    seen = Counter()
    for split, table in files.items():
        for f in as_arrow(table).schema:
            cols.append(f.name)
            types.append(canonical_type(f.type))
            where.append(split)
            seen[f.name] += 1
    names = [c for c, _ in expected_task_columns()] + sorted(set(seen) - {c for c, _ in expected_task_columns()})
    return (pa.table({"column": cols, "type": types, "file": where}),
            pa.table({"column": names, "n_files": pa.array([seen.get(c, 0) for c in names], pa.int64())}))


def group_key(row: dict) -> str:
    """The split group of a population-level task: its template and slot values."""
    slots = sorted((s["name"], s["value"]) for s in (row.get("slots") or []))
    return f"{row.get('template_id')}|" + "&".join(f"{k}={v}" for k, v in slots)


def split_frames(files: Mapping[str, object], shares: Mapping[str, float] | None = None,
                 real_subjects: Collection[int] | None = None) -> dict[str, pa.Table]:
    """Frames of the release's split tables: schema per file, the union of tasks with the file it
    came from, and splits per patient, per clean task (with its twins) and per population group.

    ``real_subjects``: the subject ids of the source's patients. A twin's subject id outside it is
    a patient made up by query-level noise, not a patient who could leak between splits."""
    columns, column_files = split_columns_frames(files)
    tables = {split: as_arrow(t) for split, t in files.items()}
    flat_parts, rows = [], []
    for split, t in tables.items():
        flat = tasks_frame(t)
        flat = flat.append_column("file", pa.array([split] * t.num_rows, pa.string()))
        flat_parts.append(flat)
        keep = [c for c in ("task_id", "clean_task_id", "subject_id", "level", "template_id", "slots", "split",
                            "noise_params") if c in t.column_names]
        rows += [{**r, "file": split} for r in t.select(keep).to_pylist()]
    tasks = pa.concat_tables(flat_parts, promote_options="permissive") if flat_parts else pa.table({})
    if "split" in tasks.column_names:
        problems = [None if s == f else f"row has split {s!r} but is in the {f} file"
                    for s, f in zip(tasks.column("split").to_pylist(), tasks.column("file").to_pylist())]
        tasks = tasks.append_column("split_problem", pa.array(problems, pa.string()))

    def spread(key_of) -> tuple[list, list, list]:
        where = defaultdict(set)
        for r in rows:
            key = key_of(r)
            if key is not None:
                where[key].add(r["file"])
        keys = sorted(where, key=str)
        return keys, [len(where[k]) for k in keys], [",".join(sorted(where[k])) for k in keys]

    def patient_of(r: dict):
        sid = r.get("subject_id")
        real = real_subjects is None or not r.get("clean_task_id") or sid in real_subjects
        return sid if real else None

    subj, subj_n, subj_files = spread(patient_of)
    pair, pair_n, pair_files = spread(lambda r: r.get("clean_task_id") or r.get("task_id"))
    # Twins of population tasks may change slots (query-level noise); the clean task defines the group.
    pop = [r for r in rows if r.get("level") == Level.POPULATION and not r.get("clean_task_id")]
    group_of = {r.get("task_id"): group_key(r) for r in pop}
    grp, grp_n, grp_files = spread(lambda r: group_of.get(r.get("clean_task_id") or r.get("task_id")))

    # A made-up name or id (query-level nonexistent entities, orphaned records' dangling links) belongs to
    # one split's pool: seen in two splits, an agent could learn it in train and spot it in test.
    made_up: dict[str, set] = defaultdict(set)
    pool_rows = []
    for r in rows:
        params = {p["name"]: p["value"] for p in (r.get("noise_params") or [])}
        for key in ("nonexistent", "dangling_id"):
            if key in params:
                made_up[f"{key}:{params[key]}"].add(r["file"])
                if params.get("name_pool") not in (None, r["file"]):
                    pool_rows.append(r["task_id"])
    made_keys = sorted(made_up)
    total = len(rows) or 1
    sizes = Counter(r["file"] for r in rows)
    split_names = [s.value for s in Split]
    shares = dict(shares or {})
    share_sum = sum(shares.values()) or 1.0
    return {
        "columns": columns,
        "column_files": column_files,
        "tasks": tasks,
        "patient_splits": pa.table({"subject_id": pa.array(subj, pa.int64()),
                                    "n_splits": pa.array(subj_n, pa.int64()), "splits": subj_files}),
        "pair_splits": pa.table({"clean_task_id": pa.array(pair, pa.string()),
                                 "n_splits": pa.array(pair_n, pa.int64()), "splits": pair_files}),
        "group_splits": pa.table({"group": pa.array(grp, pa.string()),
                                  "n_splits": pa.array(grp_n, pa.int64()), "splits": grp_files}),
        "made_up_splits": pa.table({
            "value": pa.array(made_keys + [f"pool:{t}" for t in pool_rows], pa.string()),
            "n_splits": pa.array([len(made_up[k]) for k in made_keys] + [2] * len(pool_rows), pa.int64()),
            "splits": pa.array([",".join(sorted(made_up[k])) for k in made_keys]
                               + ["drawn from another split's pool"] * len(pool_rows), pa.string())}),
        "split_sizes": pa.table({
            "split": split_names,
            "n_tasks": pa.array([sizes.get(s, 0) for s in split_names], pa.int64()),
            "deviation": pa.array([abs(sizes.get(s, 0) / total - shares.get(s, 0.0) / share_sum) if shares else 0.0
                                   for s in split_names], pa.float64())}),
    }
