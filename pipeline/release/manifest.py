"""``manifest.json``: what a release is, how it was built, and how to check its files.

Keys (see docs/architecture.md, "Release layout"): ``version``, ``created``, ``source`` (``kind``,
``fingerprint``, ``details``), ``seed``, ``config``, ``generator_version``, ``counts``, ``files``
(relative path -> ``sha256``, ``rows``), ``schema``, ``base_database``, ``base_database_digest``
(the shipped database's content digest, or null) and ``rebuild_command``, and ``contracts`` (the contract runs the release passed, with any warnings).

``counts.by_category`` has one entry per (split, intent, level, noise type) with at least one
task; clean tasks are counted under the noise type ``clean``.
"""

import json
import subprocess
from collections import Counter
from pathlib import Path

import pyarrow as pa

from pipeline.task_model import arrow_schema
from pipeline.vocabulary import Intent, Level, Split

MANIFEST = "manifest.json"
CLEAN = "clean"  # the noise-type column of the counts for clean tasks

REPO = Path(__file__).resolve().parents[2]


def generator_version() -> str:
    """The git revision the release was built from (``+dirty`` with uncommitted changes), or the
    installed package version when the code is not a git checkout."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        return f"git:{rev}" + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"ehr-robustgym=={version('ehr-robustgym')}"
        except PackageNotFoundError:
            return "unknown"


def count_tasks(tables: dict[str, pa.Table]) -> dict:
    """Counts per split x intent x level x noise type, per split, per variant, and in total."""
    cells: Counter = Counter()
    for split, table in tables.items():
        cols = table.select(["intent", "level", "noise_type"]).to_pydict()
        for intent, level, noise in zip(cols["intent"], cols["level"], cols["noise_type"]):
            cells[(split, intent, level, noise or CLEAN)] += 1
    split_order = {s.value: i for i, s in enumerate(Split)}
    by_category = [{"split": s, "intent": i, "level": lv, "noise_type": n, "tasks": c}
                   for (s, i, lv, n), c in sorted(cells.items(), key=lambda kv: (split_order.get(kv[0][0], 9), kv[0]))]
    by_split = {s.value: sum(c for (sp, *_), c in cells.items() if sp == s.value) for s in Split}
    clean = sum(c for (_, _, _, n), c in cells.items() if n == CLEAN)
    return {"total": sum(cells.values()), "clean": clean, "noise": sum(cells.values()) - clean,
            "by_split": by_split, "by_category": by_category}


def schema_description() -> list[dict]:
    return [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in arrow_schema()]


def write_manifest(release_dir: Path, manifest: dict) -> Path:
    path = Path(release_dir) / MANIFEST
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return path


def read_manifest(release_dir: Path) -> dict:
    path = Path(release_dir) / MANIFEST
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{release_dir} is not a release: it has no {MANIFEST}") from None


def counts_markdown(counts: dict) -> str:
    """Clean tasks and twins per intent and level (rows) and split (columns), with totals."""
    splits = [s.value for s in Split]
    rows: dict[tuple[str, str], Counter] = {}
    for cell in counts["by_category"]:
        key = (cell["intent"], cell["level"])
        kind = "clean" if cell["noise_type"] == CLEAN else "noise"
        rows.setdefault(key, Counter())[(cell["split"], kind)] += cell["tasks"]
    head = "| intent | level | " + " | ".join(f"{s} clean | {s} noise" for s in splits) + " | total |"
    lines = [head, "| --- | --- | " + " | ".join("---: | ---:" for _ in splits) + " | ---: |"]
    totals = Counter()
    order = {v.value: i for enum in (Intent, Level) for i, v in enumerate(enum)}
    for (intent, level), c in sorted(rows.items(), key=lambda kv: (order.get(kv[0][0], 99), order.get(kv[0][1], 99),
                                                                    kv[0])):
        cells = []
        for s in splits:
            cells += [str(c[(s, "clean")]), str(c[(s, "noise")])]
            totals[(s, "clean")] += c[(s, "clean")]
            totals[(s, "noise")] += c[(s, "noise")]
        lines.append(f"| {intent} | {level} | " + " | ".join(cells) + f" | {sum(c.values())} |")
    total_cells = []
    for s in splits:
        total_cells += [str(totals[(s, "clean")]), str(totals[(s, "noise")])]
    lines.append("| **all** | | " + " | ".join(total_cells) + f" | {counts['total']} |")
    return "\n".join(lines)


def noise_counts_markdown(counts: dict) -> str:
    """Tasks per noise type (``clean`` first) and split."""
    splits = [s.value for s in Split]
    by_type: dict[str, Counter] = {}
    for cell in counts["by_category"]:
        by_type.setdefault(cell["noise_type"], Counter())[cell["split"]] += cell["tasks"]
    lines = ["| noise type | " + " | ".join(splits) + " | total |",
             "| --- | " + " | ".join("---:" for _ in splits) + " | ---: |"]
    for noise in sorted(by_type, key=lambda n: (n != CLEAN, n)):
        c = by_type[noise]
        lines.append(f"| {noise} | " + " | ".join(str(c[s]) for s in splits) + f" | {sum(c.values())} |")
    return "\n".join(lines)


def provenance_lines(manifest: dict) -> list[str]:
    """What the build found, in a few lines: lossy inputs, the source's own anomalies, clean tasks left
    out, how the noise was made (labels, mechanisms, made-up pools) and what the reference agents solve."""
    lines = [f"LOSSY INPUT {i['path']}: {i['what']}" for i in manifest.get("lossy_inputs") or []]
    audit = manifest.get("source_audit")
    noise = manifest.get("noise") or {}
    levels = noise.get("levels") or []
    if audit:
        kinds = ", ".join(f"{k} {n:,}" for k, n in audit["by_kind"].items()) or "none"
        lines.append(f"source audit: {audit['rows_flagged']:,} of {sum(audit['rows_checked'].values()):,} rows "
                     f"flagged ({kinds})")
    left_out = max((level.get("clean_tasks_left_out", 0) for level in levels), default=0)  # the build's, per level
    undecidable = sum(level.get("label_not_decidable", 0) for level in levels)
    if levels:
        lines.append(f"labels: every twin's outcomes follow from its own record; {undecidable} candidate(s) "
                     f"dropped as not decidable; {left_out} clean task(s) left out (their record does not "
                     f"support their answer)")
    for level in levels:
        for noise_type, by in level.get("mechanisms", {}).items():
            total = sum(by.values())
            shares = ", ".join(f"{m} {n / total:.0%}" for m, n in by.items())
            lines.append(f"{noise_type} mechanisms: {shares}")
        sharing = level.get("replacement_sharing") or {}
        if level.get("level") == "value" and sharing:
            lines.append(f"implausible replacement values repeated within an item: "
                         f"{sharing.get('values_repeated_within_an_item', 0)}")
    made_up = noise.get("made_up") or {}
    if made_up.get("per_split"):
        pools = "; ".join(f"{split} {sum(kinds.values())}" for split, kinds in made_up["per_split"].items())
        lines.append(f"made-up names and ids per split: {pools}; validation/test values also in train: "
                     f"{made_up.get('held_out_also_in_train', 0)}")
    for level in levels:
        for agent, cells in (level.get("difficulty") or {}).get("agents", {}).items():
            by_type: dict[str, list[int]] = {}
            for c in cells:
                got = by_type.setdefault(c["noise_type"], [0, 0])
                got[0] += c["correct"]
                got[1] += c["twins"]
            lines.append(f"{agent} agent solves: " + ", ".join(f"{t} {c}/{n}" for t, (c, n) in by_type.items()))
    return lines
