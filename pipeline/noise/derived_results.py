"""Results a reader recomputes from other results of the same specimen, day or ICU stay.

A complete blood count reports its indices together, and each follows from two of the others: MCV is
Hct / RBC x 10, MCH is Hgb / RBC x 10, MCHC is Hgb / Hct x 100, so RBC, Hgb and Hct follow from the rest
as well. Globulin is total protein minus albumin, so albumin and total protein follow from the other
two. An omr BMI is 703 x weight / height² from the same day's weight (lb) and height (in), and each of
the three follows from the others. In the demo, 2,747 of 2,760 MCVs equal Hct / RBC x 10 within 1 fL,
all 163 globulins equal total protein minus albumin, and 374 of the 377 BMIs charted on a day with a
weight and a height match them within 0.5. So do the identities a third review recomputed: indirect
bilirubin is total minus direct (45 of 47 specimens), eAG is 28.7 x HbA1c - 46.7 (114 of 117), the
cholesterol ratio is total / HDL (58 of 58), a calculated LDL is total - HDL - triglycerides / 5 (52 of
52), a blood gas's calculated haematocrit is 3 x its haemoglobin (143 of 143) and its calculated total
CO2 is 0.03 x pCO2 x (10^(pH - 6.1) + 1) (843 of 889 within 1), the anion gap is Na (+ K) - Cl - HCO3
(every specimen, one way or the other), a white cell type's absolute count is the WBC times its share
(90-99% within 0.1, neutrophils aside), and an ICU stay's admission weight is charted in kg and in lb
together.

A duplicate of such a result that disagrees with what its siblings give is settled by them. A
reviewer computed Hgb / MCH = 2.67 beside a duplicated RBC of 2.67 and 3.47. A result hidden or left
unresulted beside its siblings is still in the record. So record noise never duplicates, hides or
empties a result its siblings in the record give (``recomputable``), as it leaves alone a row the
source records a second time (``row_roles.Copy``); and value noise makes no result implausible that
its siblings give exactly, to the digits charted (``Derivation.exact``; a test holds each declared
formula to the demo): the answer with it set aside (another draw), or none, is not what a reader who
recomputes it answers. Formulas that only come near the value (an MCH from a rounded Hgb and RBC, a
sodium from an anion gap that may hold potassium, a blood pressure's mean near (S + 2D) / 3) settle a
duplicate and make a hidden result a record no analyser or monitor writes, but give no answer: an
implausible value there is still implausible.
"""

from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property

from pipeline.noise.case import SourceLookup
from pipeline.schema import ROW_ID, TABLES_BY_NAME

# MIMIC-IV's blood chemistry and haematology items (d_labitems).
HEMATOCRIT, HEMOGLOBIN, MCH, MCHC, MCV, RBC = 51221, 51222, 51248, 51249, 51250, 51279
ALBUMIN, GLOBULIN, PROTEIN_TOTAL = 50862, 50930, 50976
BILIRUBIN_DIRECT, BILIRUBIN_INDIRECT, BILIRUBIN_TOTAL = 50883, 50884, 50885
HBA1C, EAG = 50852, 51613  # eAG = 28.7 x HbA1c - 46.7
CHOLESTEROL_RATIO, CHOLESTEROL_HDL, CHOLESTEROL_TOTAL = 50903, 50904, 50907
CHOLESTEROL_LDL_CALCULATED, TRIGLYCERIDES = 50905, 51000  # Friedewald: LDL = total - HDL - TG / 5
PH, PCO2, TOTAL_CO2_CALCULATED = 50820, 50818, 50804  # TCO2 = 0.03 x pCO2 x (10^(pH - 6.1) + 1)
HEMATOCRIT_CALCULATED, HEMOGLOBIN_BLOOD_GAS = 50810, 50811  # Hct = 3 x Hgb
ANION_GAP, BICARBONATE, CHLORIDE, POTASSIUM, SODIUM = 50868, 50882, 50902, 50971, 50983
WBC = 51301
# A white cell type's share of the count (%) and its absolute count: absolute = WBC x share / 100. Not the
# neutrophils: their absolute count (with bands, it seems) matches in 77% of the demo's specimens.
DIFFERENTIAL = ((51244, 51133), (51254, 52074), (51200, 52073), (51146, 52069))
BMI, WEIGHT, HEIGHT = "BMI (kg/m2)", "Weight (Lbs)", "Height (Inches)"
ADMISSION_WEIGHT_KG, ADMISSION_WEIGHT_LB = 226512, 226531  # chartevents, charted together
# chartevents: a monitor's or a cuff's systolic, diastolic and mean pressure, charted at one time.
BLOOD_PRESSURES = ((220179, 220180, 220181), (220050, 220051, 220052), (225309, 225310, 225312))


@dataclass(frozen=True)
class Derivation:
    """Results of ``table`` whose ``item`` follows from the results of other items among the rows sharing
    ``within`` (a specimen, a day): ``inputs`` maps an item to the sets of items that each give it."""

    table: str
    item: str
    value: str  # the result column: a sibling without a result gives nothing
    within: tuple[str, ...]
    inputs: tuple[tuple[object, tuple[tuple[object, ...], ...]], ...]
    # False: the siblings only bound the result (a blood pressure's mean lies near (S + 2D) / 3): they settle a
    # conflicting duplicate and show a hidden result's place, but give no value to answer with.
    exact: bool = True

    def formulas(self, item) -> tuple[tuple[object, ...], ...]:
        return self._by_item.get(item, ())

    @cached_property
    def items(self) -> tuple:
        """Every item a formula gives or reads, sorted by its text (read together, ``_siblings``)."""
        return tuple(sorted({i for item, formulas in self.inputs for i in (item, *(x for f in formulas for x in f))},
                            key=str))

    @cached_property
    def _by_item(self) -> dict:
        # Asked for every row checked: built once per declaration.
        return dict(self.inputs)


_DECLARED = (
    # Formulas that give the very value charted, to its digits, for at least 90% of the demo's specimens.
    Derivation("labevents", "itemid", "valuenum", ("subject_id", "specimen_id"), (
        (MCV, ((HEMATOCRIT, RBC),)),
        (HEMOGLOBIN, ((MCH, RBC), (MCHC, HEMATOCRIT))),
        (GLOBULIN, ((PROTEIN_TOTAL, ALBUMIN),)),
        (PROTEIN_TOTAL, ((GLOBULIN, ALBUMIN),)),
        (ALBUMIN, ((PROTEIN_TOTAL, GLOBULIN),)),
        (BILIRUBIN_INDIRECT, ((BILIRUBIN_TOTAL, BILIRUBIN_DIRECT),)),
        (BILIRUBIN_TOTAL, ((BILIRUBIN_DIRECT, BILIRUBIN_INDIRECT),)),
        (BILIRUBIN_DIRECT, ((BILIRUBIN_TOTAL, BILIRUBIN_INDIRECT),)),
        (EAG, ((HBA1C,),)),
        (HBA1C, ((EAG,),)),
        (CHOLESTEROL_RATIO, ((CHOLESTEROL_TOTAL, CHOLESTEROL_HDL),)),
        (CHOLESTEROL_TOTAL, ((CHOLESTEROL_LDL_CALCULATED, CHOLESTEROL_HDL, TRIGLYCERIDES),)),
        (CHOLESTEROL_HDL, ((CHOLESTEROL_TOTAL, CHOLESTEROL_LDL_CALCULATED, TRIGLYCERIDES),)),
        (CHOLESTEROL_LDL_CALCULATED, ((CHOLESTEROL_TOTAL, CHOLESTEROL_HDL, TRIGLYCERIDES),)),
        (HEMATOCRIT_CALCULATED, ((HEMOGLOBIN_BLOOD_GAS,),)),
        *((absolute, ((WBC, share),)) for share, absolute in DIFFERENTIAL[2:]),
        *((share, ((WBC, absolute),)) for share, absolute in DIFFERENTIAL[2:]),
    )),
    # Formulas that come near the value charted (rounded inputs, a gap with or without potassium) or give
    # it only now and then: they settle a duplicate and show a hidden result, but give no answer.
    Derivation("labevents", "itemid", "valuenum", ("subject_id", "specimen_id"), (
        (MCH, ((HEMOGLOBIN, RBC),)),
        (MCHC, ((HEMOGLOBIN, HEMATOCRIT),)),
        (RBC, ((HEMATOCRIT, MCV), (HEMOGLOBIN, MCH))),
        (HEMATOCRIT, ((MCV, RBC), (MCHC, HEMOGLOBIN))),
        (CHOLESTEROL_TOTAL, ((CHOLESTEROL_RATIO, CHOLESTEROL_HDL),)),
        (CHOLESTEROL_HDL, ((CHOLESTEROL_TOTAL, CHOLESTEROL_RATIO),)),
        (TRIGLYCERIDES, ((CHOLESTEROL_TOTAL, CHOLESTEROL_HDL, CHOLESTEROL_LDL_CALCULATED),)),
        (TOTAL_CO2_CALCULATED, ((PH, PCO2),)),
        (PH, ((TOTAL_CO2_CALCULATED, PCO2),)),
        (PCO2, ((TOTAL_CO2_CALCULATED, PH),)),
        (HEMOGLOBIN_BLOOD_GAS, ((HEMATOCRIT_CALCULATED,),)),
        # The anion gap is Na - Cl - HCO3, or Na + K - Cl - HCO3 (the demo's specimens are one or the other).
        (ANION_GAP, ((SODIUM, CHLORIDE, BICARBONATE),)),
        (SODIUM, ((ANION_GAP, CHLORIDE, BICARBONATE),)),
        (CHLORIDE, ((ANION_GAP, SODIUM, BICARBONATE),)),
        (BICARBONATE, ((ANION_GAP, SODIUM, CHLORIDE),)),
        (POTASSIUM, ((ANION_GAP, SODIUM, CHLORIDE, BICARBONATE),)),
        *((absolute, ((WBC, share),)) for share, absolute in DIFFERENTIAL[:2]),
        *((share, ((WBC, absolute),)) for share, absolute in DIFFERENTIAL[:2]),
        (WBC, tuple((share, absolute) for share, absolute in DIFFERENTIAL)),
    ), exact=False),
    Derivation("chartevents", "itemid", "valuenum", ("subject_id", "stay_id"), (
        (ADMISSION_WEIGHT_KG, ((ADMISSION_WEIGHT_LB,),)),
        (ADMISSION_WEIGHT_LB, ((ADMISSION_WEIGHT_KG,),)),
    )),
    # In 40 of 56 duplicated pressures with the other two charted, (S + 2D) / 3 picked out the original; a
    # duplicate breaking S > MAP > D (which 14 of the demo's 13,757 triples break) gave itself away, and
    # one of the three hidden beside the other two is a record no monitor writes.
    Derivation("chartevents", "itemid", "valuenum", ("subject_id", "stay_id", "charttime"), tuple(
        (item, (tuple(i for i in triple if i != item),)) for triple in BLOOD_PRESSURES for item in triple),
        exact=False),
    Derivation("omr", "result_name", "result_value", ("subject_id", "chartdate"), (
        (BMI, ((WEIGHT, HEIGHT),)),
        (WEIGHT, ((BMI, HEIGHT),)),
        (HEIGHT, ((BMI, WEIGHT),)),
    )),
)
DERIVATIONS: dict[str, tuple[Derivation, ...]] = {
    name: tuple(d for d in _DECLARED if d.table == name) for name in sorted({d.table for d in _DECLARED})}


def recomputable(lookup: SourceLookup, table_name: str, rows: list[dict], about: str | None = None,
                 hidden: Collection[int] = (), exact_only: bool = False) -> bool:
    """Whether the results of any of ``rows`` follow from sibling results the record keeps (rows of
    ``hidden`` aside), for a question about column ``about`` (None: the rows themselves); with
    ``exact_only``, only where the siblings give the very value (``Derivation.exact``)."""
    gone = set(hidden)
    for d in DERIVATIONS.get(table_name, ()):
        if (about is not None and about != d.value) or (exact_only and not d.exact):
            continue
        for row in rows:
            formulas = d.formulas(row.get(d.item))
            keys = [row.get(c) for c in d.within]
            if not formulas or any(k is None for k in keys):
                continue
            kept = {item for row_id, item in _siblings(lookup, d, keys) if row_id not in gone}
            if any(all(i in kept for i in formula) for formula in formulas):
                return True
    return False


def _siblings(lookup: SourceLookup, d: Derivation, keys: list) -> list[tuple[int, object]]:
    """(row_id, item) of the results of ``d``'s items among the rows sharing ``keys`` (``d.within``), read
    once for all the rows sharing the keys but the last (a patient's specimens, a stay's charting times):
    a question's evidence is hundreds of a stay's pressures, one query, not one each."""
    *outer, last = d.within
    key = ("siblings", d.table, d.item, d.value, d.within, d.items, *keys[:-1])  # all the query reads
    if key not in lookup.memo:
        where = " AND ".join([f'"{c}" = ?' for c in outer] + [f'"{d.value}" IS NOT NULL'])
        items = ", ".join("'" + i.replace("'", "''") + "'" if isinstance(i, str) else str(i) for i in d.items)
        grouped: dict = {}
        for row_id, item, at in lookup.con.execute(
                f'SELECT "{ROW_ID}", "{d.item}", "{last}" FROM main."{d.table}" WHERE {where} '
                f'AND "{d.item}" IN ({items})', keys[:-1]).fetchall():
            grouped.setdefault(at, []).append((row_id, item))
        lookup.memo[key] = grouped
    return lookup.memo[key].get(keys[-1], [])


def _check() -> None:
    for d in _DECLARED:
        unknown = sorted({d.item, d.value, *d.within} - set(TABLES_BY_NAME[d.table].column_names))
        if unknown:
            raise ValueError(f"derived_results: table {d.table!r} has no column(s) {unknown}")


_check()
