"""What every generation step shares: seeded random streams, id counters and the staff pools.

Randomness is explicit. A chunk of patients draws from streams seeded by (seed, chunk index,
step name), so a step's draws do not depend on how many numbers another step consumed, and nothing
reads global random state. Ids come from counters that run across chunks in the order rows are
generated, so they are unique in the database and identical between builds.
"""

import zlib
from dataclasses import dataclass, field

import numpy as np

# First id of each kind. Ranges follow MIMIC-IV where it has a convention (subject_id 10M+,
# hadm_id 20M+, stay_id 30M+); the rest only need to be unique per table.
ID_BASES: dict[str, int] = {
    "subject_id": 10_000_000,
    "hadm_id": 20_000_000,
    "stay_id": 30_000_000,
    "transfer_id": 35_000_000,
    "labevent_id": 1,
    "specimen_id": 1_000_000,
    "microevent_id": 1,
    "micro_specimen_id": 1_000_000,
    "pharmacy_id": 10_000_000,
    "orderid": 1_000_000,
}

MINUTE = 60
HOUR = 3_600
DAY = 86_400


def stream(seed: int, chunk: int, step: str) -> np.random.Generator:
    """The random stream of one generation step in one chunk."""
    return np.random.default_rng([seed, chunk, zlib.crc32(step.encode())])


@dataclass
class IdCounters:
    next: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ID_BASES, 0))

    def take(self, kind: str, n: int) -> np.ndarray:
        """The next ``n`` ids of ``kind``."""
        start = self.next[kind]
        self.next[kind] = start + n
        return ID_BASES[kind] + np.arange(start, start + n, dtype=np.int64)


@dataclass(frozen=True)
class Staff:
    """Identifiers of the people who order, enter and chart: MIMIC-IV's provider and caregiver ids."""

    providers: tuple[str, ...]
    caregivers: tuple[int, ...]


@dataclass
class Chunk:
    """One chunk of patients being generated."""

    seed: int
    index: int
    ids: IdCounters
    staff: Staff

    def rng(self, step: str) -> np.random.Generator:
        return stream(self.seed, self.index, step)


def to_minute(seconds: np.ndarray) -> np.ndarray:
    return (np.asarray(seconds, dtype=np.int64) // MINUTE) * MINUTE


def year_start(years: np.ndarray) -> np.ndarray:
    """Epoch seconds of January 1st of each year."""
    years = np.asarray(years, dtype=np.int64)
    return (years - 1970).astype("datetime64[Y]").astype("datetime64[s]").astype(np.int64)


def year_of(seconds: np.ndarray) -> np.ndarray:
    return np.asarray(seconds, dtype=np.int64).astype("datetime64[s]").astype("datetime64[Y]").astype(np.int64) + 1970
