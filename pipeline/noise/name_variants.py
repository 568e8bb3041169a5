"""Names a reader takes for a recorded one, though the database spells them otherwise.

A false premise presumes a name never recorded (for the patient, or for anyone). It is false only if a
careful reader, looking for the name, would not answer from a recorded one. Three spellings fail that,
each seen in a release's twins:

- the same words in another order or punctuation: "Total Calcium" beside a recorded "Calcium, Total",
  "Long-term (current) use of antibiotics" beside "Long term (current) use of antibiotics";
- every word of the name within a recorded name, which is then a kind of it: "Total CO2" beside
  "Calculated Total CO2", "X-ray" beside "Chest X-Ray", "Paroxysmal tachycardia" beside "Paroxysmal
  ventricular tachycardia";
- one letter slipped in a long word (dropped, added, changed or two swapped): "Gamma
  Glutamyltranferase" beside "Gamma Glutamyltransferase".

A recorded name within the presumed one is no such reading ("Troponin I" is not the recorded "I", nor
"Sex Hormone Binding Globulin" a "Globulin"); where it is one ("Albumin, Blood" beside "Albumin") the
name begins with the recorded one, which ``query_noise._refines_or_refined`` already rules out.
"""

import re
from collections.abc import Iterable

# A slip is read through only in a word this long: short words one slip apart are other words
# ("IX" and "XI", "T3" and "T4").
SLIP_MIN_LENGTH = 6

_WORD = re.compile(r"[a-z0-9]+")


def words(name: str) -> frozenset[str]:
    """The words of a name, case and punctuation aside."""
    return frozenset(_WORD.findall(name.casefold()))


def one_slip(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one letter dropped, added or changed, or two neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long = sorted((a, b), key=len)
    i = next((i for i, (x, y) in enumerate(zip(short, long)) if x != y), len(short))
    return short[i:] == long[i + 1:]


class NameVariants:
    """The recorded names, indexed by word, asked whether a name reads as one of them."""

    # Past this many words a slip is looked up in an index of each long word less one letter; below it
    # (a patient's names) the words are scanned, and the index is not worth its memory.
    INDEXED_WORDS = 2000

    def __init__(self, names: Iterable[str]):
        self._by_word: dict[str, set[frozenset[str]]] = {}
        for name in names:
            ws = words(name)
            for w in ws:
                self._by_word.setdefault(w, set()).add(ws)
        self._by_deletion: dict[str, set[str]] | None = None  # a long word, or it less one letter -> long words
        if len(self._by_word) > self.INDEXED_WORDS:
            self._by_deletion = {}
            for w in self._by_word:
                if len(w) >= SLIP_MIN_LENGTH - 1:
                    for key in {w} | {w[:i] + w[i + 1:] for i in range(len(w))}:
                        self._by_deletion.setdefault(key, set()).add(w)

    def _within_one(self, ws: frozenset[str]) -> bool:
        """Whether every word of ``ws`` is in one recorded name."""
        if not ws:
            return False
        found: set[frozenset[str]] | None = None
        for w in sorted(ws, key=lambda w: len(self._by_word.get(w, ()))):
            holding = self._by_word.get(w)
            if not holding:
                return False
            found = set(holding) if found is None else found & holding
            if not found:
                return False
        return True

    def _slipped(self, word: str) -> set[str]:
        """The recorded words one slip away from ``word``."""
        if len(word) < SLIP_MIN_LENGTH:
            return set()
        if self._by_deletion is None:
            near = (w for w in self._by_word if abs(len(w) - len(word)) <= 1)
        else:
            keys = {word} | {word[:i] + word[i + 1:] for i in range(len(word))}
            near = {w for k in keys for w in self._by_deletion.get(k, ())}
        return {w for w in near if len(w) >= SLIP_MIN_LENGTH and one_slip(word, w)}

    def read_as_recorded(self, name: str) -> bool:
        """Whether ``name`` reads as a recorded name: the same words, or all within one, allowing one
        slip in one long word."""
        ws = words(name)
        if self._within_one(ws):
            return True
        return any(self._within_one(ws - {w} | {other}) for w in ws for other in self._slipped(w))
