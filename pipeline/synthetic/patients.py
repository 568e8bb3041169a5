"""Patients and their admissions: who they are, what they have, when they come and whether they die.

A patient gets an age, sex, body size and lifelong conditions; then one or more admissions in time
order, each with a reason (the principal condition), complications, an ICD era (9 or 10, by the
real year the admission maps to), a service, whether it includes an ICU stay, and how it ends.
Deaths are decided here, so every later row can respect them: a patient who dies in hospital dies
at the discharge of the last admission; one who dies later dies after the last discharge.
"""

from dataclasses import dataclass

import numpy as np

from pipeline.synthetic import catalog as cat
from pipeline.synthetic import codes
from pipeline.synthetic.context import DAY, HOUR, Chunk, to_minute, year_of, year_start
from pipeline.synthetic.ragged import exclusive_cumsum, parent_index, position_in_group, weighted_choice
from pipeline.synthetic.writer import Categorical, masked

ALIVE, DIES_IN_HOSPITAL, DIES_AFTER_DISCHARGE = 0, 1, 2
MAX_ADMISSIONS = 10

_C = len(codes.CONDITIONS)
_PREVALENCE = np.array([cond.chronic_prevalence for cond in codes.CONDITIONS])
_PRINCIPAL_WEIGHT = np.array([cond.principal_weight for cond in codes.CONDITIONS])
_ICU_PROB = np.array([cond.icu_prob for cond in codes.CONDITIONS])
_DEATH_PROB = np.array([cond.death_prob for cond in codes.CONDITIONS])
_SERVICE = np.array([cat.SERVICE_INDEX[cond.service] for cond in codes.CONDITIONS])
_OBESITY = codes.CONDITION_INDEX["obesity"]
_DNR = codes.CONDITION_INDEX["dnr"]

ADMISSION_TYPE_LABELS = tuple(label for label, _ in cat.ADMISSION_TYPES)
_ED_PROB = np.array([cat.ED_PROBABILITY.get(label, 0.0) for label in ADMISSION_TYPE_LABELS])
_OBSERVATION = np.array([label in cat.OBSERVATION_TYPES for label in ADMISSION_TYPE_LABELS])
ADMISSION_LOCATION_LABELS = (cat.ED_ADMISSION_LOCATION,) + tuple(label for label, _ in cat.ADMISSION_LOCATIONS)
DISCHARGE_LOCATION_LABELS = (cat.DIED,) + tuple(label for label, _ in cat.DISCHARGE_LOCATIONS)


@dataclass
class Cohort:
    """The patients of one chunk (arrays indexed by patient)."""

    subject_id: np.ndarray
    male: np.ndarray
    anchor_age: np.ndarray
    anchor_year: np.ndarray
    anchor_group: np.ndarray  # index into catalog.ANCHOR_YEAR_GROUPS
    real_anchor_year: np.ndarray  # the undisguised year anchor_year stands for
    height_cm: np.ndarray
    weight_kg: np.ndarray
    chronic: np.ndarray  # bool (patients x conditions)
    race: np.ndarray
    marital: np.ndarray
    language: np.ndarray
    n_admissions: np.ndarray
    death: np.ndarray  # ALIVE, DIES_IN_HOSPITAL or DIES_AFTER_DISCHARGE
    dod: np.ndarray  # epoch seconds of the day of death (meaningful where death != ALIVE)

    def __len__(self) -> int:
        return len(self.subject_id)


@dataclass
class Admissions:
    """The admissions of one chunk, ordered by patient then time."""

    patient: np.ndarray  # index into the Cohort
    subject_id: np.ndarray
    hadm_id: np.ndarray
    admittime: np.ndarray
    dischtime: np.ndarray
    has_ed: np.ndarray
    edregtime: np.ndarray
    admission_type: np.ndarray
    admission_location: np.ndarray
    discharge_location: np.ndarray
    insurance: np.ndarray
    admit_provider: np.ndarray  # index into Staff.providers
    principal: np.ndarray  # condition index
    conditions: np.ndarray  # bool (admissions x conditions)
    icd_version: np.ndarray
    service: np.ndarray  # index into catalog.SERVICES
    has_icu: np.ndarray
    died: np.ndarray

    def __len__(self) -> int:
        return len(self.hadm_id)

    def has(self, condition_key: str) -> np.ndarray:
        return self.conditions[:, codes.CONDITION_INDEX[condition_key]]


def _row_choice(rng: np.random.Generator, weights: np.ndarray) -> np.ndarray:
    """One column index per row of ``weights`` (rows need not be normalised)."""
    cum = np.cumsum(weights, axis=1)
    u = rng.random(len(weights)) * cum[:, -1]
    return np.minimum((cum <= u[:, None]).sum(axis=1), weights.shape[1] - 1)


def draw_cohort(chunk: Chunk, n: int) -> tuple[Cohort, Admissions]:
    rng = chunk.rng("patients")
    subject_id = chunk.ids.take("subject_id", n)
    male = rng.random(n) < 0.48
    anchor_age = np.clip(np.round(rng.normal(63, 17, n)), 18, 91).astype(np.int64)
    anchor_year = rng.integers(2110, 2190, n)
    anchor_group = rng.integers(0, len(cat.ANCHOR_YEAR_GROUPS), n)
    group_start = np.array([start for _, start in cat.ANCHOR_YEAR_GROUPS])[anchor_group]
    real_anchor_year = group_start + rng.integers(0, 3, n)
    height_cm = np.where(male, rng.normal(176, 7, n), rng.normal(163, 7, n)).round(1)
    bmi = np.clip(rng.lognormal(np.log(27.5), 0.2, n), 15, 60)
    weight_kg = (bmi * (height_cm / 100) ** 2).round(1)

    chronic = np.zeros((n, _C), dtype=bool)
    age_factor = np.clip(0.4 + anchor_age / 80, 0.5, 1.5)
    for k, cond in enumerate(codes.CONDITIONS):
        if cond.chronic_prevalence <= 0:
            continue
        u = rng.random(n)
        if cond.given is None:
            chronic[:, k] = u < np.minimum(cond.chronic_prevalence * age_factor, 0.95)
        else:
            given = codes.CONDITION_INDEX[cond.given]
            assert given < k, f"condition {cond.key!r} must come after {cond.given!r} in codes.CONDITIONS"
            chronic[:, k] = chronic[:, given] & (u < cond.chronic_prevalence)
    chronic[:, _OBESITY] = (bmi >= 30) & (rng.random(n) < 0.7)

    race = weighted_choice(rng, [w for _, w in cat.RACES], n)
    marital = weighted_choice(rng, [w for _, w in cat.MARITAL_STATUSES], n)
    language = weighted_choice(rng, [w for _, w in cat.LANGUAGES], n)
    n_admissions = np.minimum(rng.geometric(0.45, n), MAX_ADMISSIONS)

    cohort = Cohort(subject_id, male, anchor_age, anchor_year, anchor_group, real_anchor_year, height_cm,
                    weight_kg, chronic, race, marital, language, n_admissions,
                    np.zeros(n, dtype=np.int8), np.zeros(n, dtype=np.int64))
    admissions = _draw_admissions(chunk, cohort)
    return cohort, admissions


def _draw_admissions(chunk: Chunk, cohort: Cohort) -> Admissions:
    rng = chunk.rng("admissions")
    counts = cohort.n_admissions
    pat = parent_index(counts)
    pos = position_in_group(counts)
    a = len(pat)
    last = pos == counts[pat] - 1

    adm_type = weighted_choice(rng, [w for _, w in cat.ADMISSION_TYPES], a)
    los = np.clip(rng.lognormal(np.log(4 * DAY), 0.7, a), 0.5 * DAY, 45 * DAY)
    los = np.where(_OBSERVATION[adm_type], np.maximum(los * 0.35, 8 * HOUR), los)
    gap = 2 * DAY + rng.exponential(150 * DAY, a)
    first = year_start(cohort.anchor_year) + rng.integers(0, 3 * 365 * DAY, len(cohort))
    admittime = to_minute(first[pat] + exclusive_cumsum(los + gap, counts))
    dischtime = to_minute(admittime + los)

    has_ed = rng.random(a) < _ED_PROB[adm_type]
    edregtime = to_minute(admittime - rng.uniform(1.5 * HOUR, 8 * HOUR, a))
    location = np.where(has_ed, 0, 1 + weighted_choice(rng, [w for _, w in cat.ADMISSION_LOCATIONS], a))

    # The reason for admission: lifelong conditions make their own exacerbations likelier.
    weights = _PRINCIPAL_WEIGHT[None, :] * (1 + 2 * cohort.chronic[pat])
    principal = _row_choice(rng, weights)
    conditions = cohort.chronic[pat].copy()
    conditions[np.arange(a), principal] = True
    for k, cond in enumerate(codes.CONDITIONS):
        if cond.secondary_prob <= 0:
            continue
        hit = rng.random(a) < cond.secondary_prob
        if cond.given is not None:
            hit &= conditions[:, codes.CONDITION_INDEX[cond.given]]
        conditions[:, k] |= hit

    age_at = cohort.anchor_age[pat] + (year_of(admittime) - cohort.anchor_year[pat])
    real_year = cohort.real_anchor_year[pat] + (year_of(admittime) - cohort.anchor_year[pat])
    icd_version = np.where(real_year >= cat.ICD10_FROM_YEAR, 10, 9)
    has_icu = rng.random(a) < _ICU_PROB[principal]

    # Death: in hospital at the last admission, or within a year after the last discharge.
    p_die = 0.03 + _DEATH_PROB[principal] + 0.04 * (age_at > 75) + 0.05 * has_icu
    died = last & (rng.random(a) < p_die)
    has_icu |= died & (rng.random(a) < 0.5)
    conditions[:, _DNR] |= (died & (rng.random(a) < 0.7)) | (rng.random(a) < 0.02)
    discharge = np.where(died, 0, 1 + weighted_choice(rng, [w for _, w in cat.DISCHARGE_LOCATIONS], a))

    medicare_p = np.where(age_at >= 65, 0.85, 0.12)
    u = rng.random(a)
    insurance = np.where(u < medicare_p, 0, np.where(u < medicare_p + (1 - medicare_p) * 0.3, 1, 2))

    later = ~died[last] & (rng.random(len(cohort)) < np.where(cohort.anchor_age > 75, 0.2, 0.1))
    last_discharge = dischtime[last]
    cohort.death[:] = np.where(died[last], DIES_IN_HOSPITAL, np.where(later, DIES_AFTER_DISCHARGE, ALIVE))
    after = last_discharge + rng.integers(1, 366, len(cohort)) * DAY
    cohort.dod[:] = np.where(cohort.death == DIES_IN_HOSPITAL, last_discharge, after) // DAY * DAY

    return Admissions(
        patient=pat, subject_id=cohort.subject_id[pat], hadm_id=chunk.ids.take("hadm_id", a),
        admittime=admittime, dischtime=dischtime, has_ed=has_ed, edregtime=edregtime,
        admission_type=adm_type, admission_location=location, discharge_location=discharge,
        insurance=insurance, admit_provider=rng.integers(0, len(chunk.staff.providers), a),
        principal=principal, conditions=conditions, icd_version=icd_version, service=_SERVICE[principal],
        has_icu=has_icu, died=died)


def patients_rows(cohort: Cohort) -> dict:
    group_labels = [label for label, _ in cat.ANCHOR_YEAR_GROUPS]
    return {
        "subject_id": cohort.subject_id,
        "gender": Categorical(cohort.male.astype(np.int64), ["F", "M"]),
        "anchor_age": cohort.anchor_age,
        "anchor_year": cohort.anchor_year,
        "anchor_year_group": Categorical(cohort.anchor_group, group_labels),
        "dod": masked(cohort.dod, cohort.death == ALIVE),
    }


def admissions_rows(cohort: Cohort, adm: Admissions, providers: tuple[str, ...]) -> dict:
    pat = adm.patient
    return {
        "subject_id": adm.subject_id,
        "hadm_id": adm.hadm_id,
        "admittime": adm.admittime,
        "dischtime": adm.dischtime,
        "deathtime": masked(adm.dischtime, ~adm.died),
        "admission_type": Categorical(adm.admission_type, ADMISSION_TYPE_LABELS),
        "admit_provider_id": Categorical(adm.admit_provider, providers),
        "admission_location": Categorical(adm.admission_location, ADMISSION_LOCATION_LABELS),
        "discharge_location": Categorical(adm.discharge_location, DISCHARGE_LOCATION_LABELS),
        "insurance": Categorical(adm.insurance, cat.INSURANCES),
        "language": Categorical(cohort.language[pat], [label for label, _ in cat.LANGUAGES]),
        "marital_status": Categorical(cohort.marital[pat], [label for label, _ in cat.MARITAL_STATUSES]),
        "race": Categorical(cohort.race[pat], [label for label, _ in cat.RACES]),
        "edregtime": masked(adm.edregtime, ~adm.has_ed),
        # The ED stay ends when the admission starts; transfers follow the same boundary.
        "edouttime": masked(adm.admittime, ~adm.has_ed),
        "hospital_expire_flag": adm.died.astype(np.int16),
    }

