"""Coded clinical knowledge: diagnoses (as conditions that shape measurements), ICD procedures, DRGs,
HCPCS codes and microbiology (specimens, organisms, antibiotics).

Codes and titles are the real ones (ICD-9-CM / ICD-10-CM / ICD-10-PCS titles as in MIMIC-IV's
d_icd_* tables, HCPCS rows as in d_hcpcs, MS-DRG / APR-DRG descriptions, microbiology item ids
and names as in microbiologyevents). Which patient has what, and how strongly a condition shifts a
value, is this project's invention: plausible, not epidemiology.
"""

from dataclasses import dataclass, field

from pipeline.synthetic import catalog as c

# Lab and vital item ids used in the shifts below.
SODIUM, POTASSIUM, CHLORIDE, BICARB, BUN, CREAT, GLUCOSE = 50983, 50971, 50902, 50882, 51006, 50912, 50931
MAGNESIUM, CALCIUM, PHOSPHATE = 50960, 50893, 50970
WBC, HGB, PLATELETS, INR, ALT, AST, BILI, ALBUMIN = 51301, 51222, 51265, 51237, 50861, 50878, 50885, 50862
LACTATE, PH, PCO2, TROPONIN = 50813, 50820, 50818, 51003


@dataclass(frozen=True)
class Condition:
    """A diagnosis: its ICD-9 and ICD-10 codes, how often it occurs and what it does to the record.

    Shifts are in standard-deviation units of the item's distribution (``catalog.Distribution``),
    applied to every measurement of the item during an admission coded with the condition.
    """

    key: str
    icd9: str
    icd10: str
    chronic_prevalence: float = 0.0  # chance a patient has it for life (conditional on ``given``)
    given: str | None = None  # chronic only among patients with this condition
    principal_weight: float = 0.0  # weight as the reason for an admission
    secondary_prob: float = 0.0  # chance it complicates an admission (conditional on ``given``)
    service: str = "MED"
    icu_prob: float = 0.25  # chance of an ICU stay when it is the reason for admission
    death_prob: float = 0.0  # extra chance of in-hospital death when it is the reason for admission
    drg: tuple[str, str] | None = None  # MS-DRG (code, description) when principal
    apr: tuple[str, str] | None = None  # APR-DRG (code, description) when principal
    lab_shift: dict[int, float] = field(default_factory=dict)
    vital_shift: dict[int, float] = field(default_factory=dict)
    infection: bool = False
    procedures: tuple[str, ...] = ()  # keys of ICD_PROCEDURES performed when principal


CONDITIONS: tuple[Condition, ...] = (
    # ------------------------------------------------------------ chronic
    Condition("hypertension", "4019", "I10", chronic_prevalence=0.45,
              vital_shift={c.NBP_SYS: 0.8, c.NBP_DIA: 0.5, c.ABP_MEAN: 0.5}),
    Condition("hyperlipidemia", "2724", "E785", chronic_prevalence=0.35),
    Condition("diabetes", "25000", "E119", chronic_prevalence=0.22, lab_shift={GLUCOSE: 1.8}),
    Condition("insulin_use", "V5867", "Z794", chronic_prevalence=0.45, given="diabetes"),
    Condition("ckd", "5859", "N189", chronic_prevalence=0.12,
              lab_shift={CREAT: 2.2, BUN: 1.5, HGB: -0.8, POTASSIUM: 0.4, BICARB: -0.5, PHOSPHATE: 0.8}),
    Condition("chf", "4280", "I509", chronic_prevalence=0.12, principal_weight=8, icu_prob=0.25,
              death_prob=0.04, service="CMED", drg=("291", "HEART FAILURE & SHOCK W MCC"),
              apr=("194", "HEART FAILURE"), lab_shift={BUN: 0.6, SODIUM: -0.5, CREAT: 0.4},
              vital_shift={c.SPO2: -0.4, c.RESP_RATE: 0.4}, procedures=("echo",)),
    Condition("afib", "42731", "I4891", chronic_prevalence=0.14, principal_weight=5, icu_prob=0.15,
              service="CMED", drg=("308", "CARDIAC ARRHYTHMIA & CONDUCTION DISORDERS W MCC"),
              apr=("201", "CARDIAC ARRHYTHMIA & CONDUCTION DISORDERS"), vital_shift={c.HEART_RATE: 0.9}),
    Condition("anticoagulation", "V5861", "Z7901", chronic_prevalence=0.6, given="afib", lab_shift={INR: 1.5}),
    Condition("cad", "41401", "I2510", chronic_prevalence=0.16, principal_weight=5, icu_prob=0.2,
              service="CMED", drg=("247", "PERC CARDIOVASC PROC W DRUG-ELUTING STENT W/O MCC"),
              apr=("175", "PERCUTANEOUS CORONARY INTERVENTION W/O AMI"), lab_shift={TROPONIN: 1.0},
              procedures=("coronary_stent", "coronary_angiography")),
    Condition("copd", "496", "J449", chronic_prevalence=0.08, principal_weight=4, icu_prob=0.2,
              drg=("190", "CHRONIC OBSTRUCTIVE PULMONARY DISEASE W MCC"),
              apr=("140", "CHRONIC OBSTRUCTIVE PULMONARY DISEASE"), lab_shift={PCO2: 1.0, BICARB: 0.6},
              vital_shift={c.SPO2: -0.7, c.RESP_RATE: 0.5}),
    Condition("asthma", "49390", "J45909", chronic_prevalence=0.05),
    Condition("hypothyroidism", "2449", "E039", chronic_prevalence=0.10),
    Condition("depression", "311", "F329", chronic_prevalence=0.12),
    Condition("anxiety", "30000", "F419", chronic_prevalence=0.08),
    Condition("gerd", "53081", "K219", chronic_prevalence=0.12),
    # Obesity follows the patient's drawn BMI (see patients.py), not a prevalence.
    Condition("obesity", "27800", "E669"),
    Condition("tobacco", "3051", "F17210", chronic_prevalence=0.08),
    Condition("tobacco_history", "V1582", "Z87891", chronic_prevalence=0.15),
    Condition("osa", "32723", "G4733", chronic_prevalence=0.06),
    Condition("gout", "2749", "M109", chronic_prevalence=0.04),
    Condition("chronic_anemia", "2859", "D649", chronic_prevalence=0.10, lab_shift={HGB: -1.2}),
    Condition("cirrhosis", "5715", "K7469", chronic_prevalence=0.03, principal_weight=1.5, icu_prob=0.3,
              death_prob=0.06, drg=("432", "CIRRHOSIS & ALCOHOLIC HEPATITIS W MCC"),
              apr=("279", "HEPATIC COMA & OTHER MAJOR ACUTE LIVER DISORDERS"),
              lab_shift={BILI: 2.0, AST: 1.3, ALT: 0.9, ALBUMIN: -1.3, INR: 1.3, PLATELETS: -1.3}),
    # ------------------------------------------------------------ reasons for admission
    Condition("sepsis", "0389", "A419", principal_weight=8, icu_prob=0.65, death_prob=0.12,
              drg=("871", "SEPTICEMIA OR SEVERE SEPSIS W/O MV >96 HOURS W MCC"),
              apr=("720", "SEPTICEMIA & DISSEMINATED INFECTIONS"),
              lab_shift={WBC: 2.0, LACTATE: 2.0, PLATELETS: -0.8, BICARB: -1.0, CREAT: 0.8},
              vital_shift={c.HEART_RATE: 1.5, c.TEMP_F: 1.5, c.NBP_SYS: -1.2, c.ABP_MEAN: -1.2,
                           c.RESP_RATE: 1.0},
              infection=True),
    Condition("pneumonia", "486", "J189", principal_weight=10, icu_prob=0.3, death_prob=0.04,
              drg=("193", "SIMPLE PNEUMONIA & PLEURISY W MCC"), apr=("139", "OTHER PNEUMONIA"),
              lab_shift={WBC: 1.5}, vital_shift={c.TEMP_F: 1.0, c.RESP_RATE: 1.0, c.SPO2: -1.0, c.HEART_RATE: 0.5},
              infection=True),
    Condition("uti", "5990", "N390", principal_weight=6, secondary_prob=0.07, icu_prob=0.1,
              drg=("690", "KIDNEY & URINARY TRACT INFECTIONS W/O MCC"),
              apr=("463", "KIDNEY & URINARY TRACT INFECTIONS"), lab_shift={WBC: 0.6}, infection=True),
    Condition("aki", "5849", "N179", principal_weight=5, secondary_prob=0.12, icu_prob=0.2, death_prob=0.03,
              drg=("682", "RENAL FAILURE W MCC"), apr=("469", "ACUTE KIDNEY INJURY"),
              lab_shift={CREAT: 2.5, BUN: 2.0, POTASSIUM: 0.8, BICARB: -0.8}, vital_shift={c.FOLEY: -1.0},
              procedures=("hemodialysis",)),
    Condition("resp_failure", "51881", "J9600", principal_weight=4, secondary_prob=0.04, icu_prob=0.95,
              death_prob=0.12, drg=("189", "PULMONARY EDEMA & RESPIRATORY FAILURE"),
              apr=("133", "RESPIRATORY FAILURE"),
              lab_shift={LACTATE: 0.8, PCO2: 1.5, PH: -1.5},
              vital_shift={c.SPO2: -1.5, c.RESP_RATE: 1.5, c.HEART_RATE: 0.6}),
    Condition("gi_bleed", "5789", "K922", principal_weight=5, icu_prob=0.35, death_prob=0.03,
              drg=("377", "G.I. HEMORRHAGE W MCC"), apr=("253", "OTHER & UNSPECIFIED GASTROINTESTINAL HEMORRHAGE"),
              lab_shift={HGB: -2.2, BUN: 1.0}, vital_shift={c.HEART_RATE: 0.8, c.NBP_SYS: -0.8},
              procedures=("egd", "transfusion")),
    Condition("stroke", "43491", "I639", principal_weight=4, icu_prob=0.5, death_prob=0.06, service="NMED",
              drg=("065", "INTRACRANIAL HEMORRHAGE OR CEREBRAL INFARCTION W CC OR TPA IN 24 HRS"),
              apr=("045", "CVA & PRECEREBRAL OCCLUSION W INFARCT"), vital_shift={c.NBP_SYS: 1.0}),
    Condition("ich", "431", "I619", principal_weight=1.5, icu_prob=0.9, death_prob=0.2, service="NSURG",
              drg=("064", "INTRACRANIAL HEMORRHAGE OR CEREBRAL INFARCTION W MCC"),
              apr=("044", "INTRACRANIAL HEMORRHAGE"), vital_shift={c.NBP_SYS: 1.2, c.ABP_MEAN: 1.0}),
    Condition("pancreatitis", "5770", "K859", principal_weight=2.5, icu_prob=0.2,
              drg=("439", "DISORDERS OF PANCREAS EXCEPT MALIGNANCY W CC"),
              apr=("282", "DISORDERS OF PANCREAS EXCEPT MALIGNANCY"),
              lab_shift={WBC: 1.0, GLUCOSE: 0.6, CALCIUM: -0.8}),
    Condition("diverticulitis", "56211", "K5732", principal_weight=2, icu_prob=0.05, service="SURG",
              drg=("392", "ESOPHAGITIS, GASTROENT & MISC DIGEST DISORDERS W/O MCC"),
              apr=("244", "DIVERTICULITIS & DIVERTICULOSIS"), lab_shift={WBC: 1.0}),
    Condition("syncope", "7802", "R55", principal_weight=3, icu_prob=0.05, service="CMED",
              drg=("312", "SYNCOPE & COLLAPSE"), apr=("204", "SYNCOPE & COLLAPSE")),
    Condition("chest_pain", "78650", "R079", principal_weight=4, icu_prob=0.05, service="CMED",
              drg=("313", "CHEST PAIN"), apr=("203", "CHEST PAIN")),
    Condition("altered_mental_status", "78097", "R4182", principal_weight=2, icu_prob=0.15,
              drg=("948", "SIGNS & SYMPTOMS W/O MCC"), apr=("052", "ALTERATION IN CONSCIOUSNESS")),
    Condition("aortic_stenosis", "4241", "I350", principal_weight=2, icu_prob=0.85, death_prob=0.03,
              service="CSURG", drg=("220", "CARDIAC VALVE & OTH MAJ CARDIOTHORACIC PROC W/O CARD CATH W CC"),
              apr=("163", "CARDIAC VALVE PROCEDURES W/O AMI OR COMPLEX PDX"),
              procedures=("valve_replacement", "echo")),
    Condition("hip_fracture", "82021", "S72141A", principal_weight=2.5, icu_prob=0.25, death_prob=0.02,
              service="TRAUM", drg=("480", "HIP & FEMUR PROCEDURES EXCEPT MAJOR JOINT W MCC"),
              apr=("308", "HIP & FEMUR FRACTURE REPAIR"), lab_shift={HGB: -0.8}, procedures=("femur_fixation",)),
    Condition("lung_cancer", "1629", "C3490", chronic_prevalence=0.02, principal_weight=1.5, icu_prob=0.15,
              death_prob=0.08, service="OMED", drg=("180", "RESPIRATORY NEOPLASMS W MCC"),
              apr=("136", "RESPIRATORY MALIGNANCY"), lab_shift={HGB: -0.6, CALCIUM: 0.5},
              procedures=("bronchoscopic_biopsy",)),
    Condition("bowel_obstruction", "5609", "K5660", principal_weight=2, icu_prob=0.2, death_prob=0.02,
              service="SURG", drg=("389", "G.I. OBSTRUCTION W CC"), apr=("247", "INTESTINAL OBSTRUCTION"),
              lab_shift={WBC: 0.6, BICARB: 0.5, POTASSIUM: -0.5}, procedures=("small_bowel_excision",)),
    # ------------------------------------------------------------ complications
    Condition("septic_shock", "78552", "R6521", secondary_prob=0.35, given="sepsis",
              vital_shift={c.NBP_SYS: -1.0, c.ABP_MEAN: -1.0}, lab_shift={LACTATE: 1.0}),
    Condition("hyponatremia", "2761", "E871", secondary_prob=0.08, lab_shift={SODIUM: -2.5, CHLORIDE: -1.2}),
    Condition("hyperkalemia", "2767", "E875", secondary_prob=0.04, lab_shift={POTASSIUM: 2.5}),
    Condition("hypokalemia", "2768", "E876", secondary_prob=0.08, lab_shift={POTASSIUM: -2.5}),
    Condition("hypomagnesemia", "2752", "E8342", secondary_prob=0.05, lab_shift={MAGNESIUM: -2.5}),
    Condition("thrombocytopenia", "2875", "D696", secondary_prob=0.06, lab_shift={PLATELETS: -2.2}),
    Condition("blood_loss_anemia", "2851", "D62", secondary_prob=0.05, lab_shift={HGB: -1.5}),
    Condition("hypotension", "4589", "I959", secondary_prob=0.05, vital_shift={c.NBP_SYS: -1.0, c.ABP_MEAN: -0.8}),
    Condition("dehydration", "27651", "E860", secondary_prob=0.05, lab_shift={BUN: 0.8, SODIUM: 0.6}),
    # Coded on admissions that end in death (and a few others), see encounters.py.
    Condition("dnr", "V4986", "Z66"),
)
CONDITION_INDEX: dict[str, int] = {cond.key: i for i, cond in enumerate(CONDITIONS)}
assert len(CONDITION_INDEX) == len(CONDITIONS), "condition keys must be unique"
INFECTIONS: frozenset[str] = frozenset(cond.key for cond in CONDITIONS if cond.infection)

# Real titles of every diagnosis code above, plus codes no synthetic patient gets: the dictionary
# must hold every code used, and like MIMIC-IV's it holds more.
ICD_DIAGNOSIS_TITLES: dict[tuple[str, int], str] = {
    ("0389", 9): "Unspecified septicemia",
    ("2449", 9): "Unspecified acquired hypothyroidism",
    ("25000", 9): "Diabetes mellitus without mention of complication, type II or unspecified type, "
                  "not stated as uncontrolled",
    ("2724", 9): "Other and unspecified hyperlipidemia",
    ("2749", 9): "Gout, unspecified",
    ("2752", 9): "Disorders of magnesium metabolism",
    ("2761", 9): "Hyposmolality and/or hyponatremia",
    ("27651", 9): "Dehydration",
    ("2767", 9): "Hyperpotassemia",
    ("2768", 9): "Hypopotassemia",
    ("27800", 9): "Obesity, unspecified",
    ("2851", 9): "Acute posthemorrhagic anemia",
    ("2859", 9): "Anemia, unspecified",
    ("2875", 9): "Thrombocytopenia, unspecified",
    ("30000", 9): "Anxiety state, unspecified",
    ("3051", 9): "Tobacco use disorder",
    ("311", 9): "Depressive disorder, not elsewhere classified",
    ("32723", 9): "Obstructive sleep apnea (adult)(pediatric)",
    ("4019", 9): "Unspecified essential hypertension",
    ("41401", 9): "Coronary atherosclerosis of native coronary artery",
    ("42731", 9): "Atrial fibrillation",
    ("4280", 9): "Congestive heart failure, unspecified",
    ("431", 9): "Intracerebral hemorrhage",
    ("43491", 9): "Cerebral artery occlusion, unspecified with cerebral infarction",
    ("4589", 9): "Hypotension, unspecified",
    ("486", 9): "Pneumonia, organism unspecified",
    ("49390", 9): "Asthma, unspecified type, unspecified",
    ("496", 9): "Chronic airway obstruction, not elsewhere classified",
    ("51881", 9): "Acute respiratory failure",
    ("53081", 9): "Esophageal reflux",
    ("56211", 9): "Diverticulitis of colon (without mention of hemorrhage)",
    ("5715", 9): "Cirrhosis of liver without mention of alcohol",
    ("5770", 9): "Acute pancreatitis",
    ("5789", 9): "Hemorrhage of gastrointestinal tract, unspecified",
    ("5849", 9): "Acute kidney failure, unspecified",
    ("5859", 9): "Chronic kidney disease, unspecified",
    ("5990", 9): "Urinary tract infection, site not specified",
    ("7802", 9): "Syncope and collapse",
    ("78097", 9): "Altered mental status",
    ("78552", 9): "Septic shock",
    ("78650", 9): "Chest pain, unspecified",
    ("V1582", 9): "Personal history of tobacco use",
    ("V4986", 9): "Do not resuscitate status",
    ("V5861", 9): "Long-term (current) use of anticoagulants",
    ("V5867", 9): "Long-term (current) use of insulin",
    ("A419", 10): "Sepsis, unspecified organism",
    ("D62", 10): "Acute posthemorrhagic anemia",
    ("D649", 10): "Anemia, unspecified",
    ("D696", 10): "Thrombocytopenia, unspecified",
    ("E039", 10): "Hypothyroidism, unspecified",
    ("E119", 10): "Type 2 diabetes mellitus without complications",
    ("E669", 10): "Obesity, unspecified",
    ("E785", 10): "Hyperlipidemia, unspecified",
    ("E8342", 10): "Hypomagnesemia",
    ("E860", 10): "Dehydration",
    ("E871", 10): "Hypo-osmolality and hyponatremia",
    ("E875", 10): "Hyperkalemia",
    ("E876", 10): "Hypokalemia",
    ("F17210", 10): "Nicotine dependence, cigarettes, uncomplicated",
    ("F329", 10): "Major depressive disorder, single episode, unspecified",
    ("F419", 10): "Anxiety disorder, unspecified",
    ("G4733", 10): "Obstructive sleep apnea (adult) (pediatric)",
    ("I10", 10): "Essential (primary) hypertension",
    ("I2510", 10): "Atherosclerotic heart disease of native coronary artery without angina pectoris",
    ("I4891", 10): "Unspecified atrial fibrillation",
    ("I509", 10): "Heart failure, unspecified",
    ("I619", 10): "Nontraumatic intracerebral hemorrhage, unspecified",
    ("I639", 10): "Cerebral infarction, unspecified",
    ("I959", 10): "Hypotension, unspecified",
    ("J189", 10): "Pneumonia, unspecified organism",
    ("J449", 10): "Chronic obstructive pulmonary disease, unspecified",
    ("J45909", 10): "Unspecified asthma, uncomplicated",
    ("J9600", 10): "Acute respiratory failure, unspecified whether with hypoxia or hypercapnia",
    ("K219", 10): "Gastro-esophageal reflux disease without esophagitis",
    ("K5732", 10): "Diverticulitis of large intestine without perforation or abscess without bleeding",
    ("K7469", 10): "Other cirrhosis of liver",
    ("K859", 10): "Acute pancreatitis, unspecified",
    ("K922", 10): "Gastrointestinal hemorrhage, unspecified",
    ("M109", 10): "Gout, unspecified",
    ("N179", 10): "Acute kidney failure, unspecified",
    ("N189", 10): "Chronic kidney disease, unspecified",
    ("N390", 10): "Urinary tract infection, site not specified",
    ("R079", 10): "Chest pain, unspecified",
    ("R4182", 10): "Altered mental status, unspecified",
    ("R55", 10): "Syncope and collapse",
    ("R6521", 10): "Severe sepsis with septic shock",
    ("Z66", 10): "Do not resuscitate",
    ("Z7901", 10): "Long term (current) use of anticoagulants",
    ("Z794", 10): "Long term (current) use of insulin",
    ("Z87891", 10): "Personal history of nicotine dependence",
    ("4241", 9): "Aortic valve disorders",
    ("82021", 9): "Closed fracture of intertrochanteric section of neck of femur",
    ("1629", 9): "Malignant neoplasm of bronchus and lung, unspecified",
    ("5609", 9): "Unspecified intestinal obstruction",
    ("I350", 10): "Nonrheumatic aortic (valve) stenosis",
    ("S72141A", 10): "Displaced intertrochanteric fracture of right femur, initial encounter for closed fracture",
    ("C3490", 10): "Malignant neoplasm of unspecified part of unspecified bronchus or lung",
    ("K5660", 10): "Unspecified intestinal obstruction",
    # never assigned
    ("2720", 9): "Pure hypercholesterolemia",
    ("2762", 9): "Acidosis",
    ("27542", 9): "Hypercalcemia",
    ("2800", 9): "Iron deficiency anemia secondary to blood loss (chronic)",
    ("2809", 9): "Iron deficiency anemia, unspecified",
    ("40390", 9): "Hypertensive chronic kidney disease, unspecified, with chronic kidney disease stage I "
                  "through stage IV, or unspecified",
    ("5845", 9): "Acute kidney failure with lesion of tubular necrosis",
    ("5853", 9): "Chronic kidney disease, Stage III (moderate)",
    ("99592", 9): "Severe sepsis",
    ("V1046", 9): "Personal history of malignant neoplasm of prostate",
    ("V4582", 9): "Percutaneous transluminal coronary angioplasty status",
    ("V5866", 9): "Long-term (current) use of aspirin",
    ("C349", 10): "Malignant neoplasm of unspecified part of bronchus or lung",
    ("D509", 10): "Iron deficiency anemia, unspecified",
    ("E1122", 10): "Type 2 diabetes mellitus with diabetic chronic kidney disease",
    ("E8770", 10): "Fluid overload, unspecified",
    ("I129", 10): "Hypertensive chronic kidney disease with stage 1 through stage 4 chronic kidney disease, "
                  "or unspecified chronic kidney disease",
    ("I5033", 10): "Acute on chronic diastolic (congestive) heart failure",
    ("N170", 10): "Acute kidney failure with tubular necrosis",
    ("N183", 10): "Chronic kidney disease, stage 3 (moderate)",
    ("R6520", 10): "Severe sepsis without septic shock",
    ("Z7902", 10): "Long term (current) use of antithrombotics/antiplatelets",
    ("Z7982", 10): "Long term (current) use of aspirin",
    ("Z955", 10): "Presence of coronary angioplasty implant and graft",
}


@dataclass(frozen=True)
class IcdProcedure:
    key: str
    icd9: str | None
    icd10: str | None


ICD_PROCEDURES: tuple[IcdProcedure, ...] = (
    IcdProcedure("vent_short", "9671", "5A1945Z"),
    IcdProcedure("vent_long", "9672", "5A1955Z"),
    IcdProcedure("intubation", "9604", "0BH17EZ"),
    IcdProcedure("central_line", "3893", "02HV33Z"),
    IcdProcedure("arterial_line", "3891", None),
    IcdProcedure("enteral_nutrition", "966", "3E0G76Z"),
    IcdProcedure("hemodialysis", "3995", "5A1D70Z"),
    IcdProcedure("transfusion", "9904", "30233N1"),
    IcdProcedure("egd", "4513", "0DJ08ZZ"),
    IcdProcedure("coronary_stent", "0066", "027034Z"),
    IcdProcedure("coronary_angiography", "8856", "B211YZZ"),
    IcdProcedure("echo", "8872", "B246ZZZ"),
    IcdProcedure("valve_replacement", "3521", "02RF38Z"),
    IcdProcedure("femur_fixation", "7915", "0QS634Z"),
    IcdProcedure("bronchoscopic_biopsy", "3324", "0BBC8ZX"),
    IcdProcedure("small_bowel_excision", "4562", "0DB80ZZ"),
)
ICD_PROCEDURE_INDEX: dict[str, int] = {p.key: i for i, p in enumerate(ICD_PROCEDURES)}

ICD_PROCEDURE_TITLES: dict[tuple[str, int], str] = {
    ("9671", 9): "Continuous invasive mechanical ventilation for less than 96 consecutive hours",
    ("9672", 9): "Continuous invasive mechanical ventilation for 96 consecutive hours or more",
    ("9604", 9): "Insertion of endotracheal tube",
    ("3893", 9): "Venous catheterization, not elsewhere classified",
    ("3891", 9): "Arterial catheterization",
    ("966", 9): "Enteral infusion of concentrated nutritional substances",
    ("3995", 9): "Hemodialysis",
    ("9904", 9): "Transfusion of packed cells",
    ("4513", 9): "Other endoscopy of small intestine",
    ("0066", 9): "Percutaneous transluminal coronary angioplasty [PTCA]",
    ("8856", 9): "Coronary arteriography using two catheters",
    ("8872", 9): "Diagnostic ultrasound of heart",
    ("5A1945Z", 10): "Respiratory Ventilation, 24-96 Consecutive Hours",
    ("5A1955Z", 10): "Respiratory Ventilation, Greater than 96 Consecutive Hours",
    ("0BH17EZ", 10): "Insertion of Endotracheal Airway into Trachea, Via Natural or Artificial Opening",
    ("02HV33Z", 10): "Insertion of Infusion Device into Superior Vena Cava, Percutaneous Approach",
    ("3E0G76Z", 10): "Introduction of Nutritional Substance into Upper GI, Via Natural or Artificial Opening",
    ("5A1D70Z", 10): "Performance of Urinary Filtration, Intermittent, Less than 6 Hours Per Day",
    ("30233N1", 10): "Transfusion of Nonautologous Red Blood Cells into Peripheral Vein, Percutaneous Approach",
    ("0DJ08ZZ", 10): "Inspection of Upper Intestinal Tract, Via Natural or Artificial Opening Endoscopic",
    ("027034Z", 10): "Dilation of Coronary Artery, One Artery with Drug-eluting Intraluminal Device, "
                     "Percutaneous Approach",
    ("B211YZZ", 10): "Fluoroscopy of Multiple Coronary Arteries using Other Contrast",
    ("B246ZZZ", 10): "Ultrasonography of Right and Left Heart",
    ("3521", 9): "Open and other replacement of aortic valve with tissue graft",
    ("7915", 9): "Closed reduction of fracture with internal fixation, femur",
    ("3324", 9): "Closed [endoscopic] biopsy of bronchus",
    ("4562", 9): "Other partial resection of small intestine",
    ("02RF38Z", 10): "Replacement of Aortic Valve with Zooplastic Tissue, Percutaneous Approach",
    ("0QS634Z", 10): "Reposition Right Upper Femur with Internal Fixation Device, Percutaneous Approach",
    ("0BBC8ZX", 10): "Excision of Right Upper Lung Lobe, Via Natural or Artificial Opening Endoscopic, Diagnostic",
    ("0DB80ZZ", 10): "Excision of Small Intestine, Open Approach",
    # never assigned
    ("3897", 9): "Central venous catheter placement with guidance",
    ("4311", 9): "Percutaneous [endoscopic] gastrostomy [PEG]",
    ("4523", 9): "Colonoscopy",
    ("5491", 9): "Percutaneous abdominal drainage",
    ("9390", 9): "Non-invasive mechanical ventilation",
    ("9915", 9): "Parenteral infusion of concentrated nutritional substances",
    ("02H633Z", 10): "Insertion of Infusion Device into Right Atrium, Percutaneous Approach",
    ("0DJD8ZZ", 10): "Inspection of Lower Intestinal Tract, Via Natural or Artificial Opening Endoscopic",
    ("0W9G3ZZ", 10): "Drainage of Peritoneal Cavity, Percutaneous Approach",
    ("5A1935Z", 10): "Respiratory Ventilation, Less than 24 Consecutive Hours",
    ("5A1D90Z", 10): "Performance of Urinary Filtration, Continuous, Greater than 18 hours Per Day",
}


# --------------------------------------------------------------------------- HCPCS

@dataclass(frozen=True)
class Hcpcs:
    code: str
    category: int | None
    long_description: str | None
    short_description: str


HCPCS: tuple[Hcpcs, ...] = (
    Hcpcs("G0378", None, "Hospital observation service, per hour", "Hospital observation per hr"),
    Hcpcs("99291", 1, None, "Critical care services"),
    Hcpcs("92928", None, None, "Cardiovascular"),
    Hcpcs("93306", 1, None, "Cardiovascular"),
    Hcpcs("43239", 1, None, "Digestive system"),
    Hcpcs("99223", 1, None, "Hospital inpatient services"),
    # never assigned
    Hcpcs("C9600", None, "Percutaneous transcatheter placement of drug eluting intracoronary stent(s), with "
          "coronary angioplasty when performed; single major coronary artery or branch",
          "Perc drug-el cor stent sing"),
    Hcpcs("G0390", None, "Trauma response team associated with hospital critical care service",
          "Trauma respons w/hosp criti"),
    Hcpcs("J1100", None, "Injection, dexamethasone sodium phosphate, 1 mg", "Dexamethasone sodium phos"),
    Hcpcs("31500", 1, None, "Respiratory system"),
    Hcpcs("36556", 1, None, "Cardiovascular system"),
    Hcpcs("45378", 1, None, "Digestive system"),
    Hcpcs("71045", 1, None, "Diagnostic imaging"),
    Hcpcs("94003", 1, None, "Pulmonary"),
    Hcpcs("99218", 1, None, "Hospital observation services"),
    Hcpcs("99219", 1, None, "Hospital observation services"),
    Hcpcs("99232", 1, None, "Hospital inpatient services"),
)
HCPCS_INDEX: dict[str, int] = {h.code: i for i, h in enumerate(HCPCS)}
# Which admissions bill which code: observation stays, ICU care, and procedures of the principal condition.
HCPCS_OBSERVATION, HCPCS_CRITICAL_CARE, HCPCS_INPATIENT = "G0378", "99291", "99223"
HCPCS_FOR_CONDITION: dict[str, str] = {"cad": "92928", "chf": "93306", "gi_bleed": "43239"}


# --------------------------------------------------------------------------- microbiology

@dataclass(frozen=True)
class Specimen:
    spec_itemid: int
    spec_type_desc: str
    test_itemid: int
    test_name: str
    negative_comment: str


URINE = Specimen(70079, "URINE", 90039, "URINE CULTURE", "NO GROWTH.")
BLOOD = Specimen(70012, "BLOOD CULTURE", 90201, "Blood Culture, Routine", "NO GROWTH.")
SPUTUM = Specimen(70062, "SPUTUM", 90055, "RESPIRATORY CULTURE", "Commensal Respiratory Flora Absent.")
MRSA = Specimen(70091, "MRSA SCREEN", 90189, "MRSA SCREEN", "No MRSA isolated.")
SPECIMENS: tuple[Specimen, ...] = (URINE, BLOOD, SPUTUM, MRSA)


@dataclass(frozen=True)
class Antibiotic:
    ab_itemid: int
    ab_name: str
    # (dilution_text, dilution_comparison, dilution_value) for S, I and R results; MIMIC-IV pads
    # the comparison to ten characters.
    susceptible: tuple[str, str, float]
    intermediate: tuple[str, str, float]
    resistant: tuple[str, str, float]


def _ab(itemid: int, name: str, s: str, i: str, r: str) -> Antibiotic:
    def parse(text: str) -> tuple[str, str, float]:
        op = "<=" if text.startswith("<=") else "=>" if text.startswith("=>") else "="
        return text, op.ljust(10), float(text.lstrip("<=>"))
    return Antibiotic(itemid, name, parse(s), parse(i), parse(r))


ANTIBIOTICS: tuple[Antibiotic, ...] = (
    _ab(90004, "AMPICILLIN", "<=2", "16", "=>32"),
    _ab(90018, "CEFTRIAXONE", "<=1", "2", "=>64"),
    _ab(90019, "CIPROFLOXACIN", "<=0.25", "2", "=>4"),
    _ab(90012, "GENTAMICIN", "<=1", "8", "=>16"),
    _ab(90008, "TRIMETHOPRIM/SULFA", "<=1", "2", "=>16"),
    _ab(90028, "CEFEPIME", "<=1", "16", "=>64"),
    _ab(90029, "MEROPENEM", "<=0.25", "2", "=>16"),
    _ab(90026, "PIPERACILLIN/TAZO", "<=4", "32", "=>128"),
    _ab(90010, "NITROFURANTOIN", "<=16", "64", "=>128"),
    _ab(90017, "CEFTAZIDIME", "<=1", "16", "=>64"),
    _ab(90013, "TOBRAMYCIN", "<=1", "8", "=>16"),
    _ab(90016, "OXACILLIN", "<=0.25", "2", "=>4"),
    _ab(90015, "VANCOMYCIN", "1", "8", "=>32"),
    _ab(90007, "CLINDAMYCIN", "<=0.25", "1", "=>8"),
)
ANTIBIOTIC_INDEX: dict[str, int] = {a.ab_name: i for i, a in enumerate(ANTIBIOTICS)}

GRAM_NEGATIVE_PANEL = ("AMPICILLIN", "CEFTRIAXONE", "CIPROFLOXACIN", "GENTAMICIN", "TRIMETHOPRIM/SULFA",
                       "CEFEPIME", "MEROPENEM", "PIPERACILLIN/TAZO", "NITROFURANTOIN")
PSEUDOMONAS_PANEL = ("CEFEPIME", "CEFTAZIDIME", "CIPROFLOXACIN", "GENTAMICIN", "MEROPENEM",
                     "PIPERACILLIN/TAZO", "TOBRAMYCIN")
STAPH_PANEL = ("OXACILLIN", "VANCOMYCIN", "CLINDAMYCIN", "TRIMETHOPRIM/SULFA", "GENTAMICIN")
ENTEROCOCCUS_PANEL = ("AMPICILLIN", "VANCOMYCIN", "NITROFURANTOIN")


@dataclass(frozen=True)
class Organism:
    org_itemid: int
    org_name: str
    panel: tuple[str, ...]  # antibiotics tested; empty when none are
    resistance: float  # chance each tested antibiotic reads R (a tenth of the rest read I)
    # Relative frequency by specimen type.
    weights: dict[str, float]


ORGANISMS: tuple[Organism, ...] = (
    Organism(80002, "ESCHERICHIA COLI", GRAM_NEGATIVE_PANEL, 0.2,
             {"URINE": 50, "BLOOD CULTURE": 25, "SPUTUM": 10}),
    Organism(80004, "KLEBSIELLA PNEUMONIAE", GRAM_NEGATIVE_PANEL, 0.2,
             {"URINE": 20, "BLOOD CULTURE": 12, "SPUTUM": 20}),
    Organism(80017, "PROTEUS MIRABILIS", GRAM_NEGATIVE_PANEL, 0.15, {"URINE": 10}),
    Organism(80026, "PSEUDOMONAS AERUGINOSA", PSEUDOMONAS_PANEL, 0.2,
             {"URINE": 5, "BLOOD CULTURE": 5, "SPUTUM": 25}),
    Organism(80023, "STAPH AUREUS COAG +", STAPH_PANEL, 0.3,
             {"BLOOD CULTURE": 25, "SPUTUM": 35, "MRSA SCREEN": 100}),
    Organism(80053, "ENTEROCOCCUS SP.", ENTEROCOCCUS_PANEL, 0.15, {"URINE": 15, "BLOOD CULTURE": 10}),
    Organism(80280, "VIRIDANS STREPTOCOCCI", (), 0.0, {"BLOOD CULTURE": 10}),
    Organism(80075, "YEAST", (), 0.0, {"URINE": 8, "SPUTUM": 10}),
)

# What is cultured: (specimen, chance it grows an organism) per reason, plus screening cultures
# on other admissions.
CULTURES_FOR_INFECTION: dict[str, tuple[tuple[Specimen, float], ...]] = {
    "sepsis": ((BLOOD, 0.4), (BLOOD, 0.4), (URINE, 0.3)),
    "pneumonia": ((SPUTUM, 0.5), (BLOOD, 0.1)),
    "uti": ((URINE, 0.7),),
}
SCREENING_CULTURES: tuple[tuple[Specimen, float], ...] = ((MRSA, 0.05), (URINE, 0.1), (BLOOD, 0.03))
SCREENING_PROBABILITY = 0.15
