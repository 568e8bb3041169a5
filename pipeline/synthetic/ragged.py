"""Vectorised operations on ragged groups: parents with a variable number of children.

The generator builds every table as flat numpy arrays. A child table (admissions of patients,
lab rows of specimens, ...) is described by a ``counts`` array, one entry per parent; these helpers
turn counts into parent indices and positions without Python loops.
"""

import numpy as np


def parent_index(counts: np.ndarray) -> np.ndarray:
    """For each child, the index of its parent (children of parent 0 first, then parent 1, ...)."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.repeat(np.arange(len(counts), dtype=np.int64), counts)


def group_starts(counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.int64)
    return np.cumsum(counts) - counts


def position_in_group(counts: np.ndarray) -> np.ndarray:
    """For each child, its 0-based position among its parent's children."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(group_starts(counts), counts)


def exclusive_cumsum(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` within each group, excluding the current element."""
    values = np.asarray(values)
    if len(values) == 0:
        return values.copy()
    total = np.cumsum(values) - values
    # A group with no children may start past the end; it is repeated zero times anyway.
    starts = np.minimum(group_starts(counts), len(values) - 1)
    return total - np.repeat(total[starts], counts)


def rank_in_sorted_groups(*keys: np.ndarray) -> np.ndarray:
    """0-based position of each row among consecutive rows with equal keys (rows must be sorted
    so that equal keys are adjacent)."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    new_group = np.zeros(n, dtype=bool)
    new_group[0] = True
    for k in keys:
        k = np.asarray(k)
        new_group[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(new_group)
    counts = np.diff(np.append(starts, n))
    return position_in_group(counts)


def weighted_choice(rng: np.random.Generator, weights, size: int) -> np.ndarray:
    """Indices drawn with the given (unnormalised) weights."""
    p = np.asarray(weights, dtype=np.float64)
    return rng.choice(len(p), size=size, p=p / p.sum())
