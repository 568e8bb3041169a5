"""``README.md`` of a release: the dataset card, rendered from the manifest.

Everything in the card is read from the manifest (counts, hashes, source, config), the source terms
(licence, citation, sharing) and the field descriptions, so the card cannot disagree with the files.
"""

import json
from pathlib import Path

from pipeline.release.base_database import BASE_DATABASE, SourceTerms
from pipeline.release.diff import diff_markdown
from pipeline.release.field_docs import FIELD_DESCRIPTIONS
from pipeline.release.manifest import counts_markdown, noise_counts_markdown
from pipeline.task_model import arrow_schema

CARD = "README.md"


def _fields_table() -> str:
    lines = ["| field | type | description |", "| --- | --- | --- |"]
    for f in arrow_schema():
        row = f"| `{f.name}` | `{f.type}` | {FIELD_DESCRIPTIONS[f.name]} |"
        lines.append(row.replace("<", "&lt;").replace(">", "&gt;"))
    return "\n".join(lines)


def floors_section(floors: dict | None) -> str:
    """The reference floors (``robustgym.floors``): the line any reported model must clear."""
    if not floors:
        return ""
    if not floors.get("agents"):
        return f"\n\n## Reference floors\n\nNot scored: the {floors.get('split')} split has no task."
    pct = lambda x: "–" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    ci = lambda c, f: f" [{f(c[0])}, {f(c[1])}]" if c else ""  # noqa: E731
    score = lambda x: "–" if x is None else f"{x:+.3f}"  # noqa: E731
    rows = "\n".join(f"| `{name}` | {score(a['reliability'])}{ci(a['reliability_ci'], score)} | "
                     f"{pct(a['pairs'])}{ci(a['pairs_ci'], pct)} | {pct(a['clean'])} | {pct(a['noise'])} |"
                     for name, a in floors["agents"].items())
    bar = floors["bar"]
    return f"""

## Reference floors

Agents that never look at the record, scored on the {floors['split']} split ({floors['tasks']} tasks;
95% intervals from a bootstrap over patients): `abstain` always answers `no_evidence`, `clean_answer`
gives the clean task's gold answer without checking anything. **A reported model must score above
reliability {score(bar['reliability'])} and pair success {pct(bar['pairs'])}**; below that it does no
better than ignoring the data.

| floor | reliability | pair success | clean | noise |
| --- | ---: | ---: | ---: | ---: |
{rows}"""


def render_dataset_card(manifest: dict, terms: SourceTerms, diff: dict | None = None) -> str:
    v = manifest["version"]
    counts = manifest["counts"]
    files = "\n".join(f"| `{p}` | {f['rows'] if f['rows'] is not None else ''} | `{f['sha256']}` |"
                      for p, f in manifest["files"].items())
    if manifest["base_database"]:
        base = (f"The base database is included as `{BASE_DATABASE}` (DuckDB, the 31 MIMIC-IV tables plus "
                "`row_id`). A task's `patch` applies to it as temporary views "
                "(`pipeline.patching.patched(con, patch)`), so the clean and every noisy state are reproduced "
                "without copying tables.")
    else:
        base = ("The base database is **not** included (credentialed data). Rebuild it from your own "
                "credentialed copy of MIMIC-IV and check it against this release's source fingerprint:\n\n"
                f"```bash\n{manifest['rebuild_command']}\n```")
    citation = f"\n\nCite the source data as:\n\n> {terms.citation}" if terms.citation else ""
    sharing = (f"\n\n**Data-use agreement.** {terms.notice}" if not terms.redistributable else f"\n\n{terms.notice}")
    changes = f"\n\n## Changes\n\n{diff_markdown(diff)}" if diff else ""
    return f"""# EHR-RobustGym release {v}

Clean-Noise pairs of clinical questions over an electronic health record in the MIMIC-IV schema,
for measuring and training the robustness of EHR question-answering agents. Each **clean task** is a
question with executed gold SQL and its answer; each **noisy twin** derives from a clean task by a
record-, value- or query-level change (a patch to the database, or a changed question) and says which
outcome a robust agent should reach (e.g. `no_evidence`, `implausible_value`, `invalid_premise`),
with a recorded proof that the noise changes what the data supports.

- Source: {terms.title} (`{manifest['source']['kind']}`, fingerprint `{manifest['source']['fingerprint']}`)
- Created: {manifest['created']}; generator `{manifest['generator_version']}`; seed {manifest['seed']}
- Tasks: {counts['total']} ({counts['clean']} clean, {counts['noise']} noisy twins);
  train {counts['by_split']['train']}, validation {counts['by_split']['validation']}, test {counts['by_split']['test']}

## How it was built

1. The source database was built (`robustgym build`, Dagster group `source`) and checked against
   the source-table data contracts.
2. Clean tasks were extracted from the registered question templates by executing their gold SQL.
3. Noisy twins were injected per clean task and kept only with a passing proof of effect.
4. Splits were assigned: patient-level tasks by patient, population-level tasks by template and slot
   group; a clean task and all its twins always share a split (deterministic by seed).
5. The data contracts in `data_contracts/` (Great Expectations suites) were run; a release that breaks
   a critical expectation is never published. The files were written to a temporary folder, read back,
   validated, and renamed into place.

Configuration:

```json
{json.dumps(manifest['config'], indent=2, sort_keys=True)}
```

## Counts

Clean tasks and twins per intent, level and split:

{counts_markdown(counts)}

Per noise type:

{noise_counts_markdown(counts)}{floors_section(manifest.get('floors'))}

## Files

| file | rows | sha256 |
| --- | ---: | --- |
{files}

`manifest.json` holds the counts per split x intent x level x noise type, the file hashes, the
configuration and the schema; `croissant.json` is the Croissant 1.0 description; `diff.json` lists
what changed against the previous release.

{base}

## Fields

One row per task (clean or noisy), typed (structs and lists, not JSON strings):

{_fields_table()}

## Loading

polars:

```python
import polars as pl
train = pl.read_parquet("releases/{v}/tasks/train.parquet")
twins = train.filter(pl.col("variant") == "noise")
```

DuckDB:

```sql
SELECT split, variant, count(*) FROM read_parquet('releases/{v}/tasks/*.parquet') GROUP BY ALL;
```

Hugging Face `datasets`:

```python
from datasets import load_dataset
ds = load_dataset("parquet", data_files={{
    "train": "releases/{v}/tasks/train.parquet",
    "validation": "releases/{v}/tasks/validation.parquet",
    "test": "releases/{v}/tasks/test.parquet",
}})
```

## Licence and citation

Released under {terms.licence} ({terms.licence_url}).{sharing}{citation}

Cite EHR-RobustGym with the release version (`{v}`) and the source fingerprint above.{changes}
"""


def write_dataset_card(release_dir: Path, text: str) -> Path:
    path = Path(release_dir) / CARD
    path.write_text(text)
    return path
