"""Noise: noisy twins of clean tasks, each with a patch or a changed question and a proof of effect.

Importing the package registers every injector (record, value and query level). Entry point:
``build_pairs(db, clean_tasks, config, seed)``; see docs/architecture.md, "Noise".
"""

from pipeline.noise import query_noise, record_noise, value_noise  # noqa: F401  (register on import)
from pipeline.noise.build import NoiseResult, build_pairs
from pipeline.noise.mix import DEFAULT_TARGET_PAIRS, Mix, NoiseConfig, targets
from pipeline.noise.registry import Applicability, Draft, DropReason, Injector, injector, injectors, register

__all__ = [
    "DEFAULT_TARGET_PAIRS", "Applicability", "Draft", "DropReason", "Injector", "Mix", "NoiseConfig", "NoiseResult",
    "build_pairs", "injector", "injectors", "register", "targets",
]
