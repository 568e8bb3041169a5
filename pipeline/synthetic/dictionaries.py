"""The dictionary tables (d_labitems, d_items, d_icd_diagnoses, d_icd_procedures, d_hcpcs, provider,
caregiver) and the staff who appear in the record.

Dictionaries are written once per database from the catalog. They hold every code the generator
can use and some it never uses, as MIMIC-IV's do. ``catalog_problems`` lists any code or item
the generator could emit without a dictionary row; the build refuses to start while it finds one.
"""

import numpy as np
from faker import Faker

from pipeline.synthetic import catalog as cat
from pipeline.synthetic import codes
from pipeline.synthetic.context import Staff
from pipeline.synthetic.encounters import DIAGNOSIS_CODES

PROVIDERS = 500
CAREGIVERS = 400
_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def draw_staff(seed: int) -> Staff:
    """Provider ids shaped like MIMIC-IV's ('P' and five letters or digits) and numeric caregiver
    ids, from a Faker seeded with the build's seed."""
    fake = Faker()
    fake.seed_instance(seed)
    providers: dict[str, None] = {}
    while len(providers) < PROVIDERS:
        providers[fake.lexify("P?????", letters=_ALNUM)] = None
    caregivers: dict[int, None] = {}
    while len(caregivers) < CAREGIVERS:
        caregivers[fake.random_int(100, 99_999)] = None
    return Staff(tuple(sorted(providers)), tuple(sorted(caregivers)))


def dictionary_rows(staff: Staff) -> dict[str, dict]:
    labs = sorted([(i.itemid, i.label, i.fluid, i.category) for i in cat.LAB_ITEMS] + list(cat.UNUSED_LAB_ITEMS))
    items = sorted(cat.D_ITEMS, key=lambda i: i.itemid)
    diagnoses = sorted(codes.ICD_DIAGNOSIS_TITLES.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    procedures = sorted(codes.ICD_PROCEDURE_TITLES.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    hcpcs = sorted(codes.HCPCS, key=lambda h: h.code)

    def nullable_float(values):
        arr = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        return np.ma.MaskedArray(np.nan_to_num(arr), mask=np.isnan(arr))

    return {
        "d_labitems": {"itemid": np.array([r[0] for r in labs]), "label": [r[1] for r in labs],
                       "fluid": [r[2] for r in labs], "category": [r[3] for r in labs]},
        "d_items": {
            "itemid": np.array([i.itemid for i in items]), "label": [i.label for i in items],
            "abbreviation": [i.abbreviation for i in items], "linksto": [i.linksto for i in items],
            "category": [i.category for i in items], "unitname": [i.unitname for i in items],
            "param_type": [i.param_type for i in items],
            "lownormalvalue": nullable_float([i.lownormalvalue for i in items]),
            "highnormalvalue": nullable_float([i.highnormalvalue for i in items]),
        },
        "d_icd_diagnoses": {"icd_code": [k[0] for k, _ in diagnoses],
                            "icd_version": np.array([k[1] for k, _ in diagnoses], dtype=np.int16),
                            "long_title": [t for _, t in diagnoses]},
        "d_icd_procedures": {"icd_code": [k[0] for k, _ in procedures],
                             "icd_version": np.array([k[1] for k, _ in procedures], dtype=np.int16),
                             "long_title": [t for _, t in procedures]},
        "d_hcpcs": {"code": [h.code for h in hcpcs],
                    "category": np.ma.MaskedArray([h.category or 0 for h in hcpcs],
                                                  mask=[h.category is None for h in hcpcs]).astype(np.int16),
                    "long_description": [h.long_description for h in hcpcs],
                    "short_description": [h.short_description for h in hcpcs]},
        "provider": {"provider_id": list(staff.providers)},
        "caregiver": {"caregiver_id": np.array(staff.caregivers)},
    }


def used_itemids() -> dict[str, set[int]]:
    """Every itemid the generator can write, by the dictionary that must describe it."""
    d_items = set(cat.VITALS) | set(cat.VITAL_UNITS) | {cat.HEART_RHYTHM} | set(cat.OUTPUTS)
    d_items |= {i.itemid for i in cat.INPUT_ITEMS} | {cat.WATER_INGREDIENT}
    d_items |= {p.itemid for p in cat.PROCEDURE_ITEMS}
    d_items |= {p.insertion_itemid for p in cat.PROCEDURE_ITEMS if p.insertion_itemid is not None}
    labs = {i.itemid for i in cat.LAB_ITEMS} | {i for p in cat.LAB_PANELS for i in p.itemids}
    return {"d_items": d_items, "d_labitems": labs}


def catalog_problems() -> list[str]:
    """Codes or items the generator may emit that its dictionaries do not describe."""
    problems = []
    d_items = {i.itemid for i in cat.D_ITEMS}
    d_labs = {i.itemid for i in cat.LAB_ITEMS} | {r[0] for r in cat.UNUSED_LAB_ITEMS}
    used = used_itemids()
    problems += [f"d_items lacks itemid {i}" for i in sorted(used["d_items"] - d_items)]
    problems += [f"d_labitems lacks itemid {i}" for i in sorted(used["d_labitems"] - d_labs)]
    for cond in codes.CONDITIONS:
        for code, version in ((cond.icd9, 9), (cond.icd10, 10)):
            if (code, version) not in codes.ICD_DIAGNOSIS_TITLES:
                problems.append(f"d_icd_diagnoses lacks ICD-{version} {code} (condition {cond.key})")
    for proc in codes.ICD_PROCEDURES:
        for code, version in ((proc.icd9, 9), (proc.icd10, 10)):
            if code is not None and (code, version) not in codes.ICD_PROCEDURE_TITLES:
                problems.append(f"d_icd_procedures lacks ICD-{version} {code} (procedure {proc.key})")
    hcpcs = {h.code for h in codes.HCPCS}
    used_hcpcs = {codes.HCPCS_OBSERVATION, codes.HCPCS_CRITICAL_CARE, codes.HCPCS_INPATIENT,
                  *codes.HCPCS_FOR_CONDITION.values()}
    problems += [f"d_hcpcs lacks {code}" for code in sorted(used_hcpcs - hcpcs)]
    for cond in codes.CONDITIONS:
        for key in cond.procedures:
            if key not in codes.ICD_PROCEDURE_INDEX:
                problems.append(f"condition {cond.key} names unknown procedure {key!r}")
    if len(set(DIAGNOSIS_CODES)) != len(DIAGNOSIS_CODES):
        problems.append("two conditions share an ICD code")
    return problems
