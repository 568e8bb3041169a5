"""The noise mix: how many twins of each noise type a run aims for, and what it realised.

``NoiseConfig`` says how many pairs to build, the share of each noise level, and the share of each
noise type within its level. ``targets`` turns that into a whole number of twins per type
(largest remainders, so they sum to the target exactly). Within a type, the builder spreads twins
evenly over the (intent, task level) cells that have candidates; a cell or type that runs out hands
its remainder to the others, and ``Mix`` reports the realised counts next to the targets.
"""

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from pipeline.vocabulary import NOISE_LEVEL_OF, Intent, Level, NoiseLevel, NoiseType

DEFAULT_TARGET_PAIRS = 5486


def _equal_levels() -> dict[NoiseLevel, float]:
    return {level: 1 / len(NoiseLevel) for level in NoiseLevel}


def _equal_types() -> dict[NoiseType, float]:
    per_level = Counter(NOISE_LEVEL_OF.values())
    return {t: 1 / per_level[NOISE_LEVEL_OF[t]] for t in NoiseType}


@dataclass(frozen=True)
class NoiseConfig:
    target_pairs: int = DEFAULT_TARGET_PAIRS
    # Share of each noise level in the pairs (sum to 1).
    level_shares: Mapping[NoiseLevel, float] = field(default_factory=_equal_levels)
    # Share of each noise type within its level (sum to 1 per level).
    type_shares: Mapping[NoiseType, float] = field(default_factory=_equal_types)
    # Spread each type evenly over (intent, task level) cells; False takes clean tasks in seeded order.
    balance: bool = True
    # How far (absolute) a realised type share may drift from its target before the mix is flagged.
    tolerance: float = 0.05
    twins_per_type: int = 3  # at most this many twins of one type per clean task (distinct parameters)
    drafts_per_type: int = 6  # candidates proven per clean task and type before giving up on it
    max_patch_rows: int = 500  # a patch touching more rows is dropped (patch_too_large)
    # Stop drafting a noise type for a template after this many failed proofs without one success:
    # the template's shape rules the noise out (reported, not silently skipped).
    give_up_after: int = 8
    # The release's split shares (None: pipeline.release.splits.DEFAULT_SHARES). A clean task's split
    # follows from them and the seed; its twins draw made-up names and ids from that split's pool.
    split_shares: Mapping[str, float] | None = None
    # Check every twin's label (and every clean task's answer) against its record alone
    # (pipeline.noise.status_rules); off only to measure what the check costs.
    check_labels: bool = True

    def __post_init__(self):
        levels = {NoiseLevel(k): float(v) for k, v in self.level_shares.items()}
        types = {NoiseType(k): float(v) for k, v in self.type_shares.items()}
        object.__setattr__(self, "level_shares", levels)
        object.__setattr__(self, "type_shares", types)
        problems = []
        if self.target_pairs < 0:
            problems.append(f"target_pairs must be >= 0, got {self.target_pairs}")
        if any(v < 0 for v in [*levels.values(), *types.values()]):
            problems.append("shares must be >= 0")
        if abs(sum(levels.values()) - 1) > 1e-6:
            problems.append(f"level_shares must sum to 1, got {sum(levels.values()):.4f}")
        for level in NoiseLevel:
            if levels.get(level, 0) == 0:
                continue
            total = sum(v for t, v in types.items() if NOISE_LEVEL_OF[t] is level)
            if abs(total - 1) > 1e-6:
                problems.append(f"type_shares of level {level.value} must sum to 1, got {total:.4f}")
        if min(self.twins_per_type, self.drafts_per_type, self.max_patch_rows, self.give_up_after) < 1:
            problems.append("twins_per_type, drafts_per_type, max_patch_rows and give_up_after must be >= 1")
        if problems:
            raise ValueError("NoiseConfig: " + "; ".join(problems))

    def share(self, noise_type: NoiseType) -> float:
        return self.level_shares.get(NOISE_LEVEL_OF[noise_type], 0.0) * self.type_shares.get(noise_type, 0.0)


def _largest_remainder(total: int, shares: dict) -> dict:
    """Whole numbers proportional to ``shares`` that sum to ``total`` (ties go to the earlier key)."""
    weight = sum(shares.values()) or 1.0
    exact = {k: total * v / weight for k, v in shares.items()}
    out = {k: int(v) for k, v in exact.items()}
    keys = list(shares)
    for k in sorted(keys, key=lambda k: (-(exact[k] - out[k]), keys.index(k)))[:total - sum(out.values())]:
        out[k] += 1
    return out


def targets(config: NoiseConfig) -> dict[NoiseType, int]:
    """Twins to aim for per noise type: levels first, then types within a level, by largest remainder
    (so levels differ by at most one twin when their shares are equal)."""
    per_level = _largest_remainder(config.target_pairs, {lv: config.level_shares.get(lv, 0.0) for lv in NoiseLevel})
    out: dict[NoiseType, int] = {}
    for level in NoiseLevel:
        types = {t: config.type_shares.get(t, 0.0) for t in NoiseType if NOISE_LEVEL_OF[t] is level}
        if sum(types.values()) == 0:
            types = dict.fromkeys(types, 0.0)
            out.update(types)
            continue
        out.update(_largest_remainder(per_level[level], types))
    return {t: int(out.get(t, 0)) for t in NoiseType}


Cell = tuple[Intent, Level]


@dataclass(frozen=True)
class Mix:
    """Realised twins per (intent, task level, noise level, noise type), with the targets."""

    counts: Counter  # (Intent, Level, NoiseLevel, NoiseType) -> twins
    targets: dict[NoiseType, int]
    tolerance: float

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def by(self, *fields: str) -> Counter:
        """Counts grouped by some of ``intent``, ``level``, ``noise_level``, ``noise_type``."""
        index = {"intent": 0, "level": 1, "noise_level": 2, "noise_type": 3}
        out: Counter = Counter()
        for key, n in self.counts.items():
            out[tuple(key[index[f]] for f in fields) if len(fields) > 1 else key[index[fields[0]]]] += n
        return out

    def drift(self) -> dict[NoiseType, float]:
        """Realised share minus target share, per noise type."""
        total, want = self.total or 1, sum(self.targets.values()) or 1
        realised = self.by("noise_type")
        return {t: realised.get(t, 0) / total - self.targets.get(t, 0) / want for t in NoiseType}

    @property
    def within_tolerance(self) -> bool:
        return all(abs(d) <= self.tolerance for d in self.drift().values())

    def markdown(self) -> str:
        """Counts per intent x (task level, noise type), with totals and targets."""
        types = list(NoiseType)
        head = "| intent | level | " + " | ".join(t.value for t in types) + " | total |"
        lines = [head, "|" + " --- |" * 2 + " ---: |" * (len(types) + 1)]
        cells = sorted({(k[0], k[1]) for k in self.counts}, key=lambda c: (list(Intent).index(c[0]), c[1].value))
        per_cell = self.by("intent", "level", "noise_type")
        for intent, level in cells:
            row = [per_cell.get((intent, level, t), 0) for t in types]
            lines.append(f"| {intent.value} | {level.value} | " + " | ".join(map(str, row)) + f" | {sum(row)} |")
        realised = self.by("noise_type")
        lines.append("| **total** | | " + " | ".join(str(realised.get(t, 0)) for t in types) + f" | {self.total} |")
        lines.append("| target | | " + " | ".join(str(self.targets.get(t, 0)) for t in types)
                     + f" | {sum(self.targets.values())} |")
        return "\n".join(lines)
