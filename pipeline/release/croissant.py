"""``croissant.json``: the release described in Croissant 1.0 (ML Commons) for dataset tooling.

The ``@context`` is the official Croissant 1.0 context (as mlcroissant expects it; any other makes
mlcroissant warn). The three split files are ``FileObject``s with their sha256, gathered by a
``FileSet``; one ``RecordSet`` of tasks has a field per column, derived from the task schema:
structs become fields with ``subField``s, lists become ``repeated`` fields, so mlcroissant reads
the Parquet files (through pyarrow) with every nested value. (mlcroissant 1.1.1 keys a value two
levels deep, e.g. ``tasks/patch/hide/row_id``, under its parent ``tasks/patch/hide`` at the top
of the record rather than inside ``tasks/patch``: the values are right, the nesting is flattened.)
"""

import json
import sys
from pathlib import Path

import pyarrow as pa

from pipeline.release.base_database import SourceTerms
from pipeline.release.publication import KEYWORDS, benchmark_bibtex, publication
from pipeline.task_model import arrow_schema
from pipeline.vocabulary import Split

CROISSANT = "croissant.json"
CONFORMS_TO = "http://mlcommons.org/croissant/1.0"
RECORD_SET = "tasks"
FILE_SET = "task-files"
SPLITS_RECORD_SET = "splits"
# Croissant 1.0's split vocabulary: a split record set (dataType cr:Split) names each split and the
# well-known split it is; the tasks' ``split`` field references it.
SPLIT_URLS = {Split.TRAIN: "cr:TrainingSplit", Split.VALIDATION: "cr:ValidationSplit", Split.TEST: "cr:TestSplit"}

CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}


def _data_type(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "sc:Text"
    if pa.types.is_integer(t):
        return "sc:Integer"
    if pa.types.is_floating(t):
        return "sc:Float"
    if pa.types.is_boolean(t):
        return "sc:Boolean"
    if pa.types.is_timestamp(t):
        return "sc:DateTime"
    raise TypeError(f"no Croissant data type for {t}")


def _field(name: str, t: pa.DataType, field_id: str, column: str, steps: tuple[str, ...],
           descriptions: dict[str, str], in_list: bool = False) -> dict | None:
    """A Croissant field for a column (or a nested part of one, ``steps`` below the column).

    Only leaves carry a source. A leaf below the column reads it through one ``jsonPath`` transform
    per level: mlcroissant applies a transform to each element of a list, so the chain
    ``hide`` -> ``row_id`` turns a patch into the row ids of its hidden rows. A list of structs
    inside another list (``patch.add[].values[]``) cannot be addressed that way (the transform
    would meet a list where it expects a struct); it is left out, and its parent says so.
    """
    repeated = pa.types.is_list(t) or pa.types.is_large_list(t)
    item = t.value_type if repeated else t
    if repeated and in_list and pa.types.is_struct(item):
        return None
    out = {"@type": "cr:Field", "@id": field_id, "name": name,
           "description": descriptions.get(field_id.split("/", 1)[1], name)}
    if repeated:
        out["repeated"] = True
    if pa.types.is_struct(item):
        subs = [(f, _field(f.name, f.type, f"{field_id}/{f.name}", column, (*steps, f.name), descriptions,
                           in_list or repeated)) for f in item]
        out["subField"] = [sub for _, sub in subs if sub is not None]
        left_out = [f.name for f, sub in subs if sub is None]
        if left_out:
            out["description"] += (f" (Not described here: {', '.join(left_out)}, a list within a list, which "
                                   f"Croissant 1.0 readers cannot address; read it from the Parquet column.)")
    else:
        out["dataType"] = _data_type(item)
        out["source"] = {"fileSet": {"@id": FILE_SET}, "extract": {"column": column}}
        if steps:
            out["source"]["transform"] = [{"jsonPath": step} for step in steps]
    return out


def build_croissant(manifest: dict, terms: SourceTerms, descriptions: dict[str, str],
                    name: str = "ehr-robustgym") -> dict:
    """The Croissant document of a release from its manifest (file hashes) and field descriptions."""
    files = [{"@type": "cr:FileObject", "@id": f"tasks/{s.value}.parquet", "name": f"{s.value}.parquet",
              "description": f"the {s.value} split: {manifest['files'][f'tasks/{s.value}.parquet']['rows']} tasks",
              "contentUrl": f"tasks/{s.value}.parquet", "encodingFormat": "application/x-parquet",
              "sha256": manifest["files"][f"tasks/{s.value}.parquet"]["sha256"]} for s in Split]
    file_set = {"@type": "cr:FileSet", "@id": FILE_SET, "name": FILE_SET,
                "description": "the three split files, one task per row",
                "encodingFormat": "application/x-parquet", "includes": "tasks/*.parquet"}
    fields = [_field(f.name, f.type, f"{RECORD_SET}/{f.name}", f.name, (), descriptions) for f in arrow_schema()]
    for f in fields:
        if f["@id"] == f"{RECORD_SET}/split":
            f["references"] = {"field": {"@id": f"{SPLITS_RECORD_SET}/name"}}
    pub = publication(manifest)
    document = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "name": f"{name}-{manifest['version']}",
        "description": ("Clean-Noise pairs of clinical questions over an EHR database in the MIMIC-IV schema: "
                        "each clean task has executed gold SQL and answer, each noisy twin a patch or changed "
                        f"question and the outcome a robust agent should reach. Source: {terms.title}."),
        "conformsTo": CONFORMS_TO,
        "citeAs": benchmark_bibtex(manifest),
        "creator": {"@type": "sc:Organization", "name": pub["creator"], **({"url": pub["url"]} if pub["url"] else {})},
        "keywords": list(KEYWORDS),
        "license": terms.licence_url,
        "version": manifest["version"],
        "datePublished": manifest["created"][:10],
        "isLiveDataset": False,
        **responsible_ai(manifest, terms),
        "distribution": files + [file_set],
        "recordSet": [_splits_record_set(),
                      {"@type": "cr:RecordSet", "@id": RECORD_SET, "name": RECORD_SET,
                       "description": "one task per row (clean task or noisy twin); its split in the `split` field",
                       "key": {"@id": f"{RECORD_SET}/task_id"}, "field": fields}],
    }
    if terms.citation:
        document["citation"] = terms.citation  # the source data, which the release is derived from
    if pub["url"]:
        document["url"] = pub["url"]
    return document


def _splits_record_set() -> dict:
    return {
        "@type": "cr:RecordSet", "@id": SPLITS_RECORD_SET, "name": SPLITS_RECORD_SET, "dataType": "cr:Split",
        "description": "the three splits; a clean task and all its twins, and all tasks of one patient, share one",
        "key": {"@id": f"{SPLITS_RECORD_SET}/name"},
        "field": [{"@type": "cr:Field", "@id": f"{SPLITS_RECORD_SET}/name", "name": "name", "dataType": "sc:Text",
                   "description": "the split's name, as in the tasks' split field and the file name"},
                  {"@type": "cr:Field", "@id": f"{SPLITS_RECORD_SET}/url", "name": "url", "dataType": "sc:URL",
                   "description": "the Croissant split it is"}],
        "data": [{f"{SPLITS_RECORD_SET}/name": s.value, f"{SPLITS_RECORD_SET}/url": SPLIT_URLS[s]} for s in Split],
    }


def responsible_ai(manifest: dict, terms: SourceTerms) -> dict:
    """The Croissant Responsible-AI fields that apply to a release built by this pipeline."""
    real = terms.name != "synthetic"
    return {
        "rai:dataCollection": (
            f"No data was collected for this release: tasks are generated from {terms.title} by executing "
            "question templates' gold SQL (clean tasks) and by injecting one record-, value- or query-level "
            "change per twin, kept only with a passing proof that it changes what the data supports."),
        "rai:dataCollectionType": ["Secondary Data Analysis"] if real else ["Simulation"],
        "rai:dataPreprocessingProtocol": [
            "The source is loaded into DuckDB with the MIMIC-IV schema's types and a stable row_id per row, "
            "and checked against generated data contracts.",
            "Clean tasks, twins and splits are checked against Great Expectations data contracts before "
            "publication; a release breaking a critical expectation is never published."],
        "rai:dataManipulationProtocol": (
            "Noisy twins manipulate the record on purpose: a patch hides, adds or changes rows (applied as "
            "views over the base database), or the question names a non-existent, never-recorded, "
            "ambiguous or out-of-window thing. Each twin records its parameters and proof."),
        "rai:dataUseCases": [
            "Measuring whether EHR question-answering agents recognise unsupported answers (missing, "
            "conflicting, implausible or inconsistent evidence; false or ambiguous premises).",
            "Training such agents from the recorded trajectories."],
        "rai:dataLimitations": [
            "Injected noise of nine types, one change per twin: real records combine problems and have others.",
            "Template questions with fixed paraphrases, narrower than clinicians' questions.",
            "Gold answers are the source database's content computed by SQL, not clinical judgements; not for "
            "clinical decision-making."],
        "rai:dataBiases": [
            "MIMIC-IV records one US hospital's patients and practice (BIDMC); the synthetic source copies its "
            "vocabulary with simplified distributions." if real else
            "The synthetic source copies MIMIC-IV's vocabulary (one US hospital) with simplified, invented "
            "patient distributions."],
        "rai:personalSensitiveInformation": [
            "De-identified health records under PhysioNet's terms (dates shifted, no direct identifiers)."
            if real else "None: synthetic patients."],
        "rai:dataReleaseMaintenancePlan": (
            "Releases are immutable, semantically versioned folders with a manifest of file hashes; each new "
            "release states its differences from the previous one (diff.json)."),
    }


def write_croissant(release_dir: Path, document: dict) -> Path:
    path = Path(release_dir) / CROISSANT
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return path


def _absl_keeps_off_borrowed_streams() -> None:
    """absl (mlcroissant's logging) binds its handler to whatever ``sys.stderr`` was when it was
    imported, and closes that stream whenever logging is reconfigured (a Dagster run does, at its
    start) unless it is the ``sys.stderr`` of that moment: a stream a caller had swapped in for a
    while (a test's captured output) would be closed under its owner. The process's own stderr is
    one absl never closes."""
    from absl import logging as absl_logging

    handler = absl_logging.get_absl_handler().python_handler
    if sys.__stderr__ is not None and handler.stream is not sys.__stderr__:
        handler.stream = sys.__stderr__


def validate_croissant(path: Path, *, read_records: int = 0) -> list[str]:
    """mlcroissant's errors and warnings for the file (empty when it is clean); with
    ``read_records`` > 0, also reads that many records through mlcroissant."""
    import logging

    import mlcroissant as mlc

    _absl_keeps_off_borrowed_streams()
    problems: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record):
            if record.levelno >= logging.WARNING:
                problems.append(record.getMessage())

    handler = _Collect()
    absl_logger = logging.getLogger("absl")
    absl_logger.addHandler(handler)
    try:
        dataset = mlc.Dataset(jsonld=str(path))
        issues = dataset.metadata.ctx.issues
        problems += [str(e) for e in issues.errors] + [str(w) for w in issues.warnings]
        if read_records:
            for i, _ in enumerate(dataset.records(RECORD_SET)):
                if i + 1 >= read_records:
                    break
    except Exception as e:  # mlcroissant raises ValidationError (and others) for broken documents
        problems.append(f"{type(e).__name__}: {e}")
    finally:
        absl_logger.removeHandler(handler)
    return problems
