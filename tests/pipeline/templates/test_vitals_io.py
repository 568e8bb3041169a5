"""Vital-sign questions ask about a fixed list of vitals, and say so to the noise stage."""

from pipeline.templates import REGISTRY
from pipeline.templates.vitals_io import VITAL_LABELS, VITALS


def test_every_template_asking_about_the_listed_vitals_declares_the_list():
    """Query noise reads ``names_within`` to keep its names among the vitals: a template whose sampler
    draws from the list without declaring it would let an alarm limit or a score be presumed."""
    listed = [t for t in REGISTRY if VITAL_LABELS in t.sampler]
    assert len(listed) >= 9
    for t in listed:
        assert dict(t.names_within) == {"vital": VITALS}, t.id
    assert all(not t.names_within for t in REGISTRY if VITAL_LABELS not in t.sampler)
