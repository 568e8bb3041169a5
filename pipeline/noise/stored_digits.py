"""How the source stores a number, so that a value written beside one is stored alike.

MIMIC-IV's ICU input amounts come from a float32 world: ``originalrate`` and ``originalamount`` are
float32s read back as doubles (0.3333333432674408), and an ``amount`` is often such a rate times a
duration (0.3333333432674408 x 60 = 20.000000596046448 for 20 mEq). A second charting written as a
short decimal of nine digits beside them (26.0000008) has a form none of the source's 13,482 long
amounts has, and a careful reader picks it out as the made-up row without any clinical reasoning.

So a value that carries such noise is read as the clinical value it stands for (seven significant
digits, a float32's precision), the new value is charted from that, and it is written back with
the same noise: the same relative error for an amount, a float32 for a column stored in one.
"""

import math
import struct

from pipeline.noise.physiology import charted_in_other_unit, format_value, recorded_digits

# A charted reading has at most this many significant digits; more is the arithmetic of its storage.
CHARTED_DIGITS = 9
# What a float32 holds, and so what a reading that went through one was charted with at most.
SINGLE_DIGITS = 7


def to_single(value: float) -> float:
    """``value`` stored in a float32 and read back as a double."""
    return struct.unpack("f", struct.pack("f", value))[0]


def is_single(value: float) -> bool:
    """Whether ``value`` is exactly a float32 (every short integer and binary fraction is one too)."""
    return math.isfinite(value) and abs(value) < 3.4e38 and to_single(value) == value


def carries_noise(value: float) -> bool:
    """Whether ``value`` has more significant digits than anything charted: 20.000000596046448, not 20.5."""
    return math.isfinite(value) and value != 0 and recorded_digits(value)[0] > CHARTED_DIGITS


def clinical_value(value: float) -> float:
    """The value a clinician or a pump charted, past the noise of its storage: 20.000000596046448 -> 20.0.
    A value without such noise is itself."""
    return float(f"{value:.{SINGLE_DIGITS}g}") if carries_noise(value) else value


def stored_like(value: float, original: float, *, single: bool = False) -> str:
    """``value``, another reading of what ``original`` records, written as the source stored the original:

    - in a float32 where the original is one with float32 digits, or the column is stored in one
      (``single``): 0.4333333373069763, not 0.433333346;
    - with the original's noise where it carries some that no float32 explains: the full double;
    - else to the significant digits the original was charted with, at least three (35 beside 50,
      2.19 beside 3.13, 0.0225 beside 0.05): a rate in step with an amount is as precise as it was.
    """
    if single or (carries_noise(original) and is_single(original)):
        # Charted first: a float32 of 60 gives one of 42, not 41.999996185302734.
        return repr(to_single(charted_in_other_unit(value, clinical_value(original))))
    if carries_noise(original):
        return repr(float(value))
    return format_value(charted_in_other_unit(value, original))
