"""The ICU flowsheet: charted vitals and weights, urine output, infusions and their ingredients,
procedures (lines, ventilation, imaging) and the dates lines were inserted.

Everything happens between the stay's intime and outtime. A stay charts its vitals on one cadence
(every 1 to 4 hours); values come from the catalog distributions, shifted by the admission's
conditions (sepsis raises heart rate and temperature, ...) and by a per-stay level, so a patient
looks like the same patient all stay long.
"""

import numpy as np

from pipeline.synthetic import catalog as cat
from pipeline.synthetic import codes
from pipeline.synthetic.context import DAY, HOUR, MINUTE, Chunk, to_minute
from pipeline.synthetic.encounters import Stays
from pipeline.synthetic.patients import Admissions
from pipeline.synthetic.ragged import parent_index, position_in_group
from pipeline.synthetic.writer import Categorical, fixed_text, masked

SHIFTED_ITEMS: tuple[int, ...] = (*cat.VITALS, *cat.OUTPUTS)
_SHIFT = np.array([[cond.vital_shift.get(item, 0.0) for item in SHIFTED_ITEMS] for cond in codes.CONDITIONS])
_COL = {item: j for j, item in enumerate(SHIFTED_ITEMS)}
MAX_CHARTINGS = 720  # a month of hourly charting


class _Rows:
    """Collects one table's rows from several item generators, then sorts them by stay and time."""

    def __init__(self) -> None:
        self.parts: list[dict] = []

    def add(self, **columns) -> None:
        self.parts.append(columns)

    def build(self, sort_keys: tuple[str, ...]) -> dict:
        if not self.parts:
            return {}
        names = self.parts[0].keys()
        cols = {}
        for name in names:
            pieces = [p[name] for p in self.parts]
            if any(isinstance(x, np.ma.MaskedArray) for x in pieces):
                cols[name] = np.ma.concatenate([np.ma.asarray(x) for x in pieces])
            else:
                cols[name] = np.concatenate(pieces)
        order = np.lexsort(tuple(np.asarray(cols[k]) for k in reversed(sort_keys)))
        return {name: v[order] for name, v in cols.items()}


def _store(charttime: np.ndarray, rng: np.random.Generator, limit: np.ndarray) -> np.ndarray:
    """storetime: minutes after charting, never after ``limit`` (the stay's outtime)."""
    delay = rng.integers(0, 20, len(charttime)) * MINUTE
    return np.maximum(charttime, np.minimum(charttime + delay, limit))


def _schedule(first: np.ndarray, stop: np.ndarray, step: np.ndarray, cap: int):
    """Times first, first + step, ... before ``stop`` for each stay: (stay index, time, position)."""
    count = np.where(first < stop, (stop - 1 - first) // step + 1, 0)
    count = np.minimum(count, cap)
    s = parent_index(count)
    k = position_in_group(count)
    return s, first[s] + k * step[s], k


def chart_rows(chunk: Chunk, adm: Admissions, stays: Stays) -> dict:
    rng = chunk.rng("chartevents")
    n = len(stays)
    conds = adm.conditions[stays.admission]
    shift = conds.astype(np.float64) @ _SHIFT
    level = rng.normal(0, 1, (n, len(SHIFTED_ITEMS)))
    sys_col, dia_col = _COL[cat.NBP_SYS], _COL[cat.NBP_DIA]
    level[:, dia_col] = 0.7 * level[:, sys_col] + np.sqrt(1 - 0.7 ** 2) * level[:, dia_col]
    hours = np.array([h for h, _ in cat.VITAL_INTERVAL_HOURS])
    step = hours[rng.choice(len(hours), n, p=[w for _, w in cat.VITAL_INTERVAL_HOURS])] * HOUR
    first = to_minute(stays.intime + rng.integers(5, 45, n) * MINUTE)
    s, t, k = _schedule(first, stays.outtime, step, MAX_CHARTINGS)
    m = len(s)
    rows = _Rows()

    def add(item: int, which: np.ndarray, values: np.ndarray | None, text: np.ndarray | None = None) -> None:
        ss, tt = s[which], t[which]
        numeric = text is None
        rows.add(stay=ss, charttime=tt, itemid=np.full(len(ss), item),
                 valuenum=masked(values if numeric else np.zeros(len(ss)), np.full(len(ss), not numeric)),
                 value=fixed_text(values, _decimals(item)) if numeric else text,
                 uom=np.full(len(ss), cat.VITAL_UNITS.get(item), dtype=object))

    def draw(item: int, sel: np.ndarray, noise: np.ndarray | None = None) -> np.ndarray:
        j = _COL[item]
        if noise is None:
            noise = rng.normal(0, 1, int(sel.sum()))
        z = shift[s[sel], j] + 0.8 * level[s[sel], j] + 0.6 * noise
        return cat.VITALS[item][1].from_z(z)

    everywhere = np.ones(m, dtype=bool)
    heart_rate = draw(cat.HEART_RATE, everywhere)
    add(cat.HEART_RATE, everywhere, heart_rate)
    for item in (cat.RESP_RATE, cat.SPO2):
        add(item, everywhere, draw(item, everywhere))
    # Systolic and diastolic pressure move together within a measurement.
    sys_noise = rng.normal(0, 1, m)
    systolic = draw(cat.NBP_SYS, everywhere, sys_noise)
    dia_noise = 0.7 * sys_noise + np.sqrt(1 - 0.7 ** 2) * rng.normal(0, 1, m)
    diastolic = np.minimum(draw(cat.NBP_DIA, everywhere, dia_noise), systolic - 15)
    add(cat.NBP_SYS, everywhere, systolic)
    add(cat.NBP_DIA, everywhere, diastolic)
    add(cat.NBP_MEAN, everywhere, np.round((systolic + 2 * diastolic) / 3))
    present, start, end = stays.devices[225752]  # arterial line: invasive mean pressure while it is in
    arterial = present[s] & (t >= start[s]) & (t <= end[s])
    add(cat.ABP_MEAN, arterial, draw(cat.ABP_MEAN, arterial))

    # Temperature and rhythm every ~4 hours; a stay charts Fahrenheit or (less often) Celsius.
    every4 = k % np.maximum(1, np.round(4 * HOUR / step[s]).astype(np.int64)) == 0
    fahrenheit = draw(cat.TEMP_F, every4)
    celsius_stay = rng.random(n) < 0.15
    in_c = celsius_stay[s[every4]]
    add(cat.TEMP_F, _subset(every4, ~in_c), fahrenheit[~in_c])
    add(cat.TEMP_C, _subset(every4, in_c), np.round((fahrenheit[in_c] - 32) * 5 / 9, 1))
    afib = conds[:, codes.CONDITION_INDEX["afib"]][s[every4]] & (rng.random(int(every4.sum())) < 0.85)
    hr4 = heart_rate[every4]
    rhythm = np.where(afib, 3, np.where(hr4 > 100, 1, np.where(hr4 < 60, 2, 0)))
    add(cat.HEART_RHYTHM, every4, None, np.array(cat.RHYTHMS, dtype=object)[rhythm])

    # Weight on admission to the ICU, then once a day.
    at_start = k == 0
    add(cat.ADMISSION_WEIGHT, at_start, stays.weight_kg[s[at_start]])
    daily = (k > 0) & ((t - first[s]) // DAY > (t - step[s] - first[s]) // DAY)
    drift = np.exp(rng.normal(0, 0.015, int(daily.sum())))
    add(cat.DAILY_WEIGHT, daily, np.round(stays.weight_kg[s[daily]] * drift, 1))

    out = rows.build(("stay", "charttime", "itemid"))
    st = out["stay"]
    caregivers = np.array(chunk.staff.caregivers)
    return {
        "subject_id": stays.subject_id[st], "hadm_id": stays.hadm_id[st], "stay_id": stays.stay_id[st],
        "caregiver_id": caregivers[rng.integers(0, len(caregivers), len(st))],
        "charttime": out["charttime"],
        "storetime": _store(out["charttime"], rng, stays.outtime[st]),
        "itemid": out["itemid"],
        "value": out["value"],
        "valuenum": out["valuenum"],
        "valueuom": out["uom"],
        "warning": np.zeros(len(st), dtype=np.int16),
    }


def _subset(mask: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """The positions of ``mask`` that are true and whose position among true values ``inner`` selects."""
    out = np.zeros(len(mask), dtype=bool)
    out[np.flatnonzero(mask)[inner]] = True
    return out


def _decimals(item: int) -> int:
    if item in cat.VITALS:
        return cat.VITALS[item][1].decimals
    return 1 if item in (cat.TEMP_C, cat.ADMISSION_WEIGHT, cat.DAILY_WEIGHT) else 0


def output_rows(chunk: Chunk, adm: Admissions, stays: Stays) -> dict:
    """Foley output every ~2 hours for catheterised stays, voids every ~5 hours otherwise."""
    rng = chunk.rng("outputevents")
    n = len(stays)
    conds = adm.conditions[stays.admission]
    shift = conds.astype(np.float64) @ _SHIFT
    rows = _Rows()
    for item, chosen in ((cat.FOLEY, stays.flags["foley"]), (cat.VOID, ~stays.flags["foley"])):
        uom, dist, every = cat.OUTPUTS[item]
        step = np.where(chosen, (every * HOUR * rng.uniform(0.8, 1.2, n)).astype(np.int64) // MINUTE * MINUTE, DAY)
        first = to_minute(stays.intime + rng.integers(30, 120, n) * MINUTE)
        first = np.where(chosen, first, stays.outtime)  # no rows for stays without this output
        s, t, _ = _schedule(first, stays.outtime, step, MAX_CHARTINGS)
        level = rng.normal(0, 1, n)
        z = shift[s, _COL[item]] + 0.6 * level[s] + 0.7 * rng.normal(0, 1, len(s))
        rows.add(stay=s, charttime=t, itemid=np.full(len(s), item), value=dist.from_z(z),
                 uom=np.full(len(s), uom, dtype=object))
    out = rows.build(("stay", "charttime", "itemid"))
    st = out["stay"]
    caregivers = np.array(chunk.staff.caregivers)
    return {
        "subject_id": stays.subject_id[st], "hadm_id": stays.hadm_id[st], "stay_id": stays.stay_id[st],
        "caregiver_id": caregivers[rng.integers(0, len(caregivers), len(st))],
        "charttime": out["charttime"], "storetime": _store(out["charttime"], rng, stays.outtime[st]),
        "itemid": out["itemid"], "value": out["value"], "valueuom": out["uom"],
    }


def _eligible(item_indication: str, adm: Admissions, stays: Stays) -> np.ndarray:
    if item_indication in stays.flags:
        return stays.flags[item_indication]
    return adm.conditions[stays.admission, codes.CONDITION_INDEX[item_indication]]


def input_rows(chunk: Chunk, adm: Admissions, stays: Stays) -> tuple[dict, dict]:
    """inputevents and the water each fluid carries (ingredientevents)."""
    rng = chunk.rng("inputevents")
    n = len(stays)
    length = stays.outtime - stays.intime
    rows = _Rows()
    for item in cat.INPUT_ITEMS:
        chosen = _eligible(item.indication, adm, stays) & (rng.random(n) < item.probability)
        level = rng.normal(0, 0.8, n)
        if item.mode == "continuous":
            start = to_minute(stays.intime + (length * rng.uniform(0, 0.3, n)).astype(np.int64)) + MINUTE
            end = start + ((stays.outtime - start) * rng.uniform(0.3, 1.0, n)).astype(np.int64)
            mean_segment = np.mean(item.segment_hours) * HOUR
            segments = np.where(chosen & (end > start + 2 * MINUTE),
                                np.clip(np.ceil((end - start) / mean_segment), 1, 60), 0).astype(np.int64)
            s = parent_index(segments)
            k = position_in_group(segments)
            seg_len = (end[s] - start[s]) // segments[s] // MINUTE * MINUTE
            seg_start = start[s] + k * seg_len
            seg_end = np.where(k == segments[s] - 1, to_minute(end[s]), seg_start + seg_len)
            rate = item.dose.from_z(level[s] + 0.4 * rng.normal(0, 1, len(s)))
            minutes = (seg_end - seg_start) / MINUTE
            if item.rateuom in cat.RATE_PER_MINUTE_PER_KG:
                amount = rate * stays.weight_kg[s] * minutes / 1000
            else:
                amount = rate * minutes / 60
            last = k == segments[s] - 1
            status = np.where(last, 0, 1)
            run_first = np.flatnonzero(k == 0)
        else:
            first = to_minute(stays.intime + rng.integers(10, 120, n) * MINUTE)
            first = np.where(chosen, first, stays.outtime)
            step = np.full(n, int(item.interval_hours * HOUR))
            s, seg_start, k = _schedule(first, stays.outtime - MINUTE, step, 60)
            seg_end = seg_start + MINUTE
            rate = np.full(len(s), np.nan)
            amount = item.dose.from_z(level[s] + 0.3 * rng.normal(0, 1, len(s)))
            status = np.zeros(len(s), dtype=np.int64)
            run_first = np.arange(len(s))
        orderid = chunk.ids.take("orderid", len(s))
        run = np.cumsum(np.isin(np.arange(len(s)), run_first)) - 1
        linkorderid = orderid[run_first][run] if len(s) else orderid
        rows.add(stay=s, starttime=seg_start, endtime=seg_end, itemid=np.full(len(s), item.itemid),
                 amount=np.round(amount, 4), rate=rate, orderid=orderid, linkorderid=linkorderid,
                 status=status, item=np.full(len(s), cat.INPUT_ITEMS.index(item)))
    out = rows.build(("stay", "starttime", "itemid", "orderid"))
    st, item_idx = out["stay"], out["item"]
    items = cat.INPUT_ITEMS
    caregivers = np.array(chunk.staff.caregivers)
    no_rate = np.isnan(out["rate"])
    rate = masked(np.where(no_rate, 0.0, np.round(out["rate"], 4)), no_rate)
    total = np.array([i.totalamount if i.totalamount is not None else np.nan for i in items])[item_idx]
    statuses = ["FinishedRunning", "ChangeDose/Rate"]
    caregiver = caregivers[rng.integers(0, len(caregivers), len(st))]
    storetime = _store(out["starttime"], rng, stays.outtime[st])
    inputs = {
        "subject_id": stays.subject_id[st], "hadm_id": stays.hadm_id[st], "stay_id": stays.stay_id[st],
        "caregiver_id": caregiver, "starttime": out["starttime"], "endtime": out["endtime"],
        "storetime": storetime, "itemid": out["itemid"], "amount": out["amount"],
        "amountuom": Categorical(item_idx, [i.amountuom for i in items]),
        "rate": rate, "rateuom": Categorical(np.where(no_rate, -1, item_idx), [i.rateuom for i in items]),
        "orderid": out["orderid"], "linkorderid": out["linkorderid"],
        "ordercategoryname": Categorical(item_idx, [i.ordercategoryname for i in items]),
        "secondaryordercategoryname": Categorical(item_idx, [i.secondaryordercategoryname for i in items]),
        "ordercomponenttypedescription": Categorical(item_idx, [i.ordercomponenttypedescription for i in items]),
        "ordercategorydescription": Categorical(item_idx, [i.ordercategorydescription for i in items]),
        "patientweight": stays.weight_kg[st],
        "totalamount": masked(np.nan_to_num(total), np.isnan(total)),
        "totalamountuom": Categorical(np.where(np.isnan(total), -1, 0), ["ml"]),
        "isopenbag": np.zeros(len(st), dtype=np.int16),
        "continueinnextdept": np.zeros(len(st), dtype=np.int16),
        "statusdescription": Categorical(out["status"], statuses),
        "originalamount": out["amount"], "originalrate": rate,
    }
    fluid = np.array([i.amountuom == "ml" for i in items])[item_idx]
    f = np.flatnonzero(fluid)
    ingredients = {
        "subject_id": inputs["subject_id"][f], "hadm_id": inputs["hadm_id"][f], "stay_id": inputs["stay_id"][f],
        "caregiver_id": caregiver[f], "starttime": out["starttime"][f], "endtime": out["endtime"][f],
        "storetime": storetime[f], "itemid": np.full(len(f), cat.WATER_INGREDIENT),
        "amount": out["amount"][f], "amountuom": "ml", "rate": rate[f],
        "rateuom": Categorical(np.where(no_rate[f], -1, 0), ["mL/hour"]),
        "orderid": out["orderid"][f], "linkorderid": out["linkorderid"][f],
        "statusdescription": Categorical(out["status"][f], statuses),
        "originalamount": np.zeros(len(f)), "originalrate": rate[f],
    }
    return inputs, ingredients


def procedure_rows(chunk: Chunk, stays: Stays) -> tuple[dict, dict]:
    """procedureevents (devices of the stay and one-off tasks) and the insertion dates of lines
    (datetimeevents)."""
    rng = chunk.rng("procedureevents")
    n = len(stays)
    rows = _Rows()
    dates = _Rows()
    items = cat.PROCEDURE_ITEMS
    for j, item in enumerate(items):
        if item.kind == "continuous":
            present, start, end = stays.devices[item.itemid]
            s = np.flatnonzero(present)
            st, en = start[s], end[s]
            value = (en - st) / MINUTE
            if item.insertion_itemid is not None:
                charted = np.minimum(st + rng.integers(0, 120, len(s)) * MINUTE, en)
                dates.add(stay=s, charttime=charted, itemid=np.full(len(s), item.insertion_itemid),
                          value=st // DAY * DAY)
        else:
            count = np.where(rng.random(n) < item.probability, rng.integers(1, item.max_count + 1, n), 0)
            s = parent_index(count)
            length = stays.outtime[s] - stays.intime[s] - MINUTE
            st = to_minute(stays.intime[s] + (length * rng.random(len(s))).astype(np.int64))
            st = np.maximum(st, stays.intime[s])
            en = st + MINUTE
            value = np.ones(len(s))
        if item.locations:
            location = np.array(item.locations, dtype=object)[rng.integers(0, len(item.locations), len(s))]
        else:
            location = np.full(len(s), None, dtype=object)
        rows.add(stay=s, starttime=st, endtime=en, itemid=np.full(len(s), item.itemid), value=value,
                 item=np.full(len(s), j), location=location)
    out = rows.build(("stay", "starttime", "itemid"))
    st, item_idx = out["stay"], out["item"]
    continuous = np.array([i.kind == "continuous" for i in items])[item_idx]
    caregivers = np.array(chunk.staff.caregivers)
    orderid = chunk.ids.take("orderid", len(st))
    procedures = {
        "subject_id": stays.subject_id[st], "hadm_id": stays.hadm_id[st], "stay_id": stays.stay_id[st],
        "caregiver_id": caregivers[rng.integers(0, len(caregivers), len(st))],
        "starttime": out["starttime"], "endtime": out["endtime"],
        "storetime": np.maximum(out["endtime"], np.minimum(out["endtime"] + 10 * MINUTE, stays.outtime[st])),
        "itemid": out["itemid"], "value": out["value"],
        "valueuom": Categorical(np.where(continuous, 0, -1), ["min"]),
        "location": out["location"],
        "locationcategory": Categorical(item_idx, [i.locationcategory for i in items]),
        "orderid": orderid, "linkorderid": orderid,
        "ordercategoryname": Categorical(item_idx, [i.ordercategoryname for i in items]),
        "ordercategorydescription": Categorical(item_idx, [i.ordercategorydescription for i in items]),
        "patientweight": stays.weight_kg[st],
        "isopenbag": continuous.astype(np.int16),
        "continueinnextdept": np.zeros(len(st), dtype=np.int16),
        "statusdescription": "FinishedRunning",
        "originalamount": out["value"], "originalrate": np.ones(len(st)),
    }
    d = dates.build(("stay", "charttime", "itemid"))
    ds = d.get("stay", np.zeros(0, dtype=np.int64))
    datetimes = {
        "subject_id": stays.subject_id[ds], "hadm_id": stays.hadm_id[ds], "stay_id": stays.stay_id[ds],
        "caregiver_id": caregivers[rng.integers(0, len(caregivers), len(ds))],
        "charttime": d.get("charttime", ds), "storetime": d.get("charttime", ds),
        "itemid": d.get("itemid", ds), "value": d.get("value", ds),
        "valueuom": "Date", "warning": np.zeros(len(ds), dtype=np.int16),
    }
    return procedures, datetimes
