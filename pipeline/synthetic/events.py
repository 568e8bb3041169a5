"""Hospital-wide events: laboratory results and microbiology cultures.

Labs are drawn as panels (chem7, CBC, ...) from one specimen at a time, once a day on the ward
and twice a day around an ICU stay, from shortly after admission until discharge. A value comes
from the item's distribution, shifted by the admission's conditions and by a per-admission level,
then clipped to physiological bounds and rounded like MIMIC-IV; ``flag`` is 'abnormal' exactly when
the value lies outside the item's reference range. Cultures are taken for infections (and as
screening on some other admissions); a positive culture names an organism and, when it is tested,
one row per antibiotic with its dilution and interpretation.
"""

import numpy as np

from pipeline.synthetic import catalog as cat
from pipeline.synthetic import codes
from pipeline.synthetic.context import DAY, HOUR, MINUTE, Chunk, to_minute
from pipeline.synthetic.encounters import Stays
from pipeline.synthetic.patients import Admissions
from pipeline.synthetic.ragged import parent_index, position_in_group, weighted_choice
from pipeline.synthetic.writer import Categorical, fixed_text, masked

LAB_INDEX = {item.itemid: j for j, item in enumerate(cat.LAB_ITEMS)}
_LAB_SHIFT = np.array([[cond.lab_shift.get(item.itemid, 0.0) for item in cat.LAB_ITEMS]
                       for cond in codes.CONDITIONS])
_REF_LOW = np.array([item.ref_low for item in cat.LAB_ITEMS])
_REF_HIGH = np.array([item.ref_high for item in cat.LAB_ITEMS])
_DECIMALS = np.array([item.dist.decimals for item in cat.LAB_ITEMS])
_ITEMIDS = np.array([item.itemid for item in cat.LAB_ITEMS])
_PANEL_SIZE = np.array([len(p.itemids) for p in cat.LAB_PANELS])
_PANEL_OFFSET = np.cumsum(_PANEL_SIZE) - _PANEL_SIZE
_PANEL_ITEMS = np.array([LAB_INDEX[i] for p in cat.LAB_PANELS for i in p.itemids])
_P_WARD = np.array([p.p_ward for p in cat.LAB_PANELS])
_P_ICU = np.array([p.p_icu for p in cat.LAB_PANELS])
_ALWAYS_FIRST = np.array([p.name in ("chem7", "cbc") for p in cat.LAB_PANELS])
MAX_DRAWS = 40


def _icu_window(adm: Admissions, stays: Stays) -> tuple[np.ndarray, np.ndarray]:
    icu_in = np.full(len(adm), -1, dtype=np.int64)
    icu_out = np.full(len(adm), -1, dtype=np.int64)
    icu_in[stays.admission], icu_out[stays.admission] = stays.intime, stays.outtime
    return icu_in, icu_out


def lab_rows(chunk: Chunk, adm: Admissions, stays: Stays) -> dict:
    rng = chunk.rng("labevents")
    a = len(adm)
    interval = np.where(adm.has_icu, 12 * HOUR, 24 * HOUR)
    first = to_minute(adm.admittime + rng.integers(30, 180, a) * MINUTE)
    draws = np.clip((adm.dischtime - first) // interval + 1, 1, MAX_DRAWS)
    d_adm = parent_index(draws)
    k = position_in_group(draws)
    jitter = rng.integers(-60, 60, len(d_adm)) * MINUTE
    when = first[d_adm] + k * interval[d_adm] + np.where(k > 0, jitter, 0)
    when = np.clip(when, adm.admittime[d_adm], adm.dischtime[d_adm])
    icu_in, icu_out = _icu_window(adm, stays)
    in_icu = (when >= icu_in[d_adm] - 12 * HOUR) & (when <= icu_out[d_adm]) & (icu_in[d_adm] >= 0)

    p = np.where(in_icu[:, None], _P_ICU[None, :], _P_WARD[None, :])
    include = rng.random(p.shape) < p
    include |= (k == 0)[:, None] & _ALWAYS_FIRST[None, :]
    spec_draw, spec_panel = np.nonzero(include)  # by draw, then panel order
    n_spec = len(spec_draw)
    specimen_id = chunk.ids.take("specimen_id", n_spec)
    priority = weighted_choice(rng, [w for _, w in cat.LAB_PRIORITIES], n_spec)
    provider = np.where(rng.random(n_spec) < 0.4, rng.integers(0, len(chunk.staff.providers), n_spec), -1)

    sizes = _PANEL_SIZE[spec_panel]
    sp = parent_index(sizes)
    j = position_in_group(sizes)
    item = _PANEL_ITEMS[_PANEL_OFFSET[spec_panel[sp]] + j]
    row_adm = d_adm[spec_draw[sp]]
    shift = adm.conditions.astype(np.float64) @ _LAB_SHIFT
    level = rng.normal(0, 1, (a, len(cat.LAB_ITEMS)))
    z = shift[row_adm, item] + 0.7 * level[row_adm, item] + 0.5 * rng.normal(0, 1, len(sp))
    value = np.empty(len(sp))
    for idx, lab in enumerate(cat.LAB_ITEMS):
        sel = item == idx
        value[sel] = lab.dist.from_z(z[sel])
    # Derived items follow their source measured on the same specimen.
    for idx, lab in enumerate(cat.LAB_ITEMS):
        if lab.derived_from is None:
            continue
        source, factor, noise = lab.derived_from
        sel = np.flatnonzero(item == idx)
        panel = spec_panel[sp[sel]]
        source_pos = np.array([p.itemids.index(source) if source in p.itemids else -1 for p in cat.LAB_PANELS])
        source_rows = sel - j[sel] + source_pos[panel]
        raw = value[source_rows] * factor + rng.normal(0, noise, len(sel))
        d = lab.dist
        value[sel] = np.round(np.clip(raw, d.low, d.high), d.decimals)

    abnormal = (value < _REF_LOW[item]) | (value > _REF_HIGH[item])
    charttime = when[spec_draw[sp]]
    delay = rng.integers(20, 180, len(sp)) * MINUTE
    storetime = np.maximum(charttime, np.minimum(charttime + delay, adm.dischtime[row_adm]))
    comment_item = np.array([lab.comment is not None for lab in cat.LAB_ITEMS])[item]
    comments = np.array([lab.comment for lab in cat.LAB_ITEMS], dtype=object)[item]
    comments[~comment_item | (rng.random(len(sp)) < 0.5)] = None
    units = [lab.unit for lab in cat.LAB_ITEMS]
    return {
        "labevent_id": chunk.ids.take("labevent_id", len(sp)),
        "subject_id": adm.subject_id[row_adm], "hadm_id": adm.hadm_id[row_adm],
        "specimen_id": specimen_id[sp], "itemid": _ITEMIDS[item],
        "order_provider_id": Categorical(provider[sp], chunk.staff.providers),
        "charttime": charttime, "storetime": storetime,
        "value": fixed_text(value, _DECIMALS[item]), "valuenum": value,
        "valueuom": Categorical(item, units),
        "ref_range_lower": _REF_LOW[item].astype(np.float64), "ref_range_upper": _REF_HIGH[item].astype(np.float64),
        "flag": Categorical(np.where(abnormal, 0, -1), ["abnormal"]),
        "priority": Categorical(priority[sp], [label for label, _ in cat.LAB_PRIORITIES]),
        "comments": comments,
    }


def micro_rows(chunk: Chunk, adm: Admissions) -> dict:
    rng = chunk.rng("microbiologyevents")
    a = len(adm)
    span = adm.dischtime - adm.admittime
    parts: list[tuple[np.ndarray, codes.Specimen, np.ndarray, np.ndarray]] = []
    for key in sorted(codes.CULTURES_FOR_INFECTION):
        has = adm.has(key)
        for specimen, p_positive in codes.CULTURES_FOR_INFECTION[key]:
            rows = np.flatnonzero(has)
            when = adm.admittime[rows] + (np.minimum(span[rows] // 2, DAY) * rng.random(len(rows))).astype(np.int64)
            parts.append((rows, specimen, when, rng.random(len(rows)) < p_positive))
    screened = rng.random(a) < codes.SCREENING_PROBABILITY
    for specimen, p_positive in codes.SCREENING_CULTURES:
        rows = np.flatnonzero(screened & (rng.random(a) < 0.6))
        when = adm.admittime[rows] + (span[rows] * rng.random(len(rows))).astype(np.int64)
        parts.append((rows, specimen, when, rng.random(len(rows)) < p_positive))

    spec_index = {s.spec_itemid: i for i, s in enumerate(codes.SPECIMENS)}
    c_adm = np.concatenate([rows for rows, _, _, _ in parts])
    c_spec = np.concatenate([np.full(len(rows), spec_index[s.spec_itemid]) for rows, s, _, _ in parts])
    c_time = to_minute(np.concatenate([when for _, _, when, _ in parts]))
    c_positive = np.concatenate([pos for _, _, _, pos in parts])
    order = np.lexsort((c_spec, c_time, c_adm))
    c_adm, c_spec, c_time, c_positive = c_adm[order], c_spec[order], c_time[order], c_positive[order]
    n_cult = len(c_adm)

    organism = np.full(n_cult, -1, dtype=np.int64)
    for si, specimen in enumerate(codes.SPECIMENS):
        sel = np.flatnonzero(c_positive & (c_spec == si))
        weights = [o.weights.get(specimen.spec_type_desc, 0.0) for o in codes.ORGANISMS]
        organism[sel] = weighted_choice(rng, weights, len(sel))
    panel_size = np.array([len(o.panel) for o in codes.ORGANISMS])
    n_rows = np.where(organism >= 0, np.maximum(1, panel_size[np.maximum(organism, 0)]), 1)
    cult = parent_index(n_rows)
    pos = position_in_group(n_rows)
    org = organism[cult]
    tested = (org >= 0) & (panel_size[np.maximum(org, 0)] > 0)
    ab_names = [[codes.ANTIBIOTIC_INDEX[name] for name in o.panel] for o in codes.ORGANISMS]
    ab = np.full(len(cult), -1, dtype=np.int64)
    for oi, names in enumerate(ab_names):
        sel = np.flatnonzero(tested & (org == oi))
        if names:
            ab[sel] = np.array(names)[pos[sel]]
    resistance = np.array([o.resistance for o in codes.ORGANISMS])[np.maximum(org, 0)]
    u = rng.random(len(cult))
    interp = np.where(ab < 0, -1, np.where(u < resistance, 2, np.where(u < resistance + 0.05, 1, 0)))
    dil_text = np.full(len(cult), None, dtype=object)
    dil_cmp = np.full(len(cult), None, dtype=object)
    dil_val = np.full(len(cult), np.nan)
    for ai, antibiotic in enumerate(codes.ANTIBIOTICS):
        for code, (text, comparison, val) in enumerate((antibiotic.susceptible, antibiotic.intermediate,
                                                         antibiotic.resistant)):
            sel = (ab == ai) & (interp == code)
            dil_text[sel], dil_cmp[sel], dil_val[sel] = text, comparison, val

    charttime = c_time[cult]
    r_adm = c_adm[cult]
    result_delay = (rng.integers(2, 5, n_cult) * DAY + rng.integers(0, 24 * 60, n_cult) * MINUTE)[cult]
    storetime = np.maximum(charttime, np.minimum(charttime + result_delay, adm.dischtime[r_adm]))
    spec = c_spec[cult]
    specimens = codes.SPECIMENS
    negative_comment = np.array([s.negative_comment for s in specimens], dtype=object)[spec]
    negative_comment[org >= 0] = None
    provider = np.where(rng.random(n_cult) < 0.5, rng.integers(0, len(chunk.staff.providers), n_cult), -1)
    return {
        "microevent_id": chunk.ids.take("microevent_id", len(cult)),
        "subject_id": adm.subject_id[r_adm], "hadm_id": adm.hadm_id[r_adm],
        "micro_specimen_id": chunk.ids.take("micro_specimen_id", n_cult)[cult],
        "order_provider_id": Categorical(provider[cult], chunk.staff.providers),
        "chartdate": charttime // DAY * DAY, "charttime": charttime,
        "spec_itemid": np.array([s.spec_itemid for s in specimens])[spec],
        "spec_type_desc": Categorical(spec, [s.spec_type_desc for s in specimens]),
        "test_seq": np.ones(len(cult), dtype=np.int64),
        "storedate": storetime // DAY * DAY, "storetime": storetime,
        "test_itemid": np.array([s.test_itemid for s in specimens])[spec],
        "test_name": Categorical(spec, [s.test_name for s in specimens]),
        "org_itemid": masked(np.array([o.org_itemid for o in codes.ORGANISMS])[np.maximum(org, 0)], org < 0),
        "org_name": Categorical(org, [o.org_name for o in codes.ORGANISMS]),
        "isolate_num": masked(np.ones(len(cult), dtype=np.int16), org < 0),
        "ab_itemid": masked(np.array([x.ab_itemid for x in codes.ANTIBIOTICS])[np.maximum(ab, 0)], ab < 0),
        "ab_name": Categorical(ab, [x.ab_name for x in codes.ANTIBIOTICS]),
        "dilution_text": dil_text, "dilution_comparison": dil_cmp,
        "dilution_value": masked(np.nan_to_num(dil_val), np.isnan(dil_val)),
        "interpretation": Categorical(interp, ["S", "I", "R"]),
        "comments": negative_comment,
    }
