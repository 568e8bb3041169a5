"""``README.md`` of a release: the dataset card, as the Hugging Face Hub and GitHub render it.

The card opens with Hugging Face YAML front matter (licence of the source, ``pretty_name``, task
categories, tags, size category and ``configs`` naming the three split files, so
``datasets.load_dataset(release_dir)`` finds the splits), followed by Markdown sections.

Each section is a small function of :class:`CardData` (the manifest, the source terms, the diff and
the split tables as written) returning its Markdown, or ``None`` to leave itself out. ``SECTIONS``
lists them in order: adding a section is writing one function and listing it there. Everything is
read from those inputs, so the card cannot disagree with the files. Nothing in the Markdown relies
on HTML or entities: a ``<`` in a type is written inside a code span, where it shows as itself.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import yaml

from pipeline.release.base_database import BASE_DATABASE, SourceTerms
from pipeline.release.diff import diff_markdown
from pipeline.release.field_docs import FIELD_DESCRIPTIONS
from pipeline.release.manifest import counts_markdown, noise_counts_markdown
from pipeline.release.publication import benchmark_bibtex, publication, source_bibtex
from pipeline.task_model import arrow_schema
from pipeline.vocabulary import NOISE_LEVEL_OF, NoiseType, Split, Status

CARD = "README.md"

# Licence identifiers the Hub knows, per source terms (pipeline.release.base_database.TERMS).
HUB_LICENSE: dict[str, dict[str, str]] = {
    "synthetic": {"license": "cc-by-4.0"},
    "mimic_iv_demo": {"license": "odbl"},
    "mimic_iv": {"license": "other", "license_name": "physionet-credentialed-health-data-license-1.5.0",
                 "license_link": "https://physionet.org/content/mimiciv/view-license/2.2/"},
}
TASK_CATEGORIES = ["question-answering", "table-question-answering"]
TAGS = ["medical", "ehr", "mimic-iv", "clinical", "text-to-sql", "robustness", "agents", "benchmark", "croissant"]

# What a twin of each noise type does to its clean task (docs/architecture.md, "Noise").
NOISE_TYPE_CHANGES: dict[NoiseType, str] = {
    NoiseType.MISSING_EVIDENCE: "the results the answer rests on never came back (the rows stay without "
                                "values, a dose is not given), or the rows are absent",
    NoiseType.CONFLICTING_DUPLICATE: "adds a copy of an evidence row that disagrees on the value",
    NoiseType.ORPHANED_RECORD: "breaks the evidence rows' link to their stay, admission or patient, or moves "
                               "them outside it",
    NoiseType.IMPLAUSIBLE_VALUE: "writes what a real charting error gives (a decimal shift, a value in another "
                                 "unit, a doubled digit, ...) where it is physiologically impossible",
    NoiseType.UNIT_MISMATCH: "rewrites a value in another unit and relabels its unit",
    NoiseType.NONEXISTENT_ENTITY: "names a patient, admission, stay or item that does not exist",
    NoiseType.FALSE_PREMISE: "names something recorded, but never for this patient",
    NoiseType.OUT_OF_WINDOW: "moves the question's time window outside every record",
    NoiseType.AMBIGUOUS_REFERENCE: "refers to something several records could mean",
}
_CELL_LIMIT = 110


@dataclass(frozen=True)
class CardData:
    manifest: dict
    terms: SourceTerms
    diff: dict | None = None
    # The split files as written (split -> table), for examples; empty: the card shows none.
    tasks: Mapping[str, pa.Table] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return self.manifest["version"]

    @property
    def counts(self) -> dict:
        return self.manifest["counts"]

    def rows(self, columns: list[str]) -> list[dict]:
        tables = [t.select(columns) for t in self.tasks.values() if t.num_rows]
        return pa.concat_tables(tables).to_pylist() if tables else []


Section = Callable[[CardData], str | None]


# ------------------------------------------------------------------------------ front matter

def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                        (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")):
        if n < limit:
            return name
    return "10M<n<100M"


def front_matter(data: CardData) -> dict:
    """The Hugging Face metadata block: what the Hub indexes and what ``datasets`` loads."""
    meta: dict = dict(HUB_LICENSE[data.terms.name])
    meta |= {
        "pretty_name": f"EHR-RobustGym {data.version}",
        "language": ["en"],
        "task_categories": list(TASK_CATEGORIES),
        "tags": TAGS + (["synthetic"] if data.terms.name == "synthetic" else []),
        "size_categories": [_size_category(data.counts["total"])],
        "configs": [{"config_name": "default", "default": True,
                     "data_files": [{"split": s.value, "path": f"tasks/{s.value}.parquet"} for s in Split]}],
    }
    return meta


def _front_matter_text(data: CardData) -> str:
    return "---\n" + yaml.safe_dump(front_matter(data), sort_keys=False, allow_unicode=True, width=1000) + "---"


# ---------------------------------------------------------------------------------- helpers

def _cell(value: object, limit: int = _CELL_LIMIT) -> str:
    text = " ".join(str(value).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _code(value: str) -> str:
    return f"`{value}`"


def _table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    align = align or ["---"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _what_changed(twin: dict) -> str:
    params = {p["name"]: p["value"] for p in twin["noise_params"] or []}
    patch = twin["patch"] or {}
    parts = [f"{len(patch.get(k) or [])} row(s) {verb}" for k, verb in
             (("hide", "hidden"), ("add", "added"), ("update", "changed")) if patch.get(k)]
    for key in ("column", "original", "implausible", "converted", "converted_unit", "nonexistent", "presumed",
                "reference", "direction"):
        if key in params:
            parts.append(f"{key} {params[key]}")
    return "; ".join(parts) or "the question"


# --------------------------------------------------------------------------------- sections

def title_section(data: CardData) -> str:
    c = data.counts
    m = data.manifest
    return f"""# EHR-RobustGym release {data.version}

Clean-Noise pairs of clinical questions over an electronic health record in the MIMIC-IV schema,
for measuring and training the robustness of EHR question-answering agents. Each **clean task** is a
question with executed gold SQL and its answer; each **noisy twin** derives from a clean task by a
record-, value- or query-level change (a patch to the database, or a changed question) and says which
outcome a robust agent should reach (for example `no_evidence`, `implausible_value`, `invalid_premise`),
with a recorded proof that the noise changes what the data supports.

- Source: {data.terms.title} (`{m['source']['kind']}`, fingerprint `{m['source']['fingerprint']}`)
- Created: {m['created']}; generator `{m['generator_version']}`; seed {m['seed']}
- Tasks: {c['total']} ({c['clean']} clean, {c['noise']} noisy twins);
  train {c['by_split']['train']}, validation {c['by_split']['validation']}, test {c['by_split']['test']}"""


def noise_types_section(data: CardData) -> str:
    """Noise type -> expected status (and what else is accepted), with one example each from the release."""
    rows = data.rows(["task_id", "clean_task_id", "variant", "question", "noise_type", "expected_status",
                      "accepted_outcomes", "noise_params", "patch"])
    questions = {r["task_id"]: r["question"] for r in rows if r["variant"] == "clean"}
    first: dict[str, dict] = {}
    for r in sorted((r for r in rows if r["variant"] != "clean"), key=lambda r: r["task_id"]):
        first.setdefault(r["noise_type"], r)
    table_rows = [["clean", "", "the question as asked, on the record as it is", _code(Status.ANSWERED.value), "",
                   "the executed gold answer"]]
    for noise_type in NoiseType:
        twin = first.get(noise_type.value)
        if twin is None:
            continue
        also = sorted({o["status"] for o in twin["accepted_outcomes"]} - {twin["expected_status"]})
        if twin["question"] != questions.get(twin["clean_task_id"], twin["question"]):
            example = f"{_cell(questions[twin['clean_task_id']], 60)} → {_cell(twin['question'], 60)}"
        else:
            example = f"{_cell(twin['question'], 60)} ({_cell(_what_changed(twin), 50)})"
        table_rows.append([_code(noise_type.value), NOISE_LEVEL_OF[noise_type].value, NOISE_TYPE_CHANGES[noise_type],
                           _code(twin["expected_status"]), ", ".join(_code(s) for s in also), example])
    absent = [t.value for t in NoiseType if t.value not in first]
    note = f"\n\nNo twin of this release has the type {', '.join(_code(t) for t in absent)}." if absent else ""
    return ("## Noise types and expected outcomes\n\n"
            "What each twin changes, the status a robust agent should conclude, the other outcomes the verifier "
            "accepts, and one example from this release (the clean question → the noisy one; or the question "
            "with what changed in its database):\n\n"
            + _table(["noise type", "level", "what the twin does", "expected status", "also accepted", "example"],
                     table_rows) + note)


def evaluation_section(data: CardData) -> str:
    v = data.version
    return f"""## How to evaluate

An agent answers each task with a **status** and, for `answered`, an **answer**. The verifier
(`robustgym.verifier.verify`) passes a submission when it reaches one of the task's
`accepted_outcomes`: the same status and, for `answered`, an answer that matches under the rules
that normalised the gold answer:

- numbers: within the task's `tolerance`, in the task's `unit` (counts are exact);
- text: case- and whitespace-insensitive; `text_set`: the same items in any order;
  `text_ranked`: the same items in the same order; booleans: yes/no; timestamps: to the second.

A clean task accepts only its answer. A noisy twin expects its `expected_status`; some twins also
accept a recomputed answer (see the table above). A task with no accepted outcome is an error,
never a pass.

Run an agent in the sandboxed environment (SQL and Python tools over the task's database, with the
twin's patch applied as views) and score it:

```bash
robustgym eval --release releases/{v} --agent checking --trials 3 --split test --out reports/checking
```

`report.json` and `report.md` give success on clean tasks and on twins and their gap (per intent,
level, noise level and noise type, paired by clean task), **pass^k** (the chance that all k trials of a
task succeed, mean over tasks of C(c,k)/C(n,k) for c successes in n trials) next to pass@k, and
reliability ((correct - wrong) / episodes: abstaining scores 0, a wrong answer -1)."""


def use_and_limitations_section(data: CardData) -> str:
    n_intents = len({c["intent"] for c in data.counts["by_category"]})
    sharing = ("" if data.terms.redistributable else
               "\n- **Credentialed data.** This release holds values from MIMIC-IV: use it only under the "
               "PhysioNet data-use agreement it was built under, and do not share it outside it.")
    source = ("The synthetic source has real MIMIC-IV vocabulary (items, codes, drugs) but invented patients: "
              "distributions, correlations and coding practice are simplified, so scores on it are not scores "
              "on real records." if data.terms.name == "synthetic" else
              "The records come from one hospital's EHR (Beth Israel Deaconess Medical Center) as MIMIC-IV "
              "publishes it, de-identified with shifted dates: populations, coding practice and documentation "
              "habits are that hospital's.")
    return f"""## Intended use and limitations

**Intended use.** Measuring and training how well question-answering agents over an EHR database
notice that the record cannot support an answer (missing, contradictory, implausible or
inconsistent evidence; a false, ambiguous or out-of-range premise) and say so instead of answering;
comparing agents on paired clean and noisy tasks; fine-tuning from the recorded trajectories.

**Not for** clinical decision-making, or as a measure of clinical knowledge: the gold answers are
what the database says, computed by SQL, not clinical judgements.

**Limitations.**

- The noise is injected, one change per twin, of nine types; real records combine problems and have
  others (free-text errors, copy-paste, unit conventions of other sites).
- Questions come from templates of {n_intents} clinical intents with fixed paraphrases: they are
  narrower and more regular than what clinicians ask.
- MIMIC-IV records some events in two tables. A twin never removes, empties or duplicates a row
  whose second copy it knows of (an ICU stay or admission in `transfers`, a prescription's order in
  `pharmacy` and `emar`, an eMAR entry in `emar_detail`, a lab result the ICU charts under a "Labs"
  item of `chartevents`, an ICU dose the eMAR records within two hours under a name holding the ICU
  name's first word), nor a result the record recomputes from its siblings (a blood count's indices,
  haemoglobin and haematocrit; globulin, albumin and total protein; bilirubin; HbA1c and eAG;
  cholesterol, its ratio, calculated LDL and triglycerides; a blood gas's calculated haematocrit,
  total CO2, pH and pCO2; the anion gap and its electrolytes; a white cell type's share and absolute
  count; an omr BMI, weight or height; an ICU admission weight in kg or lb), nor one of a blood
  pressure's three beside the other two; value noise makes no result implausible that its siblings
  give to the digits charted, nor a lab result the ICU chart imports (both tables hold its value),
  which is written in another unit only where it converts back to the chart's reading; an implausible
  value in another copied row (an ICU stay's or admission's end) accepts only `implausible_value`; a
  line whose placement `datetimeevents` dates is never removed (the date says nothing of its duration,
  which may still change); a copy it does not know of would still show the event.
- An `orphaned_record` twin accepts only `inconsistent_record`: the rows it detaches are still the
  patient's, timed within the encounter asked about, so an answer without them is not accepted.
- Gold answers are executed SQL over the source as loaded. Clean tasks whose rows the source audit
  flags (below) are left out, but an error the audit's predicates cannot see (a plausible wrong
  value, a miscoded diagnosis) stays in a clean task's gold answer.
- {source}{sharing}"""


def build_section(data: CardData) -> str:
    import json

    return f"""## How it was built

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
{json.dumps(data.manifest['config'], indent=2, sort_keys=True)}
```"""


def counts_section(data: CardData) -> str:
    return f"""## Counts

Clean tasks and twins per intent, level and split:

{counts_markdown(data.counts)}

Per noise type:

{noise_counts_markdown(data.counts)}"""


def files_section(data: CardData) -> str:
    m = data.manifest
    files = _table(["file", "rows", "sha256"],
                   [[_code(p), str(f["rows"]) if f["rows"] is not None else "", _code(f["sha256"])]
                    for p, f in m["files"].items()], ["---", "---:", "---"])
    if m["base_database"]:
        base = (f"The base database is included as `{BASE_DATABASE}` (DuckDB, the MIMIC-IV tables plus "
                "`row_id`). A task's `patch` applies to it as temporary views "
                "(`pipeline.patching.patched(con, patch)`), so the clean and every noisy state are reproduced "
                "without copying tables.")
    else:
        base = ("The base database is **not** included (credentialed data). Rebuild it from your own "
                "credentialed copy of MIMIC-IV and check it against this release's source fingerprint:\n\n"
                f"```bash\n{m['rebuild_command']}\n```")
    return f"""## Files

{files}

`manifest.json` holds the counts per split x intent x level x noise type, the file hashes, the
configuration and the schema; `croissant.json` is the Croissant 1.0 description; `diff.json` lists
what changed against the previous release.

{base}"""


def fields_section(data: CardData) -> str:
    rows = [[_code(f.name), _code(str(f.type)), _cell(FIELD_DESCRIPTIONS[f.name], 400)] for f in arrow_schema()]
    return ("## Fields\n\nOne row per task (clean or noisy), typed (structs and lists, not JSON strings):\n\n"
            + _table(["field", "type", "description"], rows))


def loading_section(data: CardData) -> str:
    v = data.version
    return f"""## Loading

Hugging Face `datasets` (the splits are declared in this card's metadata):

```python
from datasets import load_dataset
ds = load_dataset("releases/{v}")  # DatasetDict with train, validation and test
```

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

The environment (tools, verifier, patches applied as views):

```python
from robustgym import Env, load_release
env = Env(load_release("releases/{v}"))
```"""


def licence_section(data: CardData) -> str:
    terms = data.terms
    sharing = f"**Data-use agreement.** {terms.notice}" if not terms.redistributable else terms.notice
    pub = publication(data.manifest)
    where = f" It is published at {pub['url']}." if pub["url"] else ""
    source = source_bibtex(terms)
    cite_source = (f"\n\nCite the source data as:\n\n> {terms.citation}\n\n```bibtex\n{source}\n```"
                   if source else "\n\nThe synthetic source has no data to cite beyond this release.")
    return f"""## Licence and citation

Released under {terms.licence} ({terms.licence_url}).{where}

{sharing}

Cite this release of EHR-RobustGym as:

```bibtex
{benchmark_bibtex(data.manifest)}
```{cite_source}"""


def changes_section(data: CardData) -> str | None:
    return f"## Changes\n\n{diff_markdown(data.diff)}" if data.diff else None


def floors_section(data: CardData) -> str | None:
    """The reference floors (``robustgym.floors``): the line any reported model must clear."""
    floors = data.manifest.get("floors")
    if not floors:
        return None
    if not floors.get("agents"):
        return f"## Reference floors\n\nNot scored: the {floors.get('split')} split has no task."
    pct = lambda x: "–" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    ci = lambda c, f: f" [{f(c[0])}, {f(c[1])}]" if c else ""  # noqa: E731
    score = lambda x: "–" if x is None else f"{x:+.3f}"  # noqa: E731
    rows = [[f"`{name}`", f"{score(a['reliability'])}{ci(a['reliability_ci'], score)}",
             f"{pct(a['pairs'])}{ci(a['pairs_ci'], pct)}", pct(a["clean"]), pct(a["noise"])]
            for name, a in floors["agents"].items()]
    bar = floors["bar"]
    return f"""## Reference floors

Agents that never look at the record, scored on the {floors['split']} split ({floors['tasks']} tasks;
95% intervals from a bootstrap over patients): `abstain` always answers `no_evidence`, `clean_answer`
gives the clean task's gold answer without checking anything. **A reported model must score above
reliability {score(bar['reliability'])} and pair success {pct(bar['pairs'])}**; below that it does no
better than ignoring the data.

{_table(["floor", "reliability", "pair success", "clean", "noise"], rows, ["---", "---:", "---:", "---:", "---:"])}"""


def source_section(data: CardData) -> str:
    """The source's own anomalies (the audit) and the inputs known to be lossy or reconstructed."""
    m = data.manifest
    lossy = m.get("lossy_inputs") or []
    parts = ["## The source and its own anomalies"]
    if lossy:
        parts.append("**Lossy or reconstructed input.** " + " ".join(
            f"`{i['path']}` is {i['what']}." for i in lossy)
            + " Numbers computed on it are not figures of the official data.")
    audit = m.get("source_audit")
    if not audit:
        parts.append("No source audit was recorded for this release.")
        return "\n\n".join(parts)
    noise = m.get("noise") or {}
    # Every level reads the same clean tasks: the count is the build's, not a sum over levels.
    left_out = max((level.get("clean_tasks_left_out", 0) for level in noise.get("levels", [])), default=0)
    parts.append(
        f"Real records carry their own errors. Before any noise, the source was audited with the same "
        f"predicates that label the twins (`pipeline/noise/anomalies.py`): {audit['rows_flagged']:,} rows "
        f"of {sum(audit['rows_checked'].values()):,} are flagged. A clean task whose evidence touches a "
        f"flagged row is not extracted (`rests_on_source_anomaly`), and {left_out} more clean task(s) whose "
        f"own record (a row of its admission or stay outside it, a dangling link) does not support their "
        f"answer got no twin and are not in this release.")
    rows = [[c["table"], _code(c["kind"]), f"{c['rows']:,}", _code(c["status"]),
             _cell(f"row {c['examples'][0][0]}: {c['examples'][0][1]}" if c["examples"] else "", 90)]
            for c in audit["counts"]]
    if rows:
        parts.append(_table(["table", "anomaly", "rows", "status it supports", "example"], rows,
                            ["---", "---", "---:", "---", "---"]))
    return "\n\n".join(parts)


def noise_making_section(data: CardData) -> str | None:
    """How the noise was made: labels checked against the record, error mechanisms, made-up pools."""
    noise = data.manifest.get("noise")
    if not noise:
        return None
    levels = noise.get("levels") or []
    undecidable = sum(level.get("label_not_decidable", 0) for level in levels)
    parts = ["## How the noise was made",
             "**Labels follow from the record.** Every twin's accepted outcomes were re-derived from its noisy "
             "database alone (the facts of docs/architecture.md's status table: do the named patient, "
             "admission and thing exist and appear for the patient; do rows in scope carry values; do links "
             "resolve; is a unit the item's usual one; is a value within the item's limits; does one fact have "
             f"two values) and had to match; {undecidable} candidate twin(s) whose record did not support "
             "their label unambiguously were not published. Count and yes/no questions accept their "
             "truthful 0 / no where the thing asked about is absent."]
    mechanisms: dict[str, dict[str, int]] = {}
    for level in levels:
        for noise_type, by in level.get("mechanisms", {}).items():
            for mechanism, n in by.items():
                mechanisms.setdefault(noise_type, {})[mechanism] = mechanisms.get(noise_type, {}).get(mechanism, 0) + n
    if mechanisms:
        rows = [[_code(t), _code(m), str(n), f"{n / sum(by.values()):.0%}"]
                for t, by in mechanisms.items() for m, n in sorted(by.items(), key=lambda kv: -kv[1])]
        worst = max((lv.get("replacement_sharing", {}).get("worst_share", 0.0) for lv in levels), default=0.0)
        parts.append("**How each twin was made.** Missing evidence is mostly results that never came back "
                     "(`not_resulted`: the rows stay without values) and otherwise rows absent; implausible "
                     "values come from real charting error mechanisms, each kept only outside the item's "
                     "physiological limits (so outside everything the source shows unflagged); a unit "
                     "mismatch's mechanism is the kind of unit confusion. No value mechanism may exceed 40% "
                     "of its type's twins, and no replacement value may recur in more than 5% of one item's "
                     f"twins (largest here: {worst:.0%}):\n\n"
                     + _table(["noise type", "mechanism", "twins", "share"], rows, ["---", "---", "---:", "---:"]))
    made_up = noise.get("made_up") or {}
    per_split = made_up.get("per_split") or {}
    if per_split:
        rows = [[split, _code(kind), str(n)] for split, kinds in per_split.items() for kind, n in kinds.items()]
        parts.append("**Made-up names and ids cannot be memorised.** They are generated per build from the "
                     "morphology of their category and each belongs to one split only (a hash of the build "
                     "seed and the value picks it); a twin draws from its own split's pool. Values used per "
                     f"split; {made_up.get('held_out_also_in_train', 0)} validation or test value(s) also "
                     "appear in train:\n\n" + _table(["split", "kind", "values"], rows, ["---", "---", "---:"]))
    return "\n\n".join(parts)


def difficulty_section(data: CardData) -> str | None:
    """How the rule-based reference agents fare on this build's twins, per noise type and mechanism."""
    levels = (data.manifest.get("noise") or {}).get("levels") or []
    cells: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    for level in levels:
        for agent, rows in (level.get("difficulty") or {}).get("agents", {}).items():
            for c in rows:
                cells.setdefault((c["noise_type"], c["mechanism"]), {})[agent] = (c["correct"], c["twins"])
    if not cells:
        return None
    agents = sorted({a for by in cells.values() for a in by})
    order = {t.value: i for i, t in enumerate(NoiseType)}
    rows = [[_code(nt), _code(m)] + [f"{by[a][0]}/{by[a][1]}" if a in by else "–" for a in agents]
            for (nt, m), by in sorted(cells.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1]))]
    return ("## Difficulty, measured\n\n"
            "Twins solved by the rule-based reference agents on a seeded sample per noise type and mechanism: "
            "`naive` runs the gold SQL and answers; `checking` first probes the record with generic rules "
            "(existence, ambiguity, duplicates, links, units, ranges). A cell the checking agent solves is "
            "caught by a generic rule; a cell the naive agent solves does not test robustness.\n\n"
            + _table(["noise type", "mechanism", *agents], rows, ["---", "---"] + ["---:"] * len(agents)))


SECTIONS: tuple[Section, ...] = (
    title_section,
    noise_types_section,
    evaluation_section,
    floors_section,
    use_and_limitations_section,
    source_section,
    noise_making_section,
    difficulty_section,
    build_section,
    counts_section,
    files_section,
    fields_section,
    loading_section,
    licence_section,
    changes_section,
)


def render_card(data: CardData, sections: tuple[Section, ...] = SECTIONS) -> str:
    parts = [_front_matter_text(data)] + [text for section in sections if (text := section(data))]
    return "\n\n".join(parts) + "\n"


def render_dataset_card(manifest: dict, terms: SourceTerms, diff: dict | None = None,
                        tasks: Mapping[str, pa.Table] | None = None) -> str:
    return render_card(CardData(manifest, terms, diff, dict(tasks or {})))


def write_dataset_card(release_dir: Path, text: str) -> Path:
    path = Path(release_dir) / CARD
    path.write_text(text)
    return path
