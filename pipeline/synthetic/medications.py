"""Orders and medications: POE orders (with ADT order details), prescriptions, pharmacy and the
eMAR with its detail rows, linked the way MIMIC-IV links them.

One medication order is one ``poe`` row, one ``pharmacy`` row and one ``prescriptions`` row sharing
``poe_id`` and ``pharmacy_id``; its administrations are ``emar`` rows carrying both ids, each with
a detail row for the dose due and, when it was given, one for the product given. ``poe_id`` and
``emar_id`` are ``<subject_id>-<seq>`` with per-patient sequences in time order, as in MIMIC-IV.
Everything happens between admittime and dischtime.
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.synthetic import catalog as cat
from pipeline.synthetic.context import DAY, HOUR, MINUTE, Chunk, to_minute
from pipeline.synthetic.drugs import DRUGS, INFUSIONS
from pipeline.synthetic.encounters import Stays
from pipeline.synthetic.patients import ADMISSION_TYPE_LABELS, Admissions
from pipeline.synthetic.ragged import parent_index, position_in_group, rank_in_sorted_groups
from pipeline.synthetic.writer import Categorical, masked

STAY_FLAGS = ("ventilated", "pressor")
MAX_DOSES = 60
_D = len(DRUGS)
_INTERVAL = np.array([d.interval_hours or 0 for d in DRUGS], dtype=np.float64) * HOUR
_PRN = np.array([d.prn for d in DRUGS])
_FLUSH = np.array([d.administration_type == "IV Flush" for d in DRUGS])
_INFUSION = np.array([d.drug in INFUSIONS for d in DRUGS])
_ICU_ONLY = np.array([any(i in STAY_FLAGS for i in d.indications) for d in DRUGS])
_SLIDING = np.array([d.dose_val_rx == "0" for d in DRUGS])


def _labels(attr: str) -> list:
    return [getattr(d, attr) for d in DRUGS]


def _ids(subject_id: np.ndarray, seq: np.ndarray) -> pa.Array:
    """'<subject_id>-<seq>' strings, built in Arrow rather than one Python string at a time."""
    return pc.binary_join_element_wise(pa.array(subject_id).cast(pa.string()), pa.array(seq).cast(pa.string()), "-")


def medication_tables(chunk: Chunk, adm: Admissions, stays: Stays) -> dict[str, dict]:
    rng = chunk.rng("medications")
    a = len(adm)
    flags = {name: np.zeros(a, dtype=bool) for name in STAY_FLAGS}
    for name in STAY_FLAGS:
        flags[name][stays.admission] = stays.flags[name]
    icu_in = np.full(a, -1, dtype=np.int64)
    icu_out = np.full(a, -1, dtype=np.int64)
    icu_in[stays.admission], icu_out[stays.admission] = stays.intime, stays.outtime

    eligible = np.zeros((a, _D), dtype=bool)
    for j, drug in enumerate(DRUGS):
        if not drug.indications:
            eligible[:, j] = True
        for key in drug.indications:
            eligible[:, j] |= flags[key] if key in flags else adm.has(key)
    chosen = eligible & (rng.random((a, _D)) < np.array([d.probability for d in DRUGS])[None, :])
    o_adm, o_drug = np.nonzero(chosen)
    n = len(o_adm)

    admit, disch = adm.admittime[o_adm], adm.dischtime[o_adm]
    icu = _ICU_ONLY[o_drug]
    lo = np.where(icu, icu_in[o_adm], admit)
    hi = np.where(icu, icu_out[o_adm], disch)
    start = to_minute(lo + ((hi - lo) * rng.uniform(0, 0.3, n)).astype(np.int64)) + MINUTE
    start = np.minimum(start, hi - MINUTE)
    to_discharge = ~icu & (rng.random(n) < 0.3)
    stop = np.where(to_discharge, hi, to_minute(start + ((hi - start) * rng.uniform(0.3, 1.0, n)).astype(np.int64)))
    stop = np.maximum(stop, start + MINUTE)
    once = ~_PRN[o_drug] & (_INTERVAL[o_drug] == 0)
    stop = np.where(once & ~_INFUSION[o_drug], np.minimum(start + HOUR, hi), stop)
    entertime = np.maximum(admit, start - rng.integers(5, 60, n) * MINUTE)
    provider = rng.integers(0, len(chunk.staff.providers), n)

    order = np.lexsort((o_drug, start, o_adm))
    o_adm, o_drug, start, stop, entertime, provider, to_discharge = (
        x[order] for x in (o_adm, o_drug, start, stop, entertime, provider, to_discharge))
    pharmacy_id = chunk.ids.take("pharmacy_id", n)

    poe, poe_seq_of_order, poe_detail = _poe(chunk, rng, adm, o_adm, entertime, provider)
    poe_id = _ids(adm.subject_id[o_adm], poe_seq_of_order)

    providers = chunk.staff.providers
    drug = Categorical(o_drug, _labels("drug"))
    status = np.where(to_discharge, 0, np.where(rng.random(n) < 0.7, 1, 2))
    prescriptions = {
        "subject_id": adm.subject_id[o_adm], "hadm_id": adm.hadm_id[o_adm], "pharmacy_id": pharmacy_id,
        "poe_id": poe_id, "poe_seq": poe_seq_of_order,
        "order_provider_id": Categorical(provider, providers),
        "starttime": start, "stoptime": stop,
        "drug_type": Categorical(o_drug, _labels("drug_type")), "drug": drug,
        "formulary_drug_cd": Categorical(o_drug, _labels("formulary_drug_cd")),
        "gsn": Categorical(o_drug, _labels("gsn")), "ndc": Categorical(o_drug, _labels("ndc")),
        "prod_strength": Categorical(o_drug, _labels("prod_strength")),
        "dose_val_rx": Categorical(o_drug, _labels("dose_val_rx")),
        "dose_unit_rx": Categorical(o_drug, _labels("dose_unit_rx")),
        "form_val_disp": Categorical(o_drug, _labels("form_val_disp")),
        "form_unit_disp": Categorical(o_drug, _labels("form_unit_disp")),
        "doses_per_24_hrs": _per_day(o_drug),
        "route": Categorical(o_drug, _labels("route")),
    }
    pharmacy = {
        "subject_id": adm.subject_id[o_adm], "hadm_id": adm.hadm_id[o_adm], "pharmacy_id": pharmacy_id,
        "poe_id": poe_id, "starttime": start, "stoptime": stop, "medication": drug,
        "proc_type": Categorical(o_drug, _labels("proc_type")),
        "status": Categorical(status, ["Discontinued via patient discharge", "Discontinued", "Expired"]),
        "entertime": entertime, "verifiedtime": np.minimum(entertime + rng.integers(0, 30, n) * MINUTE, start),
        "route": Categorical(o_drug, _labels("route")),
        "frequency": Categorical(o_drug, _labels("frequency")),
        "disp_sched": Categorical(o_drug, _labels("disp_sched")),
        "sliding_scale": Categorical(np.where(_SLIDING[o_drug], 0, -1), ["Y"]),
        "doses_per_24_hrs": _per_day(o_drug),
        "duration_interval": "Ongoing", "expiration_value": 36, "expiration_unit": "Hours",
        "dispensation": "Omnicell",
    }
    emar, emar_detail = _emar(chunk, rng, adm, o_adm, o_drug, start, stop, pharmacy_id, poe_id)
    return {"poe": poe, "poe_detail": poe_detail, "prescriptions": prescriptions, "pharmacy": pharmacy,
            "emar": emar, "emar_detail": emar_detail}


def _per_day(o_drug: np.ndarray) -> np.ma.MaskedArray:
    per_day = np.array([np.nan if d.doses_per_24_hrs is None else d.doses_per_24_hrs for d in DRUGS])[o_drug]
    return masked(np.nan_to_num(per_day), np.isnan(per_day))


ADT_ADMIT, ADT_DISCHARGE = 1, 2


def _poe(chunk: Chunk, rng: np.random.Generator, adm: Admissions, o_adm: np.ndarray, entertime: np.ndarray,
         provider: np.ndarray):
    """POE rows for the medication orders plus the admit and discharge orders of each admission;
    returns (poe columns, poe_seq of each medication order, poe_detail columns)."""
    a = len(adm)
    admit_time = np.minimum(adm.admittime + rng.integers(0, 30, a) * MINUTE, adm.dischtime)
    leaves = ~adm.died
    discharge_time = np.maximum(adm.dischtime - rng.integers(60, 240, a) * MINUTE, adm.admittime)
    d_rows = np.flatnonzero(leaves)
    kind = np.concatenate([np.zeros(len(o_adm), np.int64), np.full(a, ADT_ADMIT), np.full(len(d_rows), ADT_DISCHARGE)])
    p_adm = np.concatenate([o_adm, np.arange(a), d_rows])
    when = np.concatenate([entertime, admit_time, discharge_time[d_rows]])
    who = np.concatenate([provider, adm.admit_provider, rng.integers(0, len(chunk.staff.providers), len(d_rows))])
    source = np.concatenate([np.arange(len(o_adm)), np.full(a + len(d_rows), -1)])
    # Per-patient order sequence; admissions of a patient are already in time order.
    order = np.lexsort((source, kind == ADT_DISCHARGE, when, adm.patient[p_adm]))
    kind, p_adm, when, who, source = kind[order], p_adm[order], when[order], who[order], source[order]
    seq = rank_in_sorted_groups(adm.patient[p_adm]) + 1
    seq_of_order = np.empty(len(o_adm), dtype=np.int64)
    seq_of_order[source[source >= 0]] = seq[source >= 0]
    subject = adm.subject_id[p_adm]
    poe_id = _ids(subject, seq)
    poe = {
        "poe_id": poe_id, "poe_seq": seq, "subject_id": subject, "hadm_id": adm.hadm_id[p_adm],
        "ordertime": when,
        "order_type": Categorical(np.minimum(kind, 1), ["Medications", "ADT orders"]),
        "order_subtype": Categorical(kind - 1, ["Admit", "Discharge"]),
        "transaction_type": "New",
        "order_provider_id": Categorical(who, chunk.staff.providers),
        "order_status": "Inactive",
    }

    # poe_detail: what the ADT orders say.
    observation_types = [i for i, t in enumerate(ADMISSION_TYPE_LABELS) if t in cat.OBSERVATION_TYPES]
    admit_rows = np.flatnonzero(kind == ADT_ADMIT)
    discharge_rows = np.flatnonzero(kind == ADT_DISCHARGE)
    dnr = adm.has("dnr")
    fields = [
        (admit_rows, "Admit category", np.where(np.isin(adm.admission_type[p_adm[admit_rows]], observation_types),
                                                "Place in observation", "Admit to inpatient")),
        (admit_rows, "Admit to", np.array([s.admit_to for s in cat.SERVICES], dtype=object)[
            adm.service[p_adm[admit_rows]]]),
        (admit_rows, "Code status", np.where(dnr[p_adm[admit_rows]], "Do not resuscitate (DNR/DNI)",
                                             "Resuscitate (Full code)")),
        (discharge_rows, "Discharge When", np.full(len(discharge_rows), "Discharge Now", dtype=object)),
    ]
    rows = np.concatenate([r for r, _, _ in fields])
    names = np.concatenate([np.full(len(r), name, dtype=object) for r, name, _ in fields])
    values = np.concatenate([np.asarray(v, dtype=object) for _, _, v in fields])
    order = np.lexsort((names.astype(str), rows))
    rows, names, values = rows[order], names[order], values[order]
    poe_detail = {
        "poe_id": poe_id.take(pa.array(rows)), "poe_seq": seq[rows], "subject_id": subject[rows],
        "field_name": names, "field_value": values,
    }
    return poe, seq_of_order, poe_detail


def _emar(chunk: Chunk, rng: np.random.Generator, adm: Admissions, o_adm, o_drug, start, stop, pharmacy_id,
          poe_id: pa.Array):
    n = len(o_adm)
    interval = _INTERVAL[o_drug]
    scheduled = interval > 0
    days = (stop - start) / DAY
    count = np.where(scheduled, np.ceil((stop - start) / np.maximum(interval, 1)),
                     np.where(_PRN[o_drug], rng.poisson(1.5 * np.maximum(days, 0.1)), 1))
    count = np.clip(count, 0, MAX_DOSES).astype(np.int64)
    order_of = parent_index(count)
    k = position_in_group(count)
    span = stop[order_of] - start[order_of]
    prn_time = start[order_of] + (rng.random(len(k)) * span).astype(np.int64)
    charttime = np.where(scheduled[order_of], start[order_of] + k * interval[order_of].astype(np.int64),
                         np.where(_PRN[o_drug][order_of], to_minute(prn_time), start[order_of]))
    charttime = np.minimum(charttime, stop[order_of])
    drug = o_drug[order_of]
    u = rng.random(len(k))
    event = np.where(_INFUSION[drug], 0, np.where(_FLUSH[drug], np.where(u < 0.9, 1, 2), np.where(u < 0.92, 3, 4)))
    events = ["Started", "Flushed", "Not Flushed", "Administered", "Not Given"]
    given = np.isin(event, [0, 1, 3])

    e_adm = o_adm[order_of]
    patient = adm.patient[e_adm]
    order = np.lexsort((order_of, charttime, patient))
    order_of, k, charttime, drug, event, given, e_adm, patient = (
        x[order] for x in (order_of, k, charttime, drug, event, given, e_adm, patient))
    seq = rank_in_sorted_groups(patient) + 1
    subject = adm.subject_id[e_adm]
    emar_id = _ids(subject, seq)
    m = len(seq)
    storetime = np.minimum(charttime + rng.integers(0, 5, m) * MINUTE, adm.dischtime[e_adm])
    emar = {
        "subject_id": subject, "hadm_id": adm.hadm_id[e_adm], "emar_id": emar_id, "emar_seq": seq,
        "poe_id": poe_id.take(pa.array(order_of)), "pharmacy_id": pharmacy_id[order_of],
        "charttime": charttime, "medication": Categorical(drug, _labels("drug")),
        "event_txt": Categorical(event, events),
        "scheduletime": masked(charttime, _PRN[drug]),
        "storetime": np.maximum(storetime, charttime),
    }

    # Detail: the dose due (every administration), then the product given (when it was given).
    rows = np.concatenate([np.arange(m), np.flatnonzero(given)])
    child = np.concatenate([np.zeros(m, dtype=bool), np.ones(int(given.sum()), dtype=bool)])
    order = np.lexsort((child, rows))
    rows, child = rows[order], child[order]
    d = drug[rows]
    sliding_units = rng.integers(2, 11, len(rows)).astype(str).astype(object)
    dose = np.where(_SLIDING[d], sliding_units, np.array(_labels("dose_val_rx"), dtype=object)[d])
    emar_detail = {
        "subject_id": subject[rows], "emar_id": emar_id.take(pa.array(rows)), "emar_seq": seq[rows],
        "parent_field_ordinal": Categorical(np.where(child, 0, -1), ["1.1"]),
        "administration_type": Categorical(np.where(child, -1, d), _labels("administration_type")),
        "pharmacy_id": masked(pharmacy_id[order_of[rows]], ~child),
        "barcode_type": Categorical(np.where(child, 0, -1), ["if"]),
        "dose_due": masked(np.where(_SLIDING[d], None, dose), child | _SLIDING[d]),
        "dose_due_unit": Categorical(np.where(child, -1, d), _labels("dose_unit_rx")),
        "dose_given": masked(dose, ~child),
        "dose_given_unit": Categorical(np.where(child, d, -1), _labels("dose_unit_rx")),
        "product_amount_given": Categorical(np.where(child, d, -1), _labels("form_val_disp")),
        "product_unit": Categorical(np.where(child, d, -1), _labels("form_unit_disp")),
        "product_code": Categorical(np.where(child, d, -1), _labels("formulary_drug_cd")),
        "product_description": Categorical(np.where(child, d, -1), _labels("drug")),
        "route": Categorical(np.where(child, -1, d), [drug_.emar_route for drug_ in DRUGS]),
    }
    return emar, emar_detail

