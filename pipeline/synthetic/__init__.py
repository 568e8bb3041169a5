"""The built-in synthetic MIMIC-IV: the project's default source database.

Public entry point: ``generate_synthetic(db_path, *, patients=1000, seed=0, progress=None)``.
Modules by responsibility: ``catalog`` (measured items, care units, admission categories),
``codes`` (conditions with ICD codes, procedures, DRG, HCPCS, microbiology), ``drugs``,
``dictionaries`` (d_* tables and staff), ``patients`` (patients, admissions, deaths),
``encounters`` (ICU stays, transfers, services, billing codes, omr), ``events`` (labs,
microbiology), ``icu_events`` (the ICU flowsheet), ``medications`` (POE, prescriptions, pharmacy,
eMAR), ``writer`` (typed chunk appends), ``generate`` (orchestration).
"""

from pipeline.synthetic.generate import GENERATOR_VERSION, generate_synthetic

__all__ = ["GENERATOR_VERSION", "generate_synthetic"]
