"""What the synthetic hospital measures: lab tests, charted vitals, outputs, inputs, ICU procedures,
care units and the categorical make-up of admissions.

Item ids, labels, units, categories and reference ranges are copied from the MIMIC-IV demo (v2.2),
so a template written against the real demo finds the same items here. The value distributions
are this project's: each item draws around the centre of a hospitalised population and is clipped
to physiologically possible bounds; diagnoses shift the draw (see ``codes.Condition``).
"""

from dataclasses import dataclass

import numpy as np

Weighted = tuple[tuple[str | None, float], ...]


@dataclass(frozen=True)
class Distribution:
    """A value's draw from a standard normal score ``z``: ``normal`` (center + spread * z) or
    ``lognormal`` (center * exp(spread * z)), clipped to [low, high] and rounded to ``decimals``."""

    kind: str
    center: float
    spread: float
    low: float
    high: float
    decimals: int

    def __post_init__(self) -> None:
        if self.kind not in ("normal", "lognormal"):
            raise ValueError(f"unknown distribution kind {self.kind!r}")
        if not self.low <= self.center <= self.high:
            raise ValueError(f"distribution centre {self.center} outside [{self.low}, {self.high}]")

    def from_z(self, z: np.ndarray) -> np.ndarray:
        if self.kind == "normal":
            v = self.center + self.spread * z
        else:
            v = self.center * np.exp(self.spread * z)
        return np.round(np.clip(v, self.low, self.high), self.decimals)


def normal(center, spread, low, high, decimals=0) -> Distribution:
    return Distribution("normal", center, spread, low, high, decimals)


def lognormal(median, sigma, low, high, decimals=0) -> Distribution:
    return Distribution("lognormal", median, sigma, low, high, decimals)


# --------------------------------------------------------------------------- laboratory (hosp)

@dataclass(frozen=True)
class LabItem:
    itemid: int
    label: str
    fluid: str
    category: str
    unit: str | None
    ref_low: float
    ref_high: float
    dist: Distribution
    comment: str | None = None
    # Hematocrit follows hemoglobin, PT follows INR: (source itemid, factor, noise sd).
    derived_from: tuple[int, float, float] | None = None


LAB_ITEMS: tuple[LabItem, ...] = (
    LabItem(50983, "Sodium", "Blood", "Chemistry", "mEq/L", 133, 145, normal(138, 3.5, 110, 170)),
    LabItem(50971, "Potassium", "Blood", "Chemistry", "mEq/L", 3.3, 5.1, normal(4.1, 0.45, 2.0, 8.5, 1)),
    LabItem(50902, "Chloride", "Blood", "Chemistry", "mEq/L", 96, 108, normal(102, 4, 75, 130)),
    LabItem(50882, "Bicarbonate", "Blood", "Chemistry", "mEq/L", 22, 32, normal(25, 3, 5, 45)),
    LabItem(51006, "Urea Nitrogen", "Blood", "Chemistry", "mg/dL", 6, 20, lognormal(17, 0.45, 2, 250)),
    LabItem(50912, "Creatinine", "Blood", "Chemistry", "mg/dL", 0.5, 1.2, lognormal(0.95, 0.35, 0.2, 15, 1)),
    LabItem(50931, "Glucose", "Blood", "Chemistry", "mg/dL", 70, 100, lognormal(118, 0.25, 30, 900),
            comment="IF FASTING, 70-100 NORMAL, >125 PROVISIONAL DIABETES."),
    LabItem(50960, "Magnesium", "Blood", "Chemistry", "mg/dL", 1.6, 2.6, normal(2.0, 0.25, 0.5, 5, 1)),
    LabItem(50893, "Calcium, Total", "Blood", "Chemistry", "mg/dL", 8.4, 10.3, normal(8.8, 0.6, 5, 15, 1)),
    LabItem(50970, "Phosphate", "Blood", "Chemistry", "mg/dL", 2.7, 4.5, normal(3.5, 0.8, 0.5, 12, 1)),
    LabItem(51301, "White Blood Cells", "Blood", "Hematology", "K/uL", 4.0, 10.0,
            lognormal(8.5, 0.35, 0.1, 150, 1)),
    LabItem(51222, "Hemoglobin", "Blood", "Hematology", "g/dL", 13.7, 17.5, normal(11.0, 1.8, 3, 20, 1)),
    LabItem(51221, "Hematocrit", "Blood", "Hematology", "%", 40, 51, normal(33, 5.5, 10, 60, 1),
            derived_from=(51222, 3.0, 1.0)),
    LabItem(51265, "Platelet Count", "Blood", "Hematology", "K/uL", 150, 400, lognormal(220, 0.35, 5, 1200)),
    LabItem(51237, "INR(PT)", "Blood", "Hematology", None, 0.9, 1.1, lognormal(1.2, 0.2, 0.8, 10, 1)),
    LabItem(51274, "PT", "Blood", "Hematology", "sec", 9.4, 12.5, lognormal(13.5, 0.2, 9, 120, 1),
            derived_from=(51237, 11.3, 0.4)),
    LabItem(51275, "PTT", "Blood", "Hematology", "sec", 25, 36.5, lognormal(31, 0.2, 18, 150, 1)),
    LabItem(50861, "Alanine Aminotransferase (ALT)", "Blood", "Chemistry", "IU/L", 0, 40,
            lognormal(25, 0.6, 3, 5000)),
    LabItem(50878, "Asparate Aminotransferase (AST)", "Blood", "Chemistry", "IU/L", 0, 40,
            lognormal(30, 0.6, 5, 8000)),
    LabItem(50863, "Alkaline Phosphatase", "Blood", "Chemistry", "IU/L", 40, 130, lognormal(85, 0.35, 20, 1500)),
    LabItem(50885, "Bilirubin, Total", "Blood", "Chemistry", "mg/dL", 0, 1.5, lognormal(0.6, 0.6, 0.1, 40, 1)),
    LabItem(50862, "Albumin", "Blood", "Chemistry", "g/dL", 3.5, 5.2, normal(3.6, 0.55, 1.0, 5.5, 1)),
    LabItem(50813, "Lactate", "Blood", "Blood Gas", "mmol/L", 0.5, 2.0, lognormal(1.5, 0.4, 0.3, 25, 1)),
    LabItem(50820, "pH", "Blood", "Blood Gas", "units", 7.35, 7.45, normal(7.39, 0.05, 6.8, 7.7, 2)),
    LabItem(50818, "pCO2", "Blood", "Blood Gas", "mm Hg", 35, 45, normal(41, 7, 15, 120)),
    LabItem(50821, "pO2", "Blood", "Blood Gas", "mm Hg", 85, 105, lognormal(100, 0.35, 30, 600)),
    LabItem(51003, "Troponin T", "Blood", "Chemistry", "ng/mL", 0, 0.01, lognormal(0.01, 1.0, 0.01, 25, 2)),
)

# Real d_labitems rows the generator never measures: the dictionary, like MIMIC-IV's, is larger than
# what any one cohort uses (query-level noise asks about tests a patient never had).
UNUSED_LAB_ITEMS: tuple[tuple[int, str, str, str], ...] = (
    (50868, "Anion Gap", "Blood", "Chemistry"),
    (50954, "Lactate Dehydrogenase (LD)", "Blood", "Chemistry"),
    (50911, "Creatine Kinase, MB Isoenzyme", "Blood", "Chemistry"),
    (50956, "Lipase", "Blood", "Chemistry"),
    (50889, "C-Reactive Protein", "Blood", "Chemistry"),
    (51277, "RDW", "Blood", "Hematology"),
    (51250, "MCV", "Blood", "Hematology"),
    (51248, "MCH", "Blood", "Hematology"),
    (51249, "MCHC", "Blood", "Hematology"),
    (51279, "Red Blood Cells", "Blood", "Hematology"),
    (51256, "Neutrophils", "Blood", "Hematology"),
    (51244, "Lymphocytes", "Blood", "Hematology"),
)


@dataclass(frozen=True)
class LabPanel:
    """Tests drawn together from one specimen, with the chance a draw includes the panel."""

    name: str
    itemids: tuple[int, ...]
    p_ward: float
    p_icu: float


LAB_PANELS: tuple[LabPanel, ...] = (
    LabPanel("chem7", (50983, 50971, 50902, 50882, 51006, 50912, 50931), 0.95, 1.0),
    LabPanel("cbc", (51301, 51222, 51221, 51265), 0.9, 1.0),
    LabPanel("mg_ca_phos", (50960, 50893, 50970), 0.6, 0.85),
    LabPanel("coags", (51237, 51274, 51275), 0.25, 0.5),
    LabPanel("lfts", (50861, 50878, 50863, 50885, 50862), 0.2, 0.35),
    LabPanel("blood_gas", (50820, 50818, 50821, 50813), 0.02, 0.45),
    LabPanel("troponin", (51003,), 0.08, 0.15),
)

LAB_PRIORITIES: Weighted = (("STAT", 0.5), ("ROUTINE", 0.4), (None, 0.1))


# --------------------------------------------------------------------------- ICU items (d_items)

@dataclass(frozen=True)
class ItemDef:
    """A d_items row, exactly as in MIMIC-IV (unit 'None' strings of the real file become null)."""

    itemid: int
    label: str
    abbreviation: str
    linksto: str
    category: str
    unitname: str | None
    param_type: str
    lownormalvalue: float | None = None
    highnormalvalue: float | None = None


D_ITEMS: tuple[ItemDef, ...] = (
    ItemDef(220045, "Heart Rate", "HR", "chartevents", "Routine Vital Signs", "bpm", "Numeric"),
    ItemDef(220048, "Heart Rhythm", "Heart Rhythm", "chartevents", "Routine Vital Signs", None, "Text"),
    ItemDef(220050, "Arterial Blood Pressure systolic", "ABPs", "chartevents", "Routine Vital Signs", "mmHg",
            "Numeric", 90.0, 140.0),
    ItemDef(220051, "Arterial Blood Pressure diastolic", "ABPd", "chartevents", "Routine Vital Signs", "mmHg",
            "Numeric", 60.0, 90.0),
    ItemDef(220052, "Arterial Blood Pressure mean", "ABPm", "chartevents", "Routine Vital Signs", "mmHg",
            "Numeric"),
    ItemDef(220179, "Non Invasive Blood Pressure systolic", "NBPs", "chartevents", "Routine Vital Signs",
            "mmHg", "Numeric"),
    ItemDef(220180, "Non Invasive Blood Pressure diastolic", "NBPd", "chartevents", "Routine Vital Signs",
            "mmHg", "Numeric"),
    ItemDef(220181, "Non Invasive Blood Pressure mean", "NBPm", "chartevents", "Routine Vital Signs", "mmHg",
            "Numeric"),
    ItemDef(220210, "Respiratory Rate", "RR", "chartevents", "Respiratory", "insp/min", "Numeric"),
    ItemDef(220277, "O2 saturation pulseoxymetry", "SpO2", "chartevents", "Respiratory", "%", "Numeric"),
    ItemDef(223761, "Temperature Fahrenheit", "Temperature F", "chartevents", "Routine Vital Signs", "°F",
            "Numeric"),
    ItemDef(223762, "Temperature Celsius", "Temperature C", "chartevents", "Routine Vital Signs", "°C",
            "Numeric"),
    ItemDef(226512, "Admission Weight (Kg)", "Admission Weight (Kg)", "chartevents", "General", "kg",
            "Numeric"),
    ItemDef(224639, "Daily Weight", "Daily Weight", "chartevents", "General", "kg", "Numeric"),
    ItemDef(226707, "Height", "Height", "chartevents", "General", "Inch", "Numeric"),
    ItemDef(226730, "Height (cm)", "Height (cm)", "chartevents", "General", "cm", "Numeric"),
    ItemDef(220739, "GCS - Eye Opening", "Eye Opening", "chartevents", "Neurological", None, "Text"),
    ItemDef(223900, "GCS - Verbal Response", "Verbal Response", "chartevents", "Neurological", None, "Text"),
    ItemDef(223901, "GCS - Motor Response", "Motor Response", "chartevents", "Neurological", None, "Text"),
    ItemDef(224690, "Respiratory Rate (Total)", "Respiratory Rate (Total)", "chartevents", "Respiratory",
            "insp/min", "Numeric", None, 36.0),
    ItemDef(225664, "Glucose finger stick (range 70-100)", "Glucose FS (range 70 -100)", "chartevents", "Labs",
            None, "Numeric"),
    ItemDef(224280, "Multi Lumen Insertion Date", "Multi Lumen Insertion Date", "datetimeevents",
            "Access Lines - Invasive", None, "Date and time"),
    ItemDef(224288, "Arterial line Insertion Date", "Arterial line Insertion Date", "datetimeevents",
            "Access Lines - Invasive", None, "Date and time"),
    ItemDef(225754, "20 Gauge Insertion Date", "20 Gauge Insertion Date", "datetimeevents",
            "Access Lines - Peripheral", None, "Date and time"),
    ItemDef(220490, "Water", "H2O", "ingredientevents", "Ingredients", "mL", "Ingredient"),
    ItemDef(220949, "Dextrose 5%", "Dextrose 5%", "inputevents", "Fluids/Intake", "mL", "Solution"),
    ItemDef(221744, "Fentanyl", "Fentanyl", "inputevents", "Medications", "mg", "Solution"),
    ItemDef(221794, "Furosemide (Lasix)", "Furosemide (Lasix)", "inputevents", "Medications", "mg", "Solution"),
    ItemDef(221906, "Norepinephrine", "Norepinephrine", "inputevents", "Medications", "mg", "Solution"),
    ItemDef(222168, "Propofol", "Propofol", "inputevents", "Medications", "mg", "Solution"),
    ItemDef(223258, "Insulin - Regular", "Insulin - Regular", "inputevents", "Medications", "units", "Solution"),
    ItemDef(225158, "NaCl 0.9%", "NaCl 0.9%", "inputevents", "Fluids/Intake", "mL", "Solution"),
    ItemDef(225798, "Vancomycin", "Vancomycin", "inputevents", "Antibiotics", "dose", "Solution"),
    ItemDef(225828, "LR", "LR", "inputevents", "Fluids/Intake", "mL", "Solution"),
    ItemDef(226559, "Foley", "Foley", "outputevents", "Output", "mL", "Numeric"),
    ItemDef(226560, "Void", "Void", "outputevents", "Output", "mL", "Numeric"),
    ItemDef(226561, "Condom Cath", "Condom Cath", "outputevents", "Output", "mL", "Numeric"),
    ItemDef(224263, "Multi Lumen", "Multi Lumen", "procedureevents", "Access Lines - Invasive", None,
            "Processes"),
    ItemDef(224275, "20 Gauge", "20 Gauge", "procedureevents", "Access Lines - Peripheral", None, "Processes"),
    ItemDef(225402, "EKG", "EKG", "procedureevents", "4-Procedures", None, "Processes"),
    ItemDef(225459, "Chest X-Ray", "Chest X-Ray", "procedureevents", "5-Imaging", None, "Processes"),
    ItemDef(225752, "Arterial Line", "Arterial Line", "procedureevents", "Access Lines - Invasive", None,
            "Processes"),
    ItemDef(225792, "Invasive Ventilation", "Invasive Ventilation", "procedureevents", "2-Ventilation", None,
            "Processes"),
    ItemDef(225802, "Dialysis - CRRT", "Dialysis - CRRT", "procedureevents", "Dialysis", None, "Processes"),
    ItemDef(227194, "Extubation", "Extubation", "procedureevents", "1-Intubation/Extubation", None, "Processes"),
)

# Charted vitals: item -> (valueuom as charted, distribution). Mean pressures, Celsius temperature,
# weights and rhythm are derived from these in ``icu_events``.
HEART_RATE, NBP_SYS, NBP_DIA, NBP_MEAN, ABP_MEAN = 220045, 220179, 220180, 220181, 220052
RESP_RATE, SPO2, TEMP_F, TEMP_C = 220210, 220277, 223761, 223762
ADMISSION_WEIGHT, DAILY_WEIGHT, HEART_RHYTHM = 226512, 224639, 220048

VITALS: dict[int, tuple[str, Distribution]] = {
    HEART_RATE: ("bpm", normal(86, 14, 30, 190)),
    NBP_SYS: ("mmHg", normal(120, 18, 60, 230)),
    NBP_DIA: ("mmHg", normal(64, 11, 25, 140)),
    ABP_MEAN: ("mmHg", normal(79, 11, 35, 150)),
    RESP_RATE: ("insp/min", normal(18, 4, 5, 50)),
    SPO2: ("%", normal(96.5, 2.0, 70, 100)),
    TEMP_F: ("°F", normal(98.6, 0.9, 93, 106, 1)),
}
VITAL_UNITS: dict[int, str] = {**{k: u for k, (u, _) in VITALS.items()},
                               NBP_MEAN: "mmHg", TEMP_C: "°C", ADMISSION_WEIGHT: "kg", DAILY_WEIGHT: "kg"}
RHYTHM_SINUS = "SR (Sinus Rhythm)"
RHYTHM_TACHY = "ST (Sinus Tachycardia)"
RHYTHM_BRADY = "SB (Sinus Bradycardia)"
RHYTHM_AF = "AF (Atrial Fibrillation)"
RHYTHMS = (RHYTHM_SINUS, RHYTHM_TACHY, RHYTHM_BRADY, RHYTHM_AF)

# Charting cadence: a stay charts its vitals every 1-4 hours (one interval per stay).
VITAL_INTERVAL_HOURS: tuple[tuple[int, float], ...] = ((1, 0.35), (2, 0.35), (3, 0.1), (4, 0.2))

FOLEY, VOID = 226559, 226560
# Output volumes per charting (ml); outputevents spell the unit 'ml' where d_items says 'mL', as MIMIC-IV does.
OUTPUTS: dict[int, tuple[str, Distribution, float]] = {  # item -> (valueuom, volume, interval hours)
    FOLEY: ("ml", lognormal(70, 0.6, 0, 1500), 2.0),
    VOID: ("ml", lognormal(280, 0.45, 20, 1500), 5.0),
}


@dataclass(frozen=True)
class InputItem:
    """An inputevents item. ``continuous`` items run as consecutive segments at a drawn rate;
    ``push`` items are single doses repeated every ``interval_hours``."""

    itemid: int
    mode: str
    indication: str  # a condition key, a stay flag (see icu_events.STAY_FLAGS) or "any"
    probability: float
    amountuom: str
    rateuom: str | None
    ordercategoryname: str
    secondaryordercategoryname: str | None
    ordercomponenttypedescription: str
    ordercategorydescription: str
    totalamount: float | None
    dose: Distribution  # the rate (continuous) or the amount (push)
    segment_hours: tuple[float, float] = (2.0, 8.0)
    interval_hours: float = 12.0


INPUT_ITEMS: tuple[InputItem, ...] = (
    InputItem(225158, "continuous", "any", 0.6, "ml", "mL/hour", "02-Fluids (Crystalloids)",
              "Additive (Crystalloid)", "Main order parameter", "Continuous IV", 1000.0,
              lognormal(75, 0.4, 10, 500, 1), (3.0, 10.0)),
    InputItem(220949, "continuous", "any", 0.35, "ml", "mL/hour", "01-Drips", "02-Fluids (Crystalloids)",
              "Mixed solution", "Continuous Med", 250.0, lognormal(15, 0.4, 2, 100, 1), (2.0, 8.0)),
    InputItem(221906, "continuous", "pressor", 1.0, "mg", "mcg/kg/min", "01-Drips", "02-Fluids (Crystalloids)",
              "Main order parameter", "Continuous Med", 250.0, lognormal(0.1, 0.6, 0.01, 1.5, 3), (1.0, 6.0)),
    InputItem(222168, "continuous", "ventilated", 0.9, "mg", "mcg/kg/min", "01-Drips", "02-Fluids (Crystalloids)",
              "Main order parameter", "Continuous Med", 100.0, lognormal(30, 0.4, 5, 80, 1), (2.0, 8.0)),
    InputItem(223258, "continuous", "diabetes", 0.5, "units", "units/hour", "01-Drips",
              "02-Fluids (Crystalloids)", "Main order parameter", "Continuous Med", 100.0,
              lognormal(3, 0.5, 0.5, 20, 1), (2.0, 6.0)),
    InputItem(225798, "push", "infection", 0.9, "dose", None, "08-Antibiotics (IV)", "02-Fluids (Crystalloids)",
              "Main order parameter", "Drug Push", 500.0, normal(1, 0, 1, 1), interval_hours=12.0),
    InputItem(221794, "push", "chf", 0.7, "mg", None, "05-Med Bolus", None, "Main order parameter",
              "Drug Push", None, lognormal(30, 0.4, 10, 120), interval_hours=12.0),
)
WATER_INGREDIENT = 220490  # every fluid (ml) input carries its water as an ingredient row
# Weight-based rates: amount (mg) = rate (mcg/kg/min) * weight (kg) * minutes / 1000.
RATE_PER_MINUTE_PER_KG = {"mcg/kg/min"}


@dataclass(frozen=True)
class ProcedureItem:
    """A procedureevents item: ``continuous`` processes (lines, ventilation) last through part of the
    stay and are valued in minutes; ``task`` items are single events valued 1."""

    itemid: int
    kind: str
    indication: str  # a stay flag or "any"
    probability: float
    ordercategoryname: str
    ordercategorydescription: str
    locations: tuple[str, ...] = ()
    locationcategory: str | None = None
    insertion_itemid: int | None = None  # the datetimeevents item recording the line's insertion date
    max_count: int = 1


PROCEDURE_ITEMS: tuple[ProcedureItem, ...] = (
    ProcedureItem(225792, "continuous", "ventilated", 1.0, "Ventilation", "ContinuousProcess"),
    ProcedureItem(224263, "continuous", "central_line", 1.0, "Invasive Lines", "ContinuousProcess",
                  ("Right IJ", "Left IJ", "Right Subclavian", "Right Femoral"), "Invasive Venous", 224280),
    ProcedureItem(225752, "continuous", "arterial_line", 1.0, "Invasive Lines", "ContinuousProcess",
                  ("Left Radial", "Right Radial", "Left Femoral"), "Invasive Arterial", 224288),
    ProcedureItem(224275, "continuous", "any", 0.85, "Peripheral Lines", "ContinuousProcess",
                  ("Right Antecubital", "Left Antecubital", "Right Forearm", "Left Hand"), "Peripheral", 225754),
    ProcedureItem(225459, "task", "any", 0.8, "Imaging", "Task", max_count=3),
    ProcedureItem(225402, "task", "any", 0.5, "Procedures", "Task", max_count=2),
)


# --------------------------------------------------------------------------- care units and services

@dataclass(frozen=True)
class Service:
    code: str  # services.curr_service
    wards: tuple[str, ...]
    icus: tuple[str, ...]
    admit_to: str  # poe_detail 'Admit to'


SERVICES: tuple[Service, ...] = (
    Service("MED", ("Medicine", "Med/Surg"),
            ("Medical Intensive Care Unit (MICU)", "Medical/Surgical Intensive Care Unit (MICU/SICU)"), "Medicine"),
    Service("CMED", ("Medicine/Cardiology", "Cardiology"), ("Coronary Care Unit (CCU)",), "Medicine"),
    Service("SURG", ("Med/Surg", "Surgery/Trauma"), ("Surgical Intensive Care Unit (SICU)",), "Surgery"),
    Service("CSURG", ("Cardiac Surgery",), ("Cardiac Vascular Intensive Care Unit (CVICU)",), "Surgery"),
    Service("NMED", ("Neurology",), ("Neuro Surgical Intensive Care Unit (Neuro SICU)",), "Neuromed"),
    Service("NSURG", ("Neurology",), ("Neuro Surgical Intensive Care Unit (Neuro SICU)",), "Surgery"),
    Service("OMED", ("Hematology/Oncology",), ("Medical Intensive Care Unit (MICU)",), "Medicine"),
    Service("TRAUM", ("Med/Surg/Trauma",), ("Trauma SICU (TSICU)",), "Surgery"),
)
SERVICE_INDEX = {s.code: i for i, s in enumerate(SERVICES)}
ED_UNIT = "Emergency Department"
CARE_UNITS: tuple[str, ...] = tuple(dict.fromkeys(
    [ED_UNIT] + [u for s in SERVICES for u in s.wards] + [u for s in SERVICES for u in s.icus]))
ICU_UNITS: frozenset[str] = frozenset(u for s in SERVICES for u in s.icus)
CARE_UNIT_INDEX = {u: i for i, u in enumerate(CARE_UNITS)}


# --------------------------------------------------------------------------- admissions and patients

ANCHOR_YEAR_GROUPS: tuple[tuple[str, int], ...] = (
    ("2008 - 2010", 2008), ("2011 - 2013", 2011), ("2014 - 2016", 2014), ("2017 - 2019", 2017))
# The real year from which admissions are coded in ICD-10 (the US switched in October 2015).
ICD10_FROM_YEAR = 2016

ADMISSION_TYPES: Weighted = (
    ("EW EMER.", 104), ("OBSERVATION ADMIT", 45), ("URGENT", 38), ("EU OBSERVATION", 30),
    ("SURGICAL SAME DAY ADMISSION", 18), ("DIRECT EMER.", 15), ("ELECTIVE", 13), ("DIRECT OBSERVATION", 7),
    ("AMBULATORY OBSERVATION", 5))
# Chance an admission of each type came through the emergency department.
ED_PROBABILITY: dict[str, float] = {
    "EW EMER.": 0.95, "EU OBSERVATION": 0.95, "OBSERVATION ADMIT": 0.5, "URGENT": 0.3, "DIRECT EMER.": 0.2}
OBSERVATION_TYPES = frozenset({"OBSERVATION ADMIT", "EU OBSERVATION", "DIRECT OBSERVATION",
                               "AMBULATORY OBSERVATION"})
ED_ADMISSION_LOCATION = "EMERGENCY ROOM"
ADMISSION_LOCATIONS: Weighted = (
    ("PHYSICIAN REFERRAL", 63), ("TRANSFER FROM HOSPITAL", 43), ("CLINIC REFERRAL", 10), ("PROCEDURE SITE", 7),
    ("WALK-IN/SELF REFERRAL", 7), ("TRANSFER FROM SKILLED NURSING FACILITY", 4), ("PACU", 4),
    ("INFORMATION NOT AVAILABLE", 1))
DIED = "DIED"
DISCHARGE_LOCATIONS: Weighted = (  # for patients who leave alive
    ("HOME HEALTH CARE", 76), ("HOME", 72), (None, 20), ("SKILLED NURSING FACILITY", 36), ("REHAB", 13),
    ("CHRONIC/LONG TERM ACUTE CARE", 9), ("HOSPICE", 5), ("AGAINST ADVICE", 4), ("PSYCH FACILITY", 2),
    ("ACUTE HOSPITAL", 1))
INSURANCES: tuple[str, ...] = ("Medicare", "Medicaid", "Other")
LANGUAGES: Weighted = (("ENGLISH", 0.92), ("?", 0.08))
MARITAL_STATUSES: Weighted = (("SINGLE", 110), ("MARRIED", 72), ("WIDOWED", 54), ("DIVORCED", 27), (None, 12))
RACES: Weighted = (
    ("WHITE", 170), ("BLACK/AFRICAN AMERICAN", 48), ("UNKNOWN", 17), ("HISPANIC/LATINO - PUERTO RICAN", 9),
    ("PORTUGUESE", 7), ("ASIAN", 6), ("OTHER", 4), ("UNABLE TO OBTAIN", 4), ("WHITE - BRAZILIAN", 3),
    ("BLACK/CAPE VERDEAN", 3), ("HISPANIC OR LATINO", 2), ("WHITE - OTHER EUROPEAN", 2), ("ASIAN - CHINESE", 2))

# omr result names, as MIMIC-IV spells them.
OMR_WEIGHT, OMR_HEIGHT, OMR_BMI, OMR_BP = "Weight (Lbs)", "Height (Inches)", "BMI (kg/m2)", "Blood Pressure"
