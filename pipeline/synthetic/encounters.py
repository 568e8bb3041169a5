"""Where a patient is and what the admission is billed as: ICU stays, transfers, services, coded
diagnoses and procedures, DRGs, HCPCS events, and outpatient measurements (omr).

ICU stays sit inside their admission. Transfers walk through the admission without gaps: the
emergency department (ending at admittime), a ward, the ICU unit(s) with the stay's exact in and
out times, a ward again, and the discharge event at dischtime. Devices of an ICU stay
(ventilation, lines) are decided here, because coded procedures and ICU events both depend on them.
"""

from dataclasses import dataclass

import numpy as np

from pipeline.synthetic import catalog as cat
from pipeline.synthetic import codes
from pipeline.synthetic.context import DAY, HOUR, MINUTE, Chunk, to_minute
from pipeline.synthetic.patients import ADMISSION_TYPE_LABELS, Admissions, Cohort
from pipeline.synthetic.ragged import parent_index, rank_in_sorted_groups
from pipeline.synthetic.writer import Categorical, masked

CONTINUOUS_DEVICES = tuple(p for p in cat.PROCEDURE_ITEMS if p.kind == "continuous")
VENTILATION = 225792


@dataclass
class Stays:
    """ICU stays of one chunk, ordered like their admissions."""

    admission: np.ndarray  # index into Admissions
    subject_id: np.ndarray
    hadm_id: np.ndarray
    stay_id: np.ndarray
    intime: np.ndarray
    outtime: np.ndarray
    first_unit: np.ndarray  # index into catalog.CARE_UNITS
    last_unit: np.ndarray
    switch: np.ndarray  # when first_unit hands over to last_unit (equal to outtime when it does not)
    weight_kg: np.ndarray  # admission weight
    flags: dict[str, np.ndarray]  # ventilated, pressor, central_line, arterial_line, foley, infection, any
    # Continuous devices by procedureevents itemid: (present, start, end).
    devices: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]

    def __len__(self) -> int:
        return len(self.stay_id)


def _ward(rng: np.random.Generator, service: np.ndarray) -> np.ndarray:
    """A ward (care unit index) of each admission's service."""
    out = np.empty(len(service), dtype=np.int64)
    for s, svc in enumerate(cat.SERVICES):
        rows = np.flatnonzero(service == s)
        picks = rng.integers(0, len(svc.wards), len(rows))
        out[rows] = np.array([cat.CARE_UNIT_INDEX[w] for w in svc.wards])[picks]
    return out


def draw_stays(chunk: Chunk, cohort: Cohort, adm: Admissions) -> Stays:
    rng = chunk.rng("icustays")
    idx = np.flatnonzero(adm.has_icu)
    s = len(idx)
    admit, disch = adm.admittime[idx], adm.dischtime[idx]
    span = disch - admit
    intime = admit + (rng.uniform(0, 0.25, s) * span).astype(np.int64)
    room = disch - intime
    duration = np.clip(rng.lognormal(np.log(2.5 * DAY), 0.7, s), 6 * HOUR, 30 * DAY)
    outtime = intime + np.minimum(duration, room * rng.uniform(0.5, 0.95, s)).astype(np.int64)
    # Most in-hospital deaths of an ICU admission happen in the ICU.
    died_in_icu = adm.died[idx] & (rng.random(s) < 0.6)
    outtime = np.where(died_in_icu, disch, outtime)

    first_unit = np.empty(s, dtype=np.int64)
    service = adm.service[idx]
    for k, svc in enumerate(cat.SERVICES):
        rows = np.flatnonzero(service == k)
        picks = rng.integers(0, len(svc.icus), len(rows))
        first_unit[rows] = np.array([cat.CARE_UNIT_INDEX[u] for u in svc.icus])[picks]
    icu_units = np.array(sorted(cat.CARE_UNIT_INDEX[u] for u in cat.ICU_UNITS))
    other = icu_units[rng.integers(0, len(icu_units), s)]
    moves = (rng.random(s) < 0.15) & (outtime - intime > DAY) & (other != first_unit)
    last_unit = np.where(moves, other, first_unit)
    switch = np.where(moves, intime + ((outtime - intime) * rng.uniform(0.3, 0.7, s)).astype(np.int64), outtime)

    conds = adm.conditions[idx]
    has = {key: conds[:, i] for key, i in codes.CONDITION_INDEX.items()}
    ventilated = rng.random(s) < np.where(has["resp_failure"], 0.9, np.where(has["sepsis"], 0.45, 0.25))
    pressor = rng.random(s) < np.where(has["septic_shock"], 0.95, np.where(has["sepsis"], 0.5, 0.08))
    flags = {
        "any": np.ones(s, dtype=bool),
        "ventilated": ventilated,
        "pressor": pressor,
        "central_line": rng.random(s) < 0.3 + 0.5 * pressor,
        "arterial_line": rng.random(s) < 0.3 + 0.5 * ventilated,
        "foley": rng.random(s) < 0.75,
        "infection": conds[:, [codes.CONDITION_INDEX[k] for k in sorted(codes.INFECTIONS)]].any(axis=1),
    }
    devices = {}
    stay_len = outtime - intime
    for dev in CONTINUOUS_DEVICES:
        present = flags[dev.indication] & (rng.random(s) < dev.probability)
        start = intime + (stay_len * rng.uniform(0, 0.2, s)).astype(np.int64)
        end = start + ((outtime - start) * rng.uniform(0.4, 1.0, s)).astype(np.int64)
        devices[dev.itemid] = (present, to_minute(start), np.maximum(to_minute(end), to_minute(start) + MINUTE))
    # A minute-rounded end can pass outtime only by less than a minute; keep devices inside the stay.
    for itemid, (present, start, end) in devices.items():
        devices[itemid] = (present, np.maximum(start, intime), np.minimum(end, outtime))

    weight = cohort.weight_kg[adm.patient[idx]] * np.exp(rng.normal(0, 0.03, s))
    return Stays(admission=idx, subject_id=adm.subject_id[idx], hadm_id=adm.hadm_id[idx],
                 stay_id=chunk.ids.take("stay_id", s), intime=intime, outtime=outtime, first_unit=first_unit,
                 last_unit=last_unit, switch=switch, weight_kg=weight.round(1), flags=flags, devices=devices)


def icustays_rows(stays: Stays) -> dict:
    return {
        "subject_id": stays.subject_id, "hadm_id": stays.hadm_id, "stay_id": stays.stay_id,
        "first_careunit": Categorical(stays.first_unit, cat.CARE_UNITS),
        "last_careunit": Categorical(stays.last_unit, cat.CARE_UNITS),
        "intime": stays.intime, "outtime": stays.outtime,
        "los": (stays.outtime - stays.intime) / DAY,
    }


def transfers_rows(chunk: Chunk, adm: Admissions, stays: Stays) -> dict:
    """ED, ward before the ICU, first and second ICU unit, ward after, discharge: six slots per
    admission, the unused ones dropped."""
    rng = chunk.rng("transfers")
    a = len(adm)
    slots = 6
    intime = np.zeros((a, slots), dtype=np.int64)
    outtime = np.zeros((a, slots), dtype=np.int64)
    unit = np.full((a, slots), -1, dtype=np.int64)
    valid = np.zeros((a, slots), dtype=bool)

    intime[:, 0], outtime[:, 0], unit[:, 0] = adm.edregtime, adm.admittime, cat.CARE_UNIT_INDEX[cat.ED_UNIT]
    valid[:, 0] = adm.has_ed

    # Without an ICU stay, the admission may move between two wards at a random time.
    split = adm.admittime + ((adm.dischtime - adm.admittime) * rng.uniform(0.2, 0.8, a)).astype(np.int64)
    moves = rng.random(a) < 0.3
    pre_end = np.where(moves, split, adm.dischtime)
    post_start = np.where(moves, split, adm.dischtime)
    icu_in = np.full(a, -1, dtype=np.int64)
    icu_out = np.full(a, -1, dtype=np.int64)
    icu_switch = np.full(a, -1, dtype=np.int64)
    icu_first = np.full(a, -1, dtype=np.int64)
    icu_last = np.full(a, -1, dtype=np.int64)
    k = stays.admission
    icu_in[k], icu_out[k], icu_switch[k] = stays.intime, stays.outtime, stays.switch
    icu_first[k], icu_last[k] = stays.first_unit, stays.last_unit
    pre_end[k], post_start[k] = stays.intime, stays.outtime

    intime[:, 1], outtime[:, 1], unit[:, 1] = adm.admittime, pre_end, _ward(rng, adm.service)
    valid[:, 1] = pre_end > adm.admittime
    intime[:, 2], outtime[:, 2], unit[:, 2] = icu_in, icu_switch, icu_first
    valid[:, 2] = adm.has_icu
    intime[:, 3], outtime[:, 3], unit[:, 3] = icu_switch, icu_out, icu_last
    valid[:, 3] = adm.has_icu & (icu_switch < icu_out)
    intime[:, 4], outtime[:, 4], unit[:, 4] = post_start, adm.dischtime, _ward(rng, adm.service)
    valid[:, 4] = post_start < adm.dischtime
    intime[:, 5], outtime[:, 5] = adm.dischtime, -1
    valid[:, 5] = True

    rows, cols = np.nonzero(valid)  # row-major: by admission, then slot order (= time order)
    first_inpatient = np.argmax(valid[:, 1:], axis=1) + 1
    eventtype = np.where(cols == 0, 0, np.where(cols == 5, 3, np.where(cols == first_inpatient[rows], 1, 2)))
    return {
        "subject_id": adm.subject_id[rows], "hadm_id": adm.hadm_id[rows],
        "transfer_id": chunk.ids.take("transfer_id", len(rows)),
        "eventtype": Categorical(eventtype, ["ED", "admit", "transfer", "discharge"]),
        "careunit": Categorical(unit[rows, cols], cat.CARE_UNITS),
        "intime": intime[rows, cols],
        "outtime": masked(outtime[rows, cols], cols == 5),
    }


def services_rows(chunk: Chunk, adm: Admissions, stays: Stays) -> dict:
    rng = chunk.rng("services")
    a = len(adm)
    changes = rng.random(a) < 0.2
    when = adm.admittime + ((adm.dischtime - adm.admittime) * rng.uniform(0.3, 0.8, a)).astype(np.int64)
    icu_out = np.full(a, -1, dtype=np.int64)
    icu_out[stays.admission] = stays.outtime
    # Leaving the ICU is when patients usually change service.
    when = np.where((icu_out > 0) & (icu_out < adm.dischtime), icu_out, when)
    new_service = (adm.service + rng.integers(1, len(cat.SERVICES), a)) % len(cat.SERVICES)
    adm_idx = np.concatenate([np.arange(a), np.flatnonzero(changes)])
    second = np.concatenate([np.zeros(a, dtype=bool), np.ones(int(changes.sum()), dtype=bool)])
    order = np.lexsort((second, adm_idx))
    adm_idx, second = adm_idx[order], second[order]
    labels = [s.code for s in cat.SERVICES]
    return {
        "subject_id": adm.subject_id[adm_idx], "hadm_id": adm.hadm_id[adm_idx],
        "transfertime": np.where(second, when[adm_idx], adm.admittime[adm_idx]),
        "prev_service": Categorical(np.where(second, adm.service[adm_idx], -1), labels),
        "curr_service": Categorical(np.where(second, new_service[adm_idx], adm.service[adm_idx]), labels),
    }


DIAGNOSIS_CODES: tuple[str, ...] = tuple(code for cond in codes.CONDITIONS for code in (cond.icd9, cond.icd10))


def diagnoses_rows(chunk: Chunk, adm: Admissions) -> dict:
    """Every condition of the admission, the principal one first, the rest in random order."""
    rng = chunk.rng("diagnoses")
    rows, cond = np.nonzero(adm.conditions)
    not_principal = cond != adm.principal[rows]
    order = np.lexsort((rng.random(len(rows)), not_principal, rows))
    rows, cond = rows[order], cond[order]
    version = adm.icd_version[rows]
    return {
        "subject_id": adm.subject_id[rows], "hadm_id": adm.hadm_id[rows],
        "seq_num": rank_in_sorted_groups(rows) + 1,
        "icd_code": Categorical(cond * 2 + (version == 10), DIAGNOSIS_CODES),
        "icd_version": version.astype(np.int16),
    }


PROCEDURE_CODES: tuple[str | None, ...] = tuple(code for p in codes.ICD_PROCEDURES for code in (p.icd9, p.icd10))


def procedures_rows(chunk: Chunk, adm: Admissions, stays: Stays) -> dict:
    """Procedures of the principal condition, and of the ICU stay's devices, dated when performed."""
    rng = chunk.rng("procedures_icd")
    adm_parts, proc_parts, time_parts = [], [], []

    def add(admissions: np.ndarray, key: str, when: np.ndarray) -> None:
        adm_parts.append(admissions)
        proc_parts.append(np.full(len(admissions), codes.ICD_PROCEDURE_INDEX[key]))
        time_parts.append(when)

    span = adm.dischtime - adm.admittime
    for k, cond in enumerate(codes.CONDITIONS):
        for key in cond.procedures:
            hit = np.flatnonzero((adm.principal == k) & (rng.random(len(adm)) < 0.6))
            add(hit, key, adm.admittime[hit] + (span[hit] * rng.uniform(0, 1, len(hit))).astype(np.int64))
    present, start, end = stays.devices[VENTILATION]
    long_vent = end - start > 96 * HOUR
    for key, chosen in (("intubation", present & (rng.random(len(stays)) < 0.8)),
                        ("vent_long", present & long_vent), ("vent_short", present & ~long_vent)):
        add(stays.admission[chosen], key, start[chosen])
    for key, itemid in (("central_line", 224263), ("arterial_line", 225752)):
        present, start, _ = stays.devices[itemid]
        chosen = present & (rng.random(len(stays)) < 0.7)
        add(stays.admission[chosen], key, start[chosen])
    long_stay = (stays.outtime - stays.intime > 5 * DAY) & (rng.random(len(stays)) < 0.4)
    add(stays.admission[long_stay], "enteral_nutrition", stays.intime[long_stay] + 2 * DAY)

    rows = np.concatenate(adm_parts)
    proc = np.concatenate(proc_parts)
    when = np.concatenate(time_parts)
    code = proc * 2 + (adm.icd_version[rows] == 10)
    has_code = np.array([c is not None for c in PROCEDURE_CODES])[code]
    rows, code, when = rows[has_code], code[has_code], when[has_code]
    order = np.lexsort((code, when, rows))
    rows, code, when = rows[order], code[order], when[order]
    return {
        "subject_id": adm.subject_id[rows], "hadm_id": adm.hadm_id[rows],
        "seq_num": rank_in_sorted_groups(rows) + 1,
        "chartdate": when,
        "icd_code": Categorical(code, PROCEDURE_CODES),
        "icd_version": adm.icd_version[rows].astype(np.int16),
    }


_DRG_CONDITIONS = [k for k, cond in enumerate(codes.CONDITIONS) if cond.drg]


def drgcodes_rows(chunk: Chunk, cohort: Cohort, adm: Admissions) -> dict:
    """An MS-DRG (HCFA) and an APR-DRG row per admission, from its principal condition."""
    rng = chunk.rng("drgcodes")
    a = len(adm)
    has_drg = np.isin(adm.principal, _DRG_CONDITIONS)
    rows = np.repeat(np.flatnonzero(has_drg), 2)
    apr = np.tile([False, True], int(has_drg.sum()))
    principal = adm.principal[rows]
    hcfa_labels = [cond.drg[0] if cond.drg else "" for cond in codes.CONDITIONS]
    apr_labels = [cond.apr[0] if cond.apr else "" for cond in codes.CONDITIONS]
    hcfa_desc = [cond.drg[1] if cond.drg else "" for cond in codes.CONDITIONS]
    apr_desc = [cond.apr[1] if cond.apr else "" for cond in codes.CONDITIONS]
    n_conditions = adm.conditions.sum(axis=1)
    old = cohort.anchor_age[adm.patient] > 75
    severity = np.clip(1 + (n_conditions > 5) + adm.has_icu + adm.died + (rng.random(a) < 0.3), 1, 4)
    mortality = np.clip(1 + adm.has_icu + 2 * adm.died + old, 1, 4)
    both = len(codes.CONDITIONS)
    return {
        "subject_id": adm.subject_id[rows], "hadm_id": adm.hadm_id[rows],
        "drg_type": Categorical(apr.astype(np.int64), ["HCFA", "APR"]),
        "drg_code": Categorical(principal + both * apr, hcfa_labels + apr_labels),
        "description": Categorical(principal + both * apr, hcfa_desc + apr_desc),
        "drg_severity": masked(severity[rows].astype(np.int16), ~apr),
        "drg_mortality": masked(mortality[rows].astype(np.int16), ~apr),
    }


def hcpcs_rows(chunk: Chunk, adm: Admissions) -> dict:
    rng = chunk.rng("hcpcsevents")
    a = len(adm)
    observation = np.isin(adm.admission_type,
                          [i for i, t in enumerate(ADMISSION_TYPE_LABELS) if t in cat.OBSERVATION_TYPES])
    parts = [(observation, codes.HCPCS_OBSERVATION, adm.admittime),
             (adm.has_icu & (rng.random(a) < 0.4), codes.HCPCS_CRITICAL_CARE, adm.admittime + DAY),
             (rng.random(a) < 0.1, codes.HCPCS_INPATIENT, adm.admittime)]
    for key, code in sorted(codes.HCPCS_FOR_CONDITION.items()):
        chosen = (adm.principal == codes.CONDITION_INDEX[key]) & (rng.random(a) < 0.6)
        parts.append((chosen, code, adm.admittime + (adm.dischtime - adm.admittime) // 2))
    rows = np.concatenate([np.flatnonzero(chosen) for chosen, _, _ in parts])
    code = np.concatenate([np.full(int(chosen.sum()), codes.HCPCS_INDEX[c]) for chosen, c, _ in parts])
    when = np.concatenate([np.minimum(t[chosen], adm.dischtime[chosen]) for chosen, _, t in parts])
    order = np.lexsort((code, when, rows))
    rows, code, when = rows[order], code[order], when[order]
    return {
        "subject_id": adm.subject_id[rows], "hadm_id": adm.hadm_id[rows],
        "chartdate": when,
        "hcpcs_cd": Categorical(code, [h.code for h in codes.HCPCS]),
        "seq_num": rank_in_sorted_groups(rows) + 1,
        "short_description": Categorical(code, [h.short_description for h in codes.HCPCS]),
    }


OMR_NAMES = (cat.OMR_BP, cat.OMR_BMI, cat.OMR_HEIGHT, cat.OMR_WEIGHT)
_OMR_PROB = (0.9, 0.8, 0.4, 1.0)


def omr_rows(chunk: Chunk, cohort: Cohort, adm: Admissions) -> dict:
    """Outpatient visits between two years before the first admission and the last discharge."""
    rng = chunk.rng("omr")
    n = len(cohort)
    visits = np.minimum(rng.poisson(3, n), 8)
    first = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(first, adm.patient, adm.admittime)
    last = np.zeros(n, dtype=np.int64)
    np.maximum.at(last, adm.patient, adm.dischtime)
    pat = parent_index(visits)
    lo, hi = first[pat] - 730 * DAY, last[pat]
    day = (lo + (rng.random(len(pat)) * (hi - lo)).astype(np.int64)) // DAY * DAY
    v = len(pat)
    kind = np.tile(np.arange(len(OMR_NAMES)), v)
    vp = np.repeat(np.arange(v), len(OMR_NAMES))
    keep = rng.random(len(kind)) < np.array(_OMR_PROB)[kind]
    kind, vp = kind[keep], vp[keep]
    p = pat[vp]
    weight = cohort.weight_kg[p] * np.exp(rng.normal(0, 0.03, len(p)))
    sbp = np.clip(np.round(rng.normal(128, 16, len(p))), 85, 210).astype(int)
    dbp = np.clip(np.round(rng.normal(76, 10, len(p))), 40, 120).astype(int)
    height_m = cohort.height_cm[p] / 100
    values = np.empty(len(p), dtype=object)
    for k, name in enumerate(OMR_NAMES):
        sel = np.flatnonzero(kind == k)
        if name == cat.OMR_BP:
            values[sel] = [f"{s}/{d}" for s, d in zip(sbp[sel].tolist(), dbp[sel].tolist())]
        elif name == cat.OMR_BMI:
            values[sel] = [f"{x:.1f}" for x in (weight[sel] / height_m[sel] ** 2).tolist()]
        elif name == cat.OMR_HEIGHT:
            values[sel] = [f"{x:.0f}" for x in (cohort.height_cm[p[sel]] / 2.54).tolist()]
        else:
            values[sel] = [f"{x:.1f}" for x in (weight[sel] * 2.20462).tolist()]
    order = np.lexsort((kind, day[vp], p))
    p, kind, when, values = p[order], kind[order], day[vp][order], values[order]
    return {
        "subject_id": cohort.subject_id[p], "chartdate": when,
        "seq_num": rank_in_sorted_groups(p, when, kind) + 1,
        "result_name": Categorical(kind, OMR_NAMES),
        "result_value": values,
    }
