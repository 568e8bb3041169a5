"""The intent -> tables map: complete, consistent with the schema, and what missing tables disable."""

from pipeline.capabilities import (
    INTENT_TABLES,
    available_intents,
    disabled_intents,
    intents_needing,
    tables_for,
    unneeded_tables,
)
from pipeline.schema import TABLES_BY_NAME
from pipeline.vocabulary import Intent


def test_every_intent_has_tables_and_every_table_is_a_mimic_table():
    assert set(INTENT_TABLES) == set(Intent)
    for intent, tables in INTENT_TABLES.items():
        assert tables and tables <= TABLES_BY_NAME.keys(), intent


def test_missing_chartevents_disables_only_vitals_io():
    assert disabled_intents({"chartevents"}) == (Intent.VITALS_IO,)
    assert available_intents(set(TABLES_BY_NAME) - {"chartevents"}) == tuple(i for i in Intent if i != Intent.VITALS_IO)


def test_missing_patients_disables_every_intent():
    assert disabled_intents({"patients"}) == tuple(Intent)


def test_tables_no_intent_needs_disable_nothing():
    unneeded = unneeded_tables()
    assert "provider" in unneeded and "chartevents" not in unneeded
    assert disabled_intents(unneeded) == ()
    assert all(intents_needing(t) == () for t in unneeded)
    assert tables_for(Intent) | set(unneeded) == set(TABLES_BY_NAME)
