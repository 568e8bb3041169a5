"""How a question refers to an admission or ICU stay: by its id, or as "the hospital admission".

A question about a patient's only admission may leave its id unsaid, as people ask; one about a
patient with several is ambiguous without it (``ambiguous_reference``). So that the vague phrase
alone never tells which of the two a task is, the templates stage phrases half of the questions
about a patient's only admission (or only ICU stay) vaguely too (``vague_for``), a twin keeps its
clean question's phrasing (``rendered_like``), and a template has no more ambiguous twins phrased
vaguely than clean questions (``query_noise.AmbiguousReference.prepare``).
"""

import hashlib
import re
from collections.abc import Mapping

from pipeline.templates.template import Template
from pipeline.vocabulary import SlotKind

_SENTINEL = "\u2063REF\u2063"
# How a question names an admission or ICU stay by id, and what a vague reference says instead.
REFERENCE_PHRASES: dict[SlotKind, tuple[re.Pattern, str]] = {
    SlotKind.ADMISSION: (re.compile(r"\b(?:hospital )?(?:admission|hospitalization) " + _SENTINEL),
                         "the hospital admission"),
    SlotKind.ICU_STAY: (re.compile(r"\b(?:ICU )?(?:stay|admission) " + _SENTINEL), "the ICU stay"),
}
# The table holding a patient's admissions or stays, and its id column.
SIBLINGS = {SlotKind.ADMISSION: ("admissions", "hadm_id"), SlotKind.ICU_STAY: ("icustays", "stay_id")}


def vague_reference(question_with_sentinel: str, kind: SlotKind) -> str | None:
    """The question with the entity's id replaced by a vague reference, or None when the question does
    not name it exactly once in a form this knows. "patient 7's admission 123" becomes "patient 7's
    hospital admission", not "patient 7's the hospital admission"."""
    pattern, phrase = REFERENCE_PHRASES[kind]
    question, n = pattern.subn(phrase, question_with_sentinel)
    if n != 1 or _SENTINEL in question:
        return None
    return question.replace("'s the ", "'s ")


def render_vaguely(template: Template, slots: Mapping[str, str], paraphrase: int, name: str) -> str | None:
    """The question with slot ``name`` (an admission or stay) referred to without its id, if it can be."""
    text = template.render_question({**slots, name: _SENTINEL}, paraphrase)
    return vague_reference(text, SlotKind(template.slots[name]))


def vague_for(template: Template, slots: Mapping[str, str], paraphrase: int, task_id: str, seed: int,
              only_one: Mapping[SlotKind, bool]) -> str | None:
    """The vague slot of a clean question, if any: an admission or stay slot whose entity is the
    patient's only one of its kind (``only_one``), for half of such tasks, chosen by task id and seed."""
    digest = hashlib.sha256(f"vague|{seed}|{task_id}".encode()).digest()
    if digest[0] % 2:
        return None
    for name, kind in template.slots.items():
        kind = SlotKind(kind)
        if kind in SIBLINGS and only_one.get(kind) and render_vaguely(template, slots, paraphrase, name) is not None:
            return name
    return None


def states(question: str, value: str) -> bool:
    """Whether ``question`` states the id ``value`` (not as part of a longer number)."""
    return re.search(rf"(?<!\d){re.escape(value)}(?!\d)", question) is not None


def unstated(template: Template, question: str, slots: Mapping[str, str]) -> list[str]:
    """The admission and stay slots ``question`` does not state the id of."""
    return [name for name, kind in template.slots.items() if SlotKind(kind) in SIBLINGS and name in slots
            and not states(question, slots[name])]


def rendered_like(template: Template, slots: Mapping[str, str], paraphrase: int, clean_question: str,
                  clean_slots: Mapping[str, str]) -> str:
    """The question for ``slots``, referring vaguely to what the clean question referred to vaguely
    (while its slot is unchanged): a twin does not give itself away by naming an id its clean task left
    unsaid."""
    for name in unstated(template, clean_question, clean_slots):
        if slots.get(name) == clean_slots.get(name):
            question = render_vaguely(template, slots, paraphrase, name)
            if question is not None:
                return question
    return template.render_question(slots, paraphrase)
