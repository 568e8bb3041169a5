"""Drugs the synthetic hospital orders, as MIMIC-IV's prescriptions, pharmacy and eMAR spell them.

Every string (drug name with its double spaces, route, dose unit, product strength, formulary code,
GSN, NDC, frequency, dispensing schedule) is copied from a common order of that drug in the
MIMIC-IV demo. Who gets which drug is this project's rule: every admission draws from the
ward basics, and a condition (or an ICU stay's ventilation or vasopressors) brings its drugs.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Drug:
    drug: str
    route: str
    dose_val_rx: str
    dose_unit_rx: str
    form_val_disp: str
    form_unit_disp: str
    prod_strength: str
    formulary_drug_cd: str
    gsn: str | None
    ndc: str
    doses_per_24_hrs: float | None
    frequency: str
    disp_sched: str | None
    proc_type: str  # pharmacy.proc_type
    administration_type: str  # emar_detail.administration_type of the administration row
    # Hours between scheduled administrations; None: given once (ONCE) or as needed (PRN).
    interval_hours: float | None
    prn: bool = False
    # Keys of conditions or stay flags ("ventilated", "pressor") that bring the drug, and the
    # chance they do; with no indications, ``probability`` is the chance for any admission.
    indications: tuple[str, ...] = ()
    probability: float = 0.8
    drug_type: str = "MAIN"

    @property
    def emar_route(self) -> str | None:
        """emar_detail.route spells oral routes 'PO'; other routes are left empty there."""
        return "PO" if self.route in ("PO", "PO/NG") else None


DRUGS: tuple[Drug, ...] = (
    # ------------------------------------------------------------ ward basics
    Drug("Sodium Chloride 0.9%  Flush", "IV", "3", "mL", "0.3", "SYR", "10 mL Syringe", "NACLFLUSH", None, "0",
         3.0, "Q8H", "08, 16, 24", "Unit Dose", "IV Flush", 8, probability=0.6),
    Drug("Heparin", "SC", "5000", "UNIT", "1", "mL", "5000 Units / mL- 1mL Vial", "HEPA5I", "006549",
         "63323026201", 3.0, "TID", "08, 14, 20", "Unit Dose", "Standard Maintenance Medication", 8,
         probability=0.45),
    Drug("Acetaminophen", "PO/NG", "650", "mg", "2", "TAB", "325mg Tablet", "ACET325", "004489", "51079000220",
         None, "Q6H:PRN", None, "Unit Dose", "Standard Maintenance Medication", None, prn=True, probability=0.55),
    Drug("Docusate Sodium", "PO/NG", "100", "mg", "1", "CAP", "100mg Capsule", "DOCU100", "003009",
         "00904224461", 2.0, "BID", "08, 20", "Unit Dose", "Standard Maintenance Medication", 12,
         probability=0.35),
    Drug("Senna", "PO/NG", "8.6", "mg", "1", "TAB", "8.6 mg Tablet", "SENN187", "019964", "00904516561", 2.0,
         "BID", "08, 20", "Unit Dose", "Standard Maintenance Medication", 12, probability=0.3),
    Drug("Ondansetron", "IV", "4", "mg", "1", "VIAL", "2mg/mL-2mL", "ONDAN4I", "061716", "00641607825", None,
         "Q8H:PRN", None, "Unit Dose", "Standard Maintenance Medication", None, prn=True, probability=0.3),
    Drug("OxyCODONE (Immediate Release)", "PO/NG", "5", "mg", "1", "TAB", "5mg Tablet", "OXYC5", "004225",
         "00904644461", None, "Q4H:PRN", None, "Unit Dose", "Standard Maintenance Medication", None, prn=True,
         probability=0.2),
    Drug("Polyethylene Glycol", "PO/NG", "17", "g", "1", "PKT", "17g Packet", "GLYC17", "034313", "11523726808",
         1.0, "DAILY", "08", "Unit Dose", "Standard Maintenance Medication", 24, probability=0.2),
    Drug("Famotidine", "IV", "20", "mg", "1", "BAG", "20mg Premix Bag", "FAMO20PM", "021732", "00338519741", 2.0,
         "Q12H", "08, 20", "IV Piggyback", "IV Infusion", 12, probability=0.1),
    # ------------------------------------------------------------ brought by a condition
    Drug("Insulin", "SC", "0", "UNIT", "0", "VIAL", "100 Units / mL - 10 mL Vial", "HUMU100I", "027413",
         "00002751001", None, "ASDIR", None, "Unit Dose", "Insulin SC Sliding Scale", 6,
         indications=("diabetes",), probability=0.9),
    Drug("Metoprolol Tartrate", "PO/NG", "25", "mg", "1", "TAB", "25mg Tablet", "METO25", "050631",
         "00378001805", 2.0, "BID", "08, 20", "Unit Dose", "Standard Maintenance Medication", 12,
         indications=("afib", "hypertension", "cad", "chf"), probability=0.6),
    Drug("Furosemide", "IV", "20", "mg", "1", "VIAL", "20mg/2mL Vial", "FURO20I", "008205", "00409610202", 2.0,
         "BID", "08, 20", "Unit Dose", "Standard Maintenance Medication", 12, indications=("chf",),
         probability=0.85),
    Drug("Vancomycin", "IV", "1000", "mg", "1", "BAG", "1g Frozen Bag", "VANC1F", "043952", "00338355248", 2.0,
         "Q12H", "08, 20", "IV Piggyback", "IV Infusion", 12, indications=("sepsis", "pneumonia"),
         probability=0.8),
    Drug("Piperacillin-Tazobactam", "IV", "4.5", "g", "1", "BAG", "4.5 g Frozen Bag", "ZOSY4FPB", "040819",
         "00206886202", 3.0, "Q8H", "08, 16, 24", "IV Piggyback", "IV Infusion", 8,
         indications=("sepsis", "pneumonia"), probability=0.6),
    Drug("Ciprofloxacin HCl", "PO/NG", "500", "mg", "1", "TAB", "500mg Tab", "CIPR500", "009510", "68084007001",
         2.0, "Q12H", "08, 20", "Unit Dose", "Standard Maintenance Medication", 12, indications=("uti",),
         probability=0.8),
    Drug("Atorvastatin", "PO/NG", "80", "mg", "1", "TAB", "80mg Tablet", "ATOR80", "045772", "00071015892", 1.0,
         "DAILY", "20", "Unit Dose", "Standard Maintenance Medication", 24,
         indications=("hyperlipidemia", "cad", "stroke"), probability=0.75),
    Drug("Aspirin", "PO/NG", "81", "mg", "1", "TAB", "81mg Tab", "ASA81", "004380", "00904404073", 1.0, "DAILY",
         "08", "Unit Dose", "Standard Maintenance Medication", 24, indications=("cad", "stroke"),
         probability=0.85),
    Drug("Warfarin", "PO/NG", "5", "mg", "1", "TAB", "5mg Tablet", "WARF5", "006562", "00056017275", 1.0,
         "DAILY", "16", "Unit Dose", "Standard Maintenance Medication", 24, indications=("anticoagulation",),
         probability=0.7),
    Drug("Levothyroxine Sodium", "PO/NG", "50", "mcg", "1", "TAB", "50mcg Tablet", "LEVO50", "006649",
         "00074455211", 1.0, "DAILY", "08", "Unit Dose", "Standard Maintenance Medication", 24,
         indications=("hypothyroidism",), probability=0.9),
    Drug("Lisinopril", "PO/NG", "5", "mg", "1", "TAB", "5mg Tablet", "LISI5", "000393", "68084006001", 1.0,
         "DAILY", "08", "Unit Dose", "Standard Maintenance Medication", 24, indications=("hypertension",),
         probability=0.4),
    Drug("Amlodipine", "PO/NG", "10", "mg", "2", "TAB", "5mg Tablet", "AMLO5", "016926", "51079045120", 1.0,
         "DAILY", "08", "Unit Dose", "Standard Maintenance Medication", 24, indications=("hypertension",),
         probability=0.3),
    Drug("Potassium Chloride", "PO", "40", "mEq", "4", "TAB", "10mEq ER Tablet", "MICROK10", "001275",
         "00245004101", 1.0, "ONCE", None, "Unit Dose", "Standard Maintenance Medication", None,
         indications=("hypokalemia",), probability=0.9),
    Drug("Magnesium Sulfate", "IV", "2", "gm", "1", "BAG", "2 g / 50 mL Premix Bag", "MAG2PM", "016546",
         "00409672924", 1.0, "ONCE", None, "IV Piggyback", "IV Infusion", None, indications=("hypomagnesemia",),
         probability=0.9),
    Drug("Albuterol 0.083% Neb Soln", "IH", "1", "NEB", "1", "VIAL", "0.083%;3mL Vial", "ALBU3H", "005039",
         "49502069724", None, "Q6H:PRN", None, "Unit Dose", "Standard Maintenance Medication", None, prn=True,
         indications=("copd", "asthma"), probability=0.8),
    Drug("Ipratropium Bromide Neb", "IH", "1", "NEB", "1", "VIAL", "2.5mL Vial", "IPRA2H", "021700",
         "00487980125", 4.0, "Q6H", "06, 12, 18, 24", "Unit Dose", "Standard Maintenance Medication", 6,
         indications=("copd",), probability=0.6),
    Drug("Sertraline", "PO/NG", "100", "mg", "1", "TAB", "100mg Tablet", "SERT100", "046228", "00904586761", 1.0,
         "DAILY", "08", "Unit Dose", "Standard Maintenance Medication", 24, indications=("depression",),
         probability=0.6),
    Drug("Lorazepam", "IV", "0.5", "mg", "0.25", "mL", "2mg/mL Syringe", "LORA2I", "003753", "00409198530", None,
         "Q4H:PRN", None, "Unit Dose", "Standard Maintenance Medication", None, prn=True,
         indications=("anxiety",), probability=0.5),
    Drug("Allopurinol", "PO/NG", "100", "mg", "1", "TAB", "100mg Tab", "ALLO100", "002535", "51079020520", 1.0,
         "DAILY", "08", "Unit Dose", "Standard Maintenance Medication", 24, indications=("gout",),
         probability=0.8),
    Drug("Pantoprazole", "PO", "40", "mg", "1", "TAB", "40mg Tablet", "PANT40", "027462", "00904623561", 1.0,
         "DAILY", "08", "Unit Dose", "Standard Maintenance Medication", 24, indications=("gerd", "gi_bleed"),
         probability=0.7),
    Drug("NORepinephrine", "IV DRIP", "8", "mg", "1", "BAG", "8 mg / 250 mL Premix Bag", "NORE8/250N", "066419",
         "61553012011", None, "TITRATE TO", None, "IV Piggyback", "IV Infusion", None,
         indications=("pressor",), probability=1.0),
    Drug("Propofol", "IV DRIP", "1000", "mg", "1", "VIAL", "1000mg/100mL Vial", "PROP100IG", "016796",
         "63323026965", 0.0, "TITRATE TO RASS", None, "Unit Dose", "IV Infusion", None,
         indications=("ventilated",), probability=0.9),
)
DRUG_NAMES = tuple(d.drug for d in DRUGS)
assert len(set(DRUG_NAMES)) == len(DRUGS), "drug names must be unique"

# Continuous infusions are charted in the ICU flowsheet (inputevents), not as eMAR doses; their eMAR
# rows record starting the infusion, once.
INFUSIONS = frozenset({"NORepinephrine", "Propofol"})
