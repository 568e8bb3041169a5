"""Build a synthetic MIMIC-IV database: the project's default source.

``generate_synthetic`` writes all 31 MIMIC-IV tables with the declared schema (``row_id`` first,
numbered in the order rows are written) through ``source_db.atomic_database``, and records its
provenance. Patients are generated and written in chunks of ``CHUNK_PATIENTS``, so memory stays
flat as the patient count grows and cost is linear in it. The chunk size is fixed, not a knob:
random streams are keyed by (seed, chunk index, step), so it is part of what a seed means; the
same seed and patient count always give the same database contents.
"""

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

from pipeline.schema import SCHEMA_VERSION, TABLES
from pipeline.source_db import SourceInfo, atomic_database, index_lookups, row_counts, write_source_info
from pipeline.synthetic import encounters, events, icu_events, medications, patients
from pipeline.synthetic.context import Chunk, IdCounters, Staff
from pipeline.synthetic.dictionaries import catalog_problems, dictionary_rows, draw_staff
from pipeline.synthetic.writer import TableWriter
from pipeline.vocabulary import SourceKind

GENERATOR = "robustgym-synthetic-mimic-iv"
GENERATOR_VERSION = "1"
CHUNK_PATIENTS = 100
# DuckDB's own buffers; the generator's arrays per chunk are small next to this.
DUCKDB_MEMORY_LIMIT = "1GB"


def synthetic_details(patients: int, seed: int) -> dict:
    """Everything that determines the database contents."""
    return {"generator": GENERATOR, "generator_version": GENERATOR_VERSION, "patients": patients, "seed": seed,
            "schema_version": SCHEMA_VERSION, "chunk_patients": CHUNK_PATIENTS}


def synthetic_fingerprint(patients: int, seed: int) -> str:
    blob = json.dumps(synthetic_details(patients, seed), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()


def generate_chunk(chunk: Chunk, n: int) -> dict[str, dict]:
    """Rows of every patient table for ``n`` new patients, by table name."""
    cohort, adm = patients.draw_cohort(chunk, n)
    stays = encounters.draw_stays(chunk, cohort, adm)
    inputs, ingredients = icu_events.input_rows(chunk, adm, stays)
    procedures, datetimes = icu_events.procedure_rows(chunk, stays)
    tables = {
        "patients": patients.patients_rows(cohort),
        "admissions": patients.admissions_rows(cohort, adm, chunk.staff.providers),
        "transfers": encounters.transfers_rows(chunk, adm, stays),
        "services": encounters.services_rows(chunk, adm, stays),
        "diagnoses_icd": encounters.diagnoses_rows(chunk, adm),
        "procedures_icd": encounters.procedures_rows(chunk, adm, stays),
        "drgcodes": encounters.drgcodes_rows(chunk, cohort, adm),
        "hcpcsevents": encounters.hcpcs_rows(chunk, adm),
        "labevents": events.lab_rows(chunk, adm, stays),
        "microbiologyevents": events.micro_rows(chunk, adm),
        "omr": encounters.omr_rows(chunk, cohort, adm),
        **medications.medication_tables(chunk, adm, stays),
        "icustays": encounters.icustays_rows(stays),
        "chartevents": icu_events.chart_rows(chunk, adm, stays),
        "datetimeevents": datetimes,
        "inputevents": inputs,
        "ingredientevents": ingredients,
        "outputevents": icu_events.output_rows(chunk, adm, stays),
        "procedureevents": procedures,
    }
    expected = {t.name for t in TABLES if not t.dictionary}
    if set(tables) != expected:
        raise AssertionError(f"chunk tables differ from the schema: {sorted(set(tables) ^ expected)}")
    return tables


def generate_synthetic(db_path: Path | str, *, patients: int = 1000, seed: int = 0,
                       progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Write a synthetic MIMIC-IV database of ``patients`` patients to ``db_path``; returns row counts."""
    if isinstance(patients, bool) or not isinstance(patients, int) or patients < 1:
        raise ValueError(f"patients must be a positive integer, got {patients!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    problems = catalog_problems()
    if problems:
        raise ValueError("the synthetic catalog is inconsistent: " + "; ".join(problems))
    say = progress or (lambda message: None)
    started = time.perf_counter()
    staff: Staff = draw_staff(seed)
    chunks = (patients + CHUNK_PATIENTS - 1) // CHUNK_PATIENTS
    with atomic_database(Path(db_path)) as con:
        con.execute(f"SET memory_limit = '{DUCKDB_MEMORY_LIMIT}'")
        writer = TableWriter(con)
        for name, rows in dictionary_rows(staff).items():
            writer.append(name, rows)
        say(f"synthetic: dictionaries written ({', '.join(f'{k} {v}' for k, v in writer.rows.items() if v)})")
        ids = IdCounters()
        for index in range(chunks):
            first = index * CHUNK_PATIENTS
            n = min(CHUNK_PATIENTS, patients - first)
            tables = generate_chunk(Chunk(seed, index, ids, staff), n)
            written = sum(writer.append(t.name, tables[t.name]) for t in TABLES if t.name in tables)
            say(f"synthetic: chunk {index + 1}/{chunks}: patients {first + 1}-{first + n}, {written:,} rows "
                f"({time.perf_counter() - started:.1f} s)")
        writer.flush()
        index_lookups(con)
        write_source_info(con, SourceInfo(SourceKind.SYNTHETIC, synthetic_fingerprint(patients, seed),
                                          synthetic_details(patients, seed)))
        counts = row_counts(con)
    say(f"synthetic: {patients} patients, {sum(counts.values()):,} rows in {time.perf_counter() - started:.1f} s")
    return counts
