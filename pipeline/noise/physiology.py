"""Plausible ranges and unit conversions of measured items: the table value-level noise draws from.

Each ``MeasuredItem`` names the MIMIC-IV items it covers (``(table, item)`` where the item is the
row's ``itemid``, or ``result_name`` in ``omr``; ``column:<name>`` for a table whose column is the
measure itself, such as ``patients.anchor_age``), the unit MIMIC-IV records it in, the range a living
patient can physiologically show (wide on purpose: it bounds possibility, not normality, and lies
beyond the highest values published for living patients, which tests/pipeline/noise/test_physiology.py
lists with their sources; a value outside it is what ``implausible_value`` must produce and what the
label check and the source audit call ``outside_limits``) and conversions to other units (what
``unit_mismatch`` writes: the value converted and charted with the precision the reading had, the
unit column relabelled; and what an ``implausible_value`` of mechanism ``unit_scale`` writes without
relabelling). A reading keeps its precision whatever unit it is written in: 98.8 °F is charted 37.1
°C, not 37.1111111 °C, which no thermometer shows and whose digits alone would give the twin away
(``charted_in_other_unit``).

Items not listed get no implausible twin (nothing is surely impossible for them); their units
convert by ``UNIT_CONVERSIONS`` (mL to L, mg to g, ...), the same way whatever the item.
"""

import math
from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Conversion:
    """Rewrite a value in another unit: ``new = value * factor + offset``."""

    unit: str
    factor: float
    offset: float = 0.0

    def apply(self, value: float) -> float:
        return value * self.factor + self.offset

    def invert(self, value: float) -> float:
        return (value - self.offset) / self.factor


@dataclass(frozen=True)
class MeasuredItem:
    name: str
    items: tuple[tuple[str, str], ...]  # (table, itemid or omr result_name)
    unit: str | None
    plausible: tuple[float, float]
    conversions: tuple[Conversion, ...] = ()


def _lab(*itemids: int) -> tuple[tuple[str, str], ...]:
    return tuple(("labevents", str(i)) for i in itemids)


def _chart(*itemids: int) -> tuple[tuple[str, str], ...]:
    return tuple(("chartevents", str(i)) for i in itemids)


C = Conversion
MMHG_KPA = C("kPa", 0.133322)
PERCENT_FRACTION = C("fraction", 0.01)

MEASURED_ITEMS: tuple[MeasuredItem, ...] = (
    # ------------------------------------------------------------ laboratory (labevents)
    # Electrolytes are reported in mEq/L or mmol/L, the same number for these ions: no laboratory
    # writes a potassium in mg/dL, so they get no unit twin.
    MeasuredItem("potassium", _lab(50971, 50822), "mEq/L", (1.0, 15.0)),  # 14 survived (South Med J, 2005)
    MeasuredItem("sodium", _lab(50983, 50824), "mEq/L", (90.0, 200.0)),
    MeasuredItem("chloride", _lab(50902, 50806), "mEq/L", (50.0, 170.0)),
    # Upper limits above the highest values published for living patients, which lie past what a
    # clinician would guess: a bicarbonate of 82 mmol/L (gastric losses, PMC5040772), a creatinine of
    # 73.8 mg/dL (allograft rejection), a platelet count of 3,700 K/uL (essential thrombocythaemia), a
    # magnesium of 8.71 mmol/L = 21.2 mg/dL (Epsom salts, Front. Med. 2024), a phosphate of 17.75 mmol/L
    # = 55 mg/dL (phosphate enemas, Eur J Pediatr 2009). A twin's value inside them is one a reviewer
    # can find in the literature, not a charting error.
    MeasuredItem("bicarbonate", _lab(50882, 50804, 50803), "mEq/L", (1.0, 90.0)),
    MeasuredItem("creatinine", _lab(50912), "mg/dL", (0.05, 80.0),
                 (C("umol/L", 88.42),)),
    MeasuredItem("urea nitrogen", _lab(51006), "mg/dL", (0.5, 350.0),
                 (C("mmol/L", 0.357),)),
    MeasuredItem("glucose", _lab(50931, 50809), "mg/dL", (5.0, 3000.0),
                 (C("mmol/L", 0.0555),)),
    MeasuredItem("hemoglobin", _lab(51222, 50811), "g/dL", (1.0, 26.0),
                 (C("g/L", 10.0), C("mmol/L", 0.6206))),
    MeasuredItem("hematocrit", _lab(51221, 50810), "%", (3.0, 85.0), (PERCENT_FRACTION,)),
    MeasuredItem("platelets", _lab(51265), "K/uL", (0.5, 5000.0), (C("#/uL", 1000.0),)),
    MeasuredItem("white blood cells", _lab(51301), "K/uL", (0.01, 900.0), (C("#/uL", 1000.0),)),
    MeasuredItem("red blood cells", _lab(51279), "m/uL", (0.3, 10.0)),
    MeasuredItem("magnesium", _lab(50960), "mg/dL", (0.2, 30.0), (C("mmol/L", 0.4114),)),
    MeasuredItem("calcium", _lab(50893), "mg/dL", (1.5, 25.0), (C("mmol/L", 0.2495),)),
    MeasuredItem("free calcium", _lab(50808), "mmol/L", (0.2, 5.0), (C("mg/dL", 4.008),)),
    MeasuredItem("phosphate", _lab(50970), "mg/dL", (0.2, 70.0), (C("mmol/L", 0.3229),)),
    MeasuredItem("lactate", _lab(50813), "mmol/L", (0.05, 40.0), (C("mg/dL", 9.009),)),
    MeasuredItem("albumin", _lab(50862), "g/dL", (0.3, 8.0), (C("g/L", 10.0),)),
    MeasuredItem("total bilirubin", _lab(50885), "mg/dL", (0.01, 80.0), (C("umol/L", 17.104),)),
    MeasuredItem("aminotransferases", _lab(50861, 50878), "IU/L", (1.0, 40000.0),
                 (C("ukat/L", 0.016667),)),
    MeasuredItem("alkaline phosphatase", _lab(50863), "IU/L", (2.0, 10000.0),
                 (C("ukat/L", 0.016667),)),
    MeasuredItem("lactate dehydrogenase", _lab(50954), "IU/L", (20.0, 60000.0),
                 (C("ukat/L", 0.016667),)),
    MeasuredItem("anion gap", _lab(50868), "mEq/L", (-15.0, 80.0)),
    MeasuredItem("blood pH", _lab(50820), "units", (6.3, 8.0)),
    MeasuredItem("pCO2", _lab(50818), "mm Hg", (5.0, 400.0), (MMHG_KPA,)),  # 375 survived (Chest, 1992)
    MeasuredItem("pO2", _lab(50821), "mm Hg", (5.0, 800.0), (MMHG_KPA,)),
    MeasuredItem("INR", _lab(51237), None, (0.3, 30.0)),
    MeasuredItem("clotting times", _lab(51274, 51275), "sec", (3.0, 300.0)),  # always in seconds
    MeasuredItem("red cell indices", _lab(51250, 52172), "fL", (30.0, 200.0)),
    MeasuredItem("differential percentages",
                 _lab(51256, 51244, 51254, 51200, 51146, 51143, 51144, 51251, 51255, 51277),
                 "%", (0.0, 100.0), (PERCENT_FRACTION,)),
    # ------------------------------------------------------------ vitals (chartevents)
    # 600 bpm was recorded on telemetry in atrial fibrillation (Indian Pacing Electrophysiol J, 2012).
    MeasuredItem("heart rate", _chart(220045), "bpm", (0.0, 600.0)),
    MeasuredItem("respiratory rate", _chart(220210, 224690, 224689, 224688), "insp/min", (0.0, 120.0)),
    MeasuredItem("oxygen saturation", _chart(220277, 220227), "%", (0.0, 100.0),
                 (PERCENT_FRACTION,)),
    MeasuredItem("blood pressure", _chart(220179, 220180, 220181, 220050, 220051, 220052), "mmHg",
                 (0.0, 400.0)),  # monitors show mmHg everywhere: no unit twin
    MeasuredItem("central venous pressure", _chart(220074), "mmHg", (-20.0, 80.0),
                 (C("cmH2O", 1.35951),)),  # a water manometer reads it in cmH2O
    # 46.5 °C (115.7 °F) was survived in heatstroke (Grady Memorial Hospital, 1980).
    MeasuredItem("temperature fahrenheit", _chart(223761), "°F", (68.0, 116.0),
                 (C("°C", 5 / 9, -32 * 5 / 9),)),
    MeasuredItem("temperature celsius", _chart(223762), "°C", (20.0, 47.0),
                 (C("°F", 1.8, 32.0),)),
    MeasuredItem("body weight", _chart(224639, 226512, 226846), "kg", (0.3, 650.0),
                 (C("lb", 2.20462),)),
    MeasuredItem("height", _chart(226730), "cm", (20.0, 275.0), (C("in", 0.393701),)),
    MeasuredItem("height in inches", _chart(226707), "Inch", (8.0, 108.0), (C("cm", 2.54),)),
    MeasuredItem("finger-stick glucose", _chart(225664, 220621, 226537), "mg/dL", (5.0, 3000.0), (C("mmol/L", 0.0555),)),
    MeasuredItem("inspired oxygen fraction", _chart(223835), None, (21.0, 100.0)),
    MeasuredItem("PEEP", _chart(220339), "cmH2O", (0.0, 50.0)),  # ventilators set it in cmH2O
    MeasuredItem("tidal volume", _chart(224685, 224684, 224686), "mL", (0.0, 4000.0),
                 (C("L", 0.001),)),
    MeasuredItem("minute volume", _chart(224687), "L/min", (0.0, 80.0), (C("mL/min", 1000.0),)),
    MeasuredItem("GCS eye", _chart(220739), None, (1.0, 4.0)),
    MeasuredItem("GCS verbal", _chart(223900), None, (1.0, 5.0)),
    MeasuredItem("GCS motor", _chart(223901), None, (1.0, 6.0)),
    MeasuredItem("pain level", _chart(223791), None, (0.0, 10.0)),
    # ------------------------------------------------------------ columns that are the measure themselves
    MeasuredItem("age", (("patients", "column:anchor_age"),), "years", (0.0, 125.0),
                 (C("months", 12.0),)),
    MeasuredItem("ICU length of stay", (("icustays", "column:los"),), "days", (0.0, 1000.0),
                 (C("hours", 24.0),)),
    # ------------------------------------------------------------ outside the ICU (omr: no unit column)
    MeasuredItem("weight in pounds", (("omr", "Weight (Lbs)"),), "lb", (0.7, 1400.0),
                 (C("kg", 0.453592),)),
    MeasuredItem("height in inches (omr)", (("omr", "Height (Inches)"),), "in", (8.0, 108.0),
                 (C("cm", 2.54),)),
    MeasuredItem("body mass index", (("omr", "BMI (kg/m2)"),), "kg/m2", (5.0, 200.0)),
)

# Unit-wise conversions for items not listed above (volumes and masses convert the same for any drug
# or fluid). Keys are the unit texts MIMIC-IV writes, compared case-insensitively.
UNIT_CONVERSIONS: dict[str, tuple[Conversion, ...]] = {
    "ml": (C("L", 0.001),),
    "l": (C("mL", 1000.0),),
    "mg": (C("g", 0.001),),
    "g": (C("mg", 1000.0),),
    "grams": (C("mg", 1000.0),),
    "mcg": (C("mg", 0.001),),
    "kg": (C("lb", 2.20462),),
    "°f": (C("°C", 5 / 9, -32 * 5 / 9),),
    "°c": (C("°F", 1.8, 32.0),),
    "mg/dl": (C("mg/L", 10.0),),
    "g/dl": (C("g/L", 10.0),),
    "k/ul": (C("#/uL", 1000.0),),  # spelled as labevents writes counts per uL
    "ml/hour": (C("L/hour", 0.001),),
}

_BY_ITEM: dict[tuple[str, str], MeasuredItem] = {}


def _index() -> None:
    # Each item is described once, with a range that is a range.
    for m in MEASURED_ITEMS:
        lo, hi = m.plausible
        if not lo < hi:
            raise ValueError(f"measured item {m.name!r}: plausible range {m.plausible} is empty")
        for key in m.items:
            if key in _BY_ITEM:
                raise ValueError(f"item {key} is described twice: {_BY_ITEM[key].name!r} and {m.name!r}")
            _BY_ITEM[key] = m


_index()


# An end time that cannot precede its start: (table, end column) -> start column. Moving the end
# before the start is value-level noise for answers resting on the end (a length of stay, a discharge).
ENDS_AFTER: dict[tuple[str, str], str] = {
    ("admissions", "dischtime"): "admittime",
    ("icustays", "outtime"): "intime",
    ("transfers", "outtime"): "intime",
    ("inputevents", "endtime"): "starttime",
    ("procedureevents", "endtime"): "starttime",
    ("prescriptions", "stoptime"): "starttime",
}


# What kind of unit confusion a conversion is, by the unit it rewrites a value in: the mechanism
# a ``unit_mismatch`` twin records.
_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("conventional_vs_si", ("mmol/l", "umol/l", "ukat/l", "mg/dl", "meq/l")),
    ("mass_concentration_scale", ("g/l", "mg/l")),
    ("temperature_scale", ("°c", "°f")),
    ("pressure_unit", ("kpa", "cmh2o")),
    ("percent_vs_fraction", ("fraction", "%")),
    ("count_scale", ("#/ul", "/ul")),
    ("time_unit", ("hours",)),
    ("weight_unit", ("lb", "kg")),
    ("length_unit", ("in", "cm")),
    ("metric_prefix", ("l", "ml", "mg", "g", "mcg", "l/hour", "ml/min")),
    ("age_unit", ("months",)),
)


def conversion_family(unit: str) -> str:
    """The kind of unit confusion that writes a value in ``unit`` (e.g. mg/dL -> mmol/L: conventional_vs_si)."""
    u = unit.strip().lower()
    return next((name for name, units in _FAMILIES if u in units), "other_unit")


def measured_item(table: str, item: str | int | None, column: str | None = None) -> MeasuredItem | None:
    """The declared description of ``item`` in ``table`` (or, for tables without items, of the
    measured ``column`` itself), or None when it is not listed."""
    if item is not None:
        return _BY_ITEM.get((table, str(item)))
    return _BY_ITEM.get((table, f"column:{column}")) if column else None


def conversions_for(table: str, item: str | int | None, unit: str | None,
                    column: str | None = None) -> tuple[Conversion, ...]:
    """How a value of ``item`` (or ``column``) recorded in ``unit`` can be rewritten in another unit."""
    m = measured_item(table, item, column)
    if m is not None:
        return m.conversions  # a described item is charted in the units listed there, or in one only
    return UNIT_CONVERSIONS.get((unit or "").strip().lower(), ())


def format_value(value: float) -> str:
    """A number as a patch writes it: 9 significant digits (at least 4 decimals), no exponent.

    Enough digits that converting a rewritten value back lands within a millionth of the original,
    far inside any task's tolerance.
    """
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = max(4, 8 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def recorded_digits(value: float) -> tuple[int, int]:
    """(significant digits, decimals) of ``value`` as it was charted, read from its shortest decimal
    form: 98.8 -> (3, 1), 140.0 -> (3, 0), 0.05 -> (1, 2). A whole number's trailing zeros count."""
    text = format(Decimal(repr(abs(float(value)))), "f")  # the shortest form, never an exponent
    whole, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0")
    digits = (whole + fraction).lstrip("0")
    return max(len(digits), 1), len(fraction)


def charted_in_other_unit(converted: float, reading: float) -> float:
    """``converted`` (``reading`` written in another unit) to the significant digits the reading was
    charted with, at least three: a measurement is as precise in one unit as in another, and a
    conversion's arithmetic adds no digits a device or a laboratory would report. Three, because a
    whole reading of two digits is no coarser than its unit: 69 kg is charted 152 lb, not 150, and 92
    mmHg 12.3 kPa."""
    if converted == 0 or not math.isfinite(converted):
        return converted
    return float(f"{converted:.{max(3, recorded_digits(reading)[0])}g}")


def charted_like(value: float, reading: float) -> float:
    """``value`` to the decimals ``reading`` was charted with: another reading of the same item in the
    same unit, from the same device or laboratory."""
    return round(value, recorded_digits(reading)[1])


def written_back(conversion: Conversion, charted: float) -> str:
    """A value charted in ``conversion.unit``, written back in the unit ``conversion`` converts from
    (as a patch writes it): what converting an unusual unit back gives, for the injector and the label
    check alike."""
    return format_value(conversion.invert(charted))
