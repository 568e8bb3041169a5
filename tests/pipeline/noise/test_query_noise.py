"""Query-level noise helpers, on the real demo's dictionaries."""

import duckdb

from pipeline.noise.case import SourceLookup
from pipeline.noise.query_noise import _one_concept
from pipeline.vocabulary import SlotKind

ICD9 = ("Surgical operation with anastomosis, bypass, or graft, with natural or artificial tissues used as implant "
        "causing abnormal patient reaction, or later complication, without mention of misadventure at time of "
        "operation")
ICD10 = ("Surgical operation with anastomosis, bypass or graft as the cause of abnormal reaction of the patient, or "
         "of later complication, without mention of misadventure at the time of the procedure")


def test_the_icd9_and_icd10_titles_of_one_cause_are_one_concept_whatever_their_commas(demo_db):
    """Second review: E878.2 and Y83.2 made "Surgical operation with anastomosis, bypass" ambiguous, their
    first five words differing only by a comma."""
    with duckdb.connect(str(demo_db), read_only=True) as con:
        lookup = SourceLookup(con)
        assert _one_concept(lookup, SlotKind.DIAGNOSIS, [ICD9, ICD10])
        assert not _one_concept(lookup, SlotKind.DIAGNOSIS, [ICD9, "Peritoneal abscess"])
