"""Results a reader recomputes from other results of the same specimen or day.

A complete blood count reports its indices together, and each follows from two of the others: MCV is
Hct / RBC x 10, MCH is Hgb / RBC x 10, MCHC is Hgb / Hct x 100, so RBC, Hgb and Hct follow from the rest
as well. Globulin is total protein minus albumin, so albumin and total protein follow from the other
two. An omr BMI is 703 x weight / height² from the same day's weight (lb) and height (in), and each of
the three follows from the others. In the demo, 2,747 of 2,760 MCVs equal Hct / RBC x 10 within 1 fL,
all 163 globulins equal total protein minus albumin, and 374 of the 377 BMIs charted on a day with a
weight and a height match them within 0.5.

A duplicate of such a result that disagrees with what its siblings give is settled by them. A
reviewer computed Hgb / MCH = 2.67 beside a duplicated RBC of 2.67 and 3.47. A result hidden or left
unresulted beside its siblings is still in the record. So record noise never duplicates, hides or
empties a result its siblings in the record give (``recomputable``), as it leaves alone a row the
source records a second time (``row_roles.Copy``).
"""

from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property

from pipeline.noise.case import SourceLookup
from pipeline.schema import ROW_ID, TABLES_BY_NAME

# MIMIC-IV's blood chemistry and haematology items (d_labitems).
HEMATOCRIT, HEMOGLOBIN, MCH, MCHC, MCV, RBC = 51221, 51222, 51248, 51249, 51250, 51279
ALBUMIN, GLOBULIN, PROTEIN_TOTAL = 50862, 50930, 50976
BMI, WEIGHT, HEIGHT = "BMI (kg/m2)", "Weight (Lbs)", "Height (Inches)"


@dataclass(frozen=True)
class Derivation:
    """Results of ``table`` whose ``item`` follows from the results of other items among the rows sharing
    ``within`` (a specimen, a day): ``inputs`` maps an item to the sets of items that each give it."""

    table: str
    item: str
    value: str  # the result column: a sibling without a result gives nothing
    within: tuple[str, ...]
    inputs: tuple[tuple[object, tuple[tuple[object, ...], ...]], ...]

    def formulas(self, item) -> tuple[tuple[object, ...], ...]:
        return self._by_item.get(item, ())

    @cached_property
    def _by_item(self) -> dict:
        # Asked for every row checked: built once per declaration.
        return dict(self.inputs)


DERIVATIONS: dict[str, Derivation] = {d.table: d for d in (
    Derivation("labevents", "itemid", "valuenum", ("subject_id", "specimen_id"), (
        (MCV, ((HEMATOCRIT, RBC),)),
        (MCH, ((HEMOGLOBIN, RBC),)),
        (MCHC, ((HEMOGLOBIN, HEMATOCRIT),)),
        (RBC, ((HEMATOCRIT, MCV), (HEMOGLOBIN, MCH))),
        (HEMOGLOBIN, ((MCH, RBC), (MCHC, HEMATOCRIT))),
        (HEMATOCRIT, ((MCV, RBC), (MCHC, HEMOGLOBIN))),
        (GLOBULIN, ((PROTEIN_TOTAL, ALBUMIN),)),
        (PROTEIN_TOTAL, ((GLOBULIN, ALBUMIN),)),
        (ALBUMIN, ((PROTEIN_TOTAL, GLOBULIN),)),
    )),
    Derivation("omr", "result_name", "result_value", ("subject_id", "chartdate"), (
        (BMI, ((WEIGHT, HEIGHT),)),
        (WEIGHT, ((BMI, HEIGHT),)),
        (HEIGHT, ((BMI, WEIGHT),)),
    )),
)}


def recomputable(lookup: SourceLookup, table_name: str, rows: list[dict], about: str | None = None,
                 hidden: Collection[int] = ()) -> bool:
    """Whether the results of any of ``rows`` follow from sibling results the record keeps (rows of
    ``hidden`` aside), for a question about column ``about`` (None: the rows themselves)."""
    d = DERIVATIONS.get(table_name)
    if d is None or (about is not None and about != d.value):
        return False
    gone = set(hidden)
    for row in rows:
        formulas = d.formulas(row.get(d.item))
        keys = [row.get(c) for c in d.within]
        if not formulas or any(k is None for k in keys):
            continue
        where = " AND ".join(f'"{c}" = ?' for c in d.within)
        siblings = lookup.query(
            ("siblings", table_name, *keys),
            f'SELECT "{ROW_ID}", "{d.item}" FROM main."{table_name}" WHERE {where} AND "{d.value}" IS NOT NULL',
            keys)
        kept = {item for row_id, item in siblings if row_id not in gone}
        if any(all(i in kept for i in formula) for formula in formulas):
            return True
    return False


def _check() -> None:
    for d in DERIVATIONS.values():
        unknown = sorted({d.item, d.value, *d.within} - set(TABLES_BY_NAME[d.table].column_names))
        if unknown:
            raise ValueError(f"derived_results: table {d.table!r} has no column(s) {unknown}")


_check()
