"""Train / validation / test splits that leak nothing between them.

The unit of assignment is a group of tasks that must share a split:

- a clean task and all its twins (a twin is the clean task with noise; seeing one in training
  gives the other away);
- every task about one patient (patient-level tasks are split by ``subject_id``); a twin that names
  another real patient (a false premise about someone else, say) joins that patient's group too;
- every population-level task of one template-and-slot group (paraphrases of one question).

These relations are merged with a union-find into connected groups, the groups are ordered by a
hash of (seed, group key) and laid along the [0, 1) line by task count; a group falls into the split
whose share interval holds its midpoint. The result is deterministic by seed, independent of input
order, and tracks the configured shares closely once there are more than a handful of groups.
"""

import dataclasses
import hashlib
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from pipeline.contracts.task_frames import group_key
from pipeline.task_model import Task
from pipeline.vocabulary import Level, Split

DEFAULT_SHARES: dict[str, float] = {Split.TRAIN.value: 0.8, Split.VALIDATION.value: 0.1, Split.TEST.value: 0.1}


def normalise_shares(shares: Mapping[str, float] | None) -> dict[str, float]:
    """Shares per split, validated (known splits, non-negative, positive total) and scaled to sum 1."""
    shares = dict(DEFAULT_SHARES if shares is None else shares)
    unknown = sorted(set(shares) - {s.value for s in Split})
    if unknown:
        raise ValueError(f"split shares name unknown splits {unknown}; splits are {[s.value for s in Split]}")
    negative = {k: v for k, v in shares.items() if v < 0}
    if negative:
        raise ValueError(f"split shares must be >= 0, got {negative}")
    total = sum(shares.values())
    if total <= 0:
        raise ValueError(f"split shares must sum to more than 0, got {shares}")
    return {s.value: shares.get(s.value, 0.0) / total for s in Split}


class _UnionFind:
    def __init__(self):
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # The smaller key wins so the group's name does not depend on input order.
            self.parent[max(ra, rb)] = min(ra, rb)


def split_groups(tasks: Sequence[Task], real_subjects: Collection[int] | None = None) -> dict[str, str]:
    """task_id -> the key of the group it must share a split with.

    ``real_subjects``: subject ids that exist in the source; a twin's subject id outside it (a
    non-existent patient made up by query-level noise) ties nothing together. ``None`` trusts every id.
    """
    pairs: dict[str, list[Task]] = defaultdict(list)
    for t in tasks:
        pairs[t.clean_task_id or t.task_id].append(t)
    uf = _UnionFind()
    root_of_pair: dict[str, str] = {}
    for root, members in pairs.items():
        clean = next((m for m in members if m.clean_task_id is None), members[0])
        nodes = [f"pair:{root}"]
        if clean.level == Level.POPULATION:
            nodes.append("group:" + group_key({"template_id": clean.template_id,
                                                "slots": [dataclasses.asdict(s) for s in clean.slots]}))
        for m in members:
            if m.subject_id is not None and (m is clean or real_subjects is None or m.subject_id in real_subjects):
                nodes.append(f"subject:{m.subject_id}")
        for n in nodes[1:]:
            uf.union(nodes[0], n)
        root_of_pair[root] = nodes[0]
    return {t.task_id: uf.find(root_of_pair[t.clean_task_id or t.task_id]) for t in tasks}


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}\x00{key}".encode()).hexdigest()


def assign_splits(tasks: Sequence[Task], *, shares: Mapping[str, float] | None = None, seed: int = 0,
                  real_subjects: Collection[int] | None = None) -> list[Task]:
    """The tasks with ``split`` set (any split they carried is replaced), in input order."""
    shares = normalise_shares(shares)
    group_of = split_groups(tasks, real_subjects)
    sizes: dict[str, int] = defaultdict(int)
    for g in group_of.values():
        sizes[g] += 1
    total = sum(sizes.values())
    bounds, acc = [], 0.0
    for s in Split:
        acc += shares[s.value]
        bounds.append((acc, s))
    split_of: dict[str, Split] = {}
    done = 0
    for g in sorted(sizes, key=lambda g: (_rank(seed, g), g)):
        midpoint = (done + sizes[g] / 2) / total
        split_of[g] = next((s for bound, s in bounds if midpoint < bound and shares[s.value] > 0),
                           next(s for s in reversed(Split) if shares[s.value] > 0))
        done += sizes[g]
    return [dataclasses.replace(t, split=split_of[group_of[t.task_id]]) for t in tasks]
