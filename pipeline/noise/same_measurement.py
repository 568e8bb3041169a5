"""Chart items that record one measurement under two labels.

MIMIC-IV charts an arterial line's pressures as "Arterial Blood Pressure systolic" or, from another
monitor, "ART BP Systolic"; a ventilated patient's breathing as "Respiratory Rate (Total)" beside the
plain "Respiratory Rate"; a temperature in Fahrenheit or Celsius; a cuff pressure taken by hand as
"Manual Blood Pressure Systolic Left". A clinician asked for one of them answers from the other. (The
MIT-LCP mimic-code `vitalsign` concept pools the two arterial labels and the respiratory rates too; it
also pools cuff with arterial pressures, which these groups do not: a patient with a cuff reading and no
arterial line has no arterial pressure. The manual cuff readings are this project's addition.) So a
false premise never presumes a name whose measurement the patient has under another label: the
question would not be false.
"""

from collections.abc import Iterable

SAME_MEASUREMENT: tuple[frozenset[str], ...] = tuple(frozenset(group) for group in (
    ("Arterial Blood Pressure systolic", "ART BP Systolic"),
    ("Arterial Blood Pressure diastolic", "ART BP Diastolic"),
    ("Arterial Blood Pressure mean", "ART BP Mean"),
    ("Non Invasive Blood Pressure systolic", "Manual Blood Pressure Systolic Left",
     "Manual Blood Pressure Systolic Right"),
    ("Non Invasive Blood Pressure diastolic", "Manual Blood Pressure Diastolic Left",
     "Manual Blood Pressure Diastolic Right"),
    ("Respiratory Rate", "Respiratory Rate (Total)", "Respiratory Rate (spontaneous)"),
    ("Temperature Fahrenheit", "Temperature Celsius"),
))

_GROUP_OF: dict[str, frozenset[str]] = {
    name.casefold(): frozenset(n.casefold() for n in group) for group in SAME_MEASUREMENT for name in group}


def measured_alike(folded_names: Iterable[str]) -> set[str]:
    """The case-folded names that record what any of ``folded_names`` (case-folded) records, themselves
    included."""
    out = set(folded_names)
    for name in list(out):
        out |= _GROUP_OF.get(name, frozenset())
    return out
