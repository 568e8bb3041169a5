"""Made-up names and ids for query-level noise: generated per build, shaped like the real ones, and
never shared between splits.

A fixed list of made-up names is a shortcut: an agent that memorises the names seen in training
flags every such twin in test without looking at the record. So names are generated from the
morphology of their category (syllable stems with the suffixes drug names, lab tests, diagnoses,
procedures, chart items, organisms and care units really carry), seeded by the build's seed, and
each generated value belongs to exactly one split: the one its hash (``bucket``) picks. A twin draws
only values of its own split, so no made-up value of validation or test can appear in train,
whatever order the stages run in. Ids work the same way: a non-existent patient, admission or stay id
is drawn within the real ids' range and kept only if it hashes to the twin's split.

Every value is checked against the database (no known name, no recorded name that would make it a
general name several names refine, no existing id) before use.
"""

import bisect
import hashlib
import re
from collections.abc import Callable
from random import Random

from pipeline.noise.case import SourceLookup
from pipeline.noise.name_variants import NameVariants
from pipeline.noise.names import NameSource, known_anywhere, known_folded
from pipeline.vocabulary import SlotKind, Split

SPLITS = tuple(Split)
ATTEMPTS = 400  # candidates generated per requested value before giving up (reported as no candidate)

_ONSETS = ("b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "cl", "dr", "fl", "gr",
           "pr", "str", "th", "tr", "ph", "ch", "qu", "sc", "pl", "cr", "gl", "h", "k", "x")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "io", "y", "ei", "ou")
_CODAS = ("", "", "n", "r", "s", "l", "m", "t", "x", "nd", "st")


def bucket(seed: int, namespace: str, value: str) -> Split:
    """The one split a made-up value belongs to in this build."""
    digest = hashlib.sha256(f"{seed}|{namespace}|{value.strip().casefold()}".encode()).digest()
    return SPLITS[int.from_bytes(digest[:8], "big") % len(SPLITS)]


def _stem(rng: Random, syllables: tuple[int, int] = (2, 3)) -> str:
    n = rng.randint(*syllables)
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + (rng.choice(_CODAS) if i == n - 1 else "")
                   for i in range(n))


def _title(text: str) -> str:
    return text[:1].upper() + text[1:]


def _initials(words: str) -> str:
    return "".join(w[0] for w in words.replace("-", " ").split() if w[:1].isalpha()).upper()


def _lab(rng: Random) -> str:
    stem = _title(_stem(rng))
    form = rng.choice((
        lambda: stem + rng.choice(("ase", "ine", "ate", "in", "ol", "ide", "amine")),
        lambda: stem + "ase " + rng.choice(("Activity", "Index", "Isoenzyme")),
        lambda: stem + "ic Acid",
        lambda: stem + rng.choice(("in", "ine")) + " " + rng.choice(("Antibody", "Antigen", "Ratio", "Level")),
        lambda: (lambda name: f"{name} ({_initials(name)})")(stem + "ase " + _title(_stem(rng, (2, 2))) + "ase"),
    ))()
    return form


_DRUG_SUFFIXES = ("pril", "olol", "sartan", "statin", "prazole", "floxacin", "mycin", "cillin", "azepam", "tidine",
                  "vir", "parin", "oxetine", "dipine", "zolam", "triptan", "lukast", "conazole", "semide", "platin")


def _drug(rng: Random) -> str:
    name = _title(_stem(rng, (1, 2))) + rng.choice(_DRUG_SUFFIXES)
    return name + rng.choice(("", "", "", " Sodium", " Hydrochloride", " Succinate", " Sulfate"))


_ORGANS = ("hepatic", "renal", "pulmonary", "splenic", "cardiac", "gastric", "pancreatic", "vertebral", "biliary",
           "colonic", "ocular", "cutaneous", "thyroid", "adrenal", "vascular")


def _diagnosis(rng: Random) -> str:
    condition = _stem(rng, (2, 2)) + rng.choice(("itis", "osis", "opathy", "emia", "algia", "oma"))
    title = f"{rng.choice(('Acute', 'Chronic', 'Subacute', 'Recurrent', 'Idiopathic', 'Congenital'))} " \
            f"{rng.choice(_ORGANS)} {condition}"
    return title + rng.choice(("", "", ", unspecified", " without complication", ", initial encounter"))


def _procedure(rng: Random) -> str:
    operation = _title(_stem(rng, (2, 2))) + rng.choice(("ectomy", "otomy", "oplasty", "ostomy", "opexy"))
    return rng.choice((
        lambda: f"{operation} of {rng.choice(_ORGANS)} {rng.choice(('duct', 'vessel', 'segment', 'wall'))}, "
                f"{rng.choice(('Percutaneous', 'Open', 'Percutaneous Endoscopic', 'Via Natural Opening'))} Approach",
        lambda: f"{rng.choice(('Laparoscopic', 'Percutaneous', 'Endoscopic', 'Open'))} {operation.lower()}",
        lambda: f"{_title(_stem(rng, (2, 2)))} {rng.choice(('Catheter', 'Line', 'Drain', 'Lavage', 'Scan'))}",
    ))()


def _chart_item(rng: Random) -> str:
    region = rng.choice(("Cerebral", "Thoracic", "Retinal", "Capillary", "Venous", "Abdominal", "Peripheral",
                         "Cranial", "Arterial", "Renal"))
    return f"{region} {_title(_stem(rng, (2, 2)))}{rng.choice(('ic', 'al', 'ar'))} " \
           f"{rng.choice(('Pressure', 'Index', 'Score', 'Rate', 'Level', 'Volume'))}"


_GENERA = ("STAPHYLOCOCCUS", "STREPTOCOCCUS", "KLEBSIELLA", "PSEUDOMONAS", "ENTEROCOCCUS", "ESCHERICHIA",
           "CANDIDA", "ACINETOBACTER", "SERRATIA", "PROTEUS", "CITROBACTER", "BACTEROIDES", "CLOSTRIDIUM",
           "CORYNEBACTERIUM", "HAEMOPHILUS", "MORAXELLA", "ENTEROBACTER", "PREVOTELLA")


def _organism(rng: Random) -> str:
    species = _stem(rng, (2, 3)) + rng.choice(("ensis", "iae", "icus", "osus", "alis", "iformis", "ii"))
    return f"{rng.choice(_GENERA)} {species.upper()}"


def _admission_type(rng: Random) -> str:
    return f"{rng.choice(('AMBULATORY', 'DIRECT', 'EU', 'EW', 'SURGICAL', 'SAME DAY', 'PRIORITY', 'SCHEDULED', 'WALK-IN', 'AFTER HOURS', 'TELEHEALTH', 'NIGHT', 'TRANSFER', 'REFERRED'))} " \
           f"{rng.choice(('OBSERVATION', 'EMER.', 'ADMIT', 'ADMISSION', 'URGENT', 'ELECTIVE', 'TRANSFER', 'HOLD'))}"


def _care_unit(rng: Random) -> str:
    name = f"{rng.choice(('Pediatric', 'Burn', 'Transplant', 'Trauma', 'Cardiothoracic', 'Hyperbaric', 'Respiratory', 'Oncology', 'Geriatric', 'Obstetric', 'Post-Anesthesia', 'Vascular', 'Renal', 'Hepatic', 'Stroke'))} " \
           f"{rng.choice(('Intensive Care Unit', 'Stepdown Unit', 'Intermediate Care', 'Observation Unit'))}"
    return f"{name} ({_initials(name)})"


def _specimen(rng: Random) -> str:
    return f"{rng.choice(('VITREOUS', 'SYNOVIAL', 'PERICARDIAL', 'NAIL', 'CORNEAL', 'BONE MARROW', 'GASTRIC', 'AMNIOTIC', 'BILE', 'PLEURAL', 'PROSTATIC'))} " \
           f"{rng.choice(('WASH', 'SCRAPING', 'ASPIRATE', 'SWAB', 'BIOPSY', 'CLIPPING', 'BRUSHING', 'IMPRINT'))}"


def _words(name: str) -> tuple[str, ...]:
    return tuple(re.findall(r"[0-9a-z]+", re.sub(r"\([^()]*\)", " ", name.casefold())))


def _holds(words: tuple[str, ...], run: tuple[str, ...]) -> bool:
    """Whether ``run`` occurs in ``words`` as consecutive words."""
    return any(words[i:i + len(run)] == run for i in range(len(words) - len(run) + 1))


Generator = Callable[[Random], str]
# Per slot kind, and for categories per column: how a made-up value of that kind is shaped.
GENERATORS: dict[SlotKind, Generator] = {
    SlotKind.LAB_ITEM: _lab, SlotKind.DRUG: _drug, SlotKind.DIAGNOSIS: _diagnosis, SlotKind.PROCEDURE: _procedure,
    SlotKind.CHART_ITEM: _chart_item, SlotKind.ORGANISM: _organism,
}
CATEGORY_GENERATORS: dict[str, Generator] = {
    "e.admission_type": _admission_type, "e.first_careunit": _care_unit, "e.careunit": _care_unit,
    "e.spec_type_desc": _specimen,
}


def generator_for(source: NameSource) -> Generator | None:
    if source.kind is SlotKind.CATEGORY:
        return CATEGORY_GENERATORS.get(source.name)
    if source.name.endswith("icd_code"):
        return None  # codes are not names a question would make up
    return GENERATORS.get(source.kind)


class MadeUp:
    """Draws made-up names and ids of one split, on one source database, for one build seed."""

    def __init__(self, lookup: SourceLookup, seed: int):
        self.lookup = lookup
        self.seed = seed

    def name(self, source: NameSource, split: Split, rng: Random) -> str | None:
        """A name shaped like ``source``'s that no source of its kind knows, of ``split``'s pool."""
        generate = generator_for(source)
        if generate is None:
            return None
        kind = source.kind
        namespace = f"name:{kind.value}"
        known = self._sorted_known(kind)
        for _ in range(ATTEMPTS):
            candidate = generate(rng)
            folded = candidate.strip().casefold()
            if bucket(self.seed, namespace, candidate) is not split or known_anywhere(self.lookup, kind, candidate):
                continue
            # A made-up name that known names refine would read as a vague general name instead.
            after = known[bisect.bisect_right(known, folded):bisect.bisect_right(known, folded) + 50]
            if any(k.startswith(folded) and not k[len(folded)].isalnum() for k in after if len(k) > len(folded)):
                continue
            if kind is SlotKind.CATEGORY and self._reads_as_known(candidate):
                continue
            return candidate
        return None

    def _reads_as_known(self, candidate: str) -> bool:
        """Whether a made-up category's words hold a known category's, or are held in one's, as a run
        (parentheses aside): "SCHEDULED ELECTIVE" reads as ELECTIVE, "SAME DAY ADMISSION" as SURGICAL
        SAME DAY ADMISSION, "Vascular Intensive Care Unit (VICU)" as Cardiac Vascular Intensive Care
        Unit (CVICU); or all lie within one known category in any order, or with a slip
        (``name_variants``): "SURGICAL ADMISSION" reads as SURGICAL SAME DAY ADMISSION. A reviewer
        would answer with that category: the premise is not false."""
        key = ("made_up_known_words", SlotKind.CATEGORY)
        if key not in self.lookup.memo:
            known = self._sorted_known(SlotKind.CATEGORY)
            self.lookup.memo[key] = (sorted({_words(k) for k in known} - {()}), NameVariants(known))
        runs, variants = self.lookup.memo[key]
        mine = _words(candidate)
        return (any(_holds(mine, theirs) or _holds(theirs, mine) for theirs in runs)
                or variants.read_as_recorded(candidate))

    def _sorted_known(self, kind: SlotKind) -> list[str]:
        key = ("made_up_sorted_known", kind)
        if key not in self.lookup.memo:
            self.lookup.memo[key] = sorted(known_folded(self.lookup, kind))
        return self.lookup.memo[key]

    def entity_id(self, entity_table: str, column: str, split: Split, rng: Random) -> int:
        """An id shaped like the real ones (within their range where they are sparse) that no row holds."""
        taken = self.lookup.id_set(entity_table, column)
        lo, hi = self.lookup.id_range(entity_table, column)
        lo, hi = max(lo, 1), max(hi, lo + 10)
        sparse = len(taken) < (hi - lo + 1) // 2
        namespace = f"id:{entity_table}.{column}"
        for _ in range(ATTEMPTS * 10):
            # Sparse ids (MIMIC-IV's): a random one in range is almost surely free. Dense ids (a
            # generator's 1..n): step past the largest.
            candidate = rng.randint(lo, hi) if sparse else hi + rng.randint(1, hi - lo + 1)
            if candidate not in taken and bucket(self.seed, namespace, str(candidate)) is split:
                return candidate
        raise RuntimeError(f"no free id of {entity_table}.{column} found for split {split.value}")
