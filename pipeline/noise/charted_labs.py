"""Lab results the ICU charts a second time: a ``labevents`` item and the ``chartevents`` items of
category "Labs" that record the same result for an ICU patient.

MIMIC-IV's ICU charting system imports many lab results: the ICU chart holds the result under an item
of its own (``d_items`` category "Labs": "Potassium (serum)" for the laboratory's "Potassium"), for the
same patient at the same ``charttime``, with the same value. A copy is found by patient, time and the
chart's item for the lab's (not by value: the copy of a result made implausible still holds the true
one; a blood gas and a blood count haemoglobin drawn together share one chart item, and either counts
as copied). Such a lab row has a copy, as an ICU stay
has one in ``transfers`` (``row_roles.RowRoles.recorded_also_in``): hiding it does not make the result
missing, duplicating it with another value leaves the copy to say which value is right, and setting
an implausible value aside is not what a reader does when the chart still holds the result.

MIMIC-IV ships no such map. This one was read off the MIMIC-IV demo's ``labevents`` and a reconstruction
of its ``chartevents`` (from PhysioNet's MEDS conversion of the demo, whose item ids, times and numeric
values survive; the counts below are of that reconstruction, not official demo figures): for each chart
item of category "Labs", the lab item whose rows match its rows most often (same subject, time and
value: 24,135 of the 24,310 rows of the 89 chart items with a match; 85 of them match in at least 95% of
their rows), and the blood gas hemoglobin (50811) that the chart records under "Hemoglobin" beside the
complete blood count's (51222). A second lab item matching a chart item now and then (eosinophils and
basophils are both often 0) is a coincidence, not a copy. Item ids are the same in every MIMIC-IV
release; a source without these items simply has no copies.
"""

# labevents itemid -> the chartevents itemids the ICU charts the same result under.
CHARTED_AS: dict[int, tuple[int, ...]] = {
    50802: (224828,),  # Base Excess: Arterial Base Excess
    50804: (223679, 225698),  # Calculated Total CO2: TCO2 (calc) Venous; TCO2 (calc) Arterial
    50806: (226536,),  # Chloride, Whole Blood: Chloride (whole blood)
    50808: (225667,),  # Free Calcium: Ionized Calcium
    50809: (226537,),  # Glucose: Glucose (whole blood)
    50810: (226540,),  # Hematocrit, Calculated: Hematocrit (whole blood - calc)
    50811: (220228,),  # Hemoglobin: Hemoglobin
    50813: (225668,),  # Lactate: Lactic Acid
    # Oxygen Saturation: Arterial O2 Saturation; Mixed Venous O2% Sat; Central Venous O2% Sat
    50817: (220227, 225674, 227686),
    50818: (220235, 226062),  # pCO2: Arterial CO2 Pressure; Venous CO2 Pressure
    50820: (220274, 223830),  # pH: PH (Venous); PH (Arterial)
    50821: (220224, 226063, 227516),  # pO2: Arterial O2 pressure; Venous O2 Pressure; PO2 (Mixed Venous)
    50822: (227464,),  # Potassium, Whole Blood: Potassium (whole blood)
    50824: (226534,),  # Sodium, Whole Blood: Sodium (whole blood)
    50861: (220644,),  # Alanine Aminotransferase (ALT): ALT
    50862: (227456,),  # Albumin: Albumin
    50863: (225612,),  # Alkaline Phosphatase: Alkaline Phosphate
    50866: (220580,),  # Ammonia: Ammonia
    50867: (220581,),  # Amylase: Amylase
    50868: (227073,),  # Anion Gap: Anion gap
    50878: (220587,),  # Asparate Aminotransferase (AST): AST
    50882: (227443,),  # Bicarbonate: HCO3 (serum)
    50883: (225651,),  # Bilirubin, Direct: Direct Bilirubin
    50885: (225690,),  # Bilirubin, Total: Total Bilirubin
    50889: (227444,),  # C-Reactive Protein: C Reactive Protein (CRP)
    50893: (225625,),  # Calcium, Total: Calcium non-ionized
    50902: (220602,),  # Chloride: Chloride (serum)
    50904: (220624,),  # Cholesterol, HDL: HDL
    50905: (225671,),  # Cholesterol, LDL, Calculated: LDL calculated
    50906: (227441,),  # Cholesterol, LDL, Measured: LDL measured
    50907: (220603,),  # Cholesterol, Total: Cholesterol
    50908: (225628,),  # CK-MB Index: CK-MB fraction (%)
    50909: (227463,),  # Cortisol: Cortisol
    50910: (225634,),  # Creatine Kinase (CK): CK (CPK)
    50911: (227445,),  # Creatine Kinase, MB Isoenzyme: CK-MB
    50912: (220615,),  # Creatinine: Creatinine (serum)
    50917: (227440,),  # Digoxin: Digoxin
    50931: (220621,),  # Glucose: Glucose (serum)
    50954: (220632,),  # Lactate Dehydrogenase (LD): LDH
    50956: (225672,),  # Lipase: Lipase
    50960: (220635,),  # Magnesium: Magnesium
    50963: (227446,),  # NTproBNP: Brain Natiuretic Peptide (BNP)
    50964: (225684,),  # Osmolality, Measured: Serum Osmolality
    50966: (227460,),  # Phenobarbital: Phenobarbital
    50967: (227461,),  # Phenytoin: Phenytoin (Dilantin)
    50970: (225677,),  # Phosphate: Phosphorous
    50971: (227442,),  # Potassium: Potassium (serum)
    50976: (220650,),  # Protein, Total: Total Protein
    50983: (220645,),  # Sodium: Sodium (serum)
    50997: (227450, 227451),  # Tobramycin: Tobramycin (Peak); Tobramycin (Random)
    51000: (225693,),  # Triglycerides: Triglyceride
    51003: (227429,),  # Troponin T: Troponin-T
    51006: (225624,),  # Urea Nitrogen: BUN
    51007: (225695,),  # Uric Acid: Uric Acid
    51009: (227454, 227455),  # Vancomycin: Vancomycin (Random); Vancomycin (Trough)
    51133: (229358,),  # Absolute Lymphocyte Count: Absolute Count - Lymphs
    51143: (225637,),  # Atypical Lymphocytes: Differential-Atyps
    51144: (225638,),  # Bands: Differential-Bands
    51146: (225639,),  # Basophils: Differential-Basos
    51200: (225640,),  # Eosinophils: Differential-Eos
    51214: (227468,),  # Fibrinogen, Functional: Fibrinogen
    51221: (220545,),  # Hematocrit: Hematocrit (serum)
    51222: (220228,),  # Hemoglobin: Hemoglobin
    51237: (227467,),  # INR(PT): INR
    51244: (225641,),  # Lymphocytes: Differential-Lymphs
    51254: (225642,),  # Monocytes: Differential-Monos
    51256: (225643,),  # Neutrophils: Differential-Neuts
    51265: (227457,),  # Platelet Count: Platelet Count
    51274: (227465,),  # PT: Prothrombin time
    51275: (227466,),  # PTT: PTT
    51288: (227470,),  # Sedimentation Rate: Sed Rate
    51297: (227469,),  # Thrombin: Thrombin
    51301: (220546,),  # White Blood Cells: WBC
    51491: (220734,),  # pH: PH (dipstick)
    51498: (227471,),  # Specific Gravity: Specific Gravity (urine)
    52069: (229361,),  # Absolute Basophil Count: Absolute Count - Basos
    52073: (229360,),  # Absolute Eosinophil Count: Absolute Count - Eos
    52074: (229359,),  # Absolute Monocyte Count: Absolute Count - Monos
    52075: (229355, 229357),  # Absolute Neutrophil Count: Absolute Neutrophil Count; Absolute Count - Neuts
    52135: (229356,),  # Immature Granulocytes: Differential - Immature Granulocytes
}

# chartevents itemid -> the labevents itemids whose results it charts.
CHARTED_FROM: dict[int, tuple[int, ...]] = {
    chart: tuple(sorted(lab for lab, charts in CHARTED_AS.items() if chart in charts))
    for chart in sorted({c for charts in CHARTED_AS.values() for c in charts})
}
