"""Train / validation / test splits that leak nothing between them.

The unit of assignment is a group of tasks that must share a split:

- a clean task and all its twins (a twin is the clean task with noise; seeing one in training
  gives the other away);
- every task about one patient (patient-level tasks are split by ``subject_id``); a twin that names
  another real patient (a false premise about someone else, say) joins that patient's group too;
- every population-level task of one template-and-slot group (paraphrases of one question).

These relations are merged with a union-find into connected groups. A group's split depends on its
own key only: the hash of (seed, key) read as a number in [0, 1) falls into one split's share
interval (``split_of_key``). The key is the smallest patient or population-group key in the group,
so a clean task's split is known before any twin exists (``split_of_task``): the noise stage draws
made-up names and ids from that split's own pool. A patient keeps its split whatever else a release
holds, so a new release version never moves a test patient into train. Shares are met in
expectation; with few groups the realised shares wander (the release contract warns past 0.10).
"""

import dataclasses
import hashlib
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

import pyarrow as pa

from pipeline.contracts.task_frames import group_key
from pipeline.task_model import NamedValue, Task, arrow_schema
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


def task_group_key(task: Task) -> str:
    """The key of the group a clean task splits with on its own: its patient, or at population level
    its template-and-slot group."""
    if task.level == Level.POPULATION or task.subject_id is None:
        return "group:" + group_key({"template_id": task.template_id,
                                     "slots": [dataclasses.asdict(s) for s in task.slots]})
    return f"subject:{task.subject_id}"


def split_of_key(key: str, shares: Mapping[str, float] | None = None, seed: int = 0) -> Split:
    """The split of a group: where the hash of (seed, key) falls among the share intervals."""
    shares = normalise_shares(shares)
    point = int(_rank(seed, key)[:16], 16) / 16 ** 16
    acc = 0.0
    for s in Split:
        acc += shares[s.value]
        if point < acc and shares[s.value] > 0:
            return s
    return next(s for s in reversed(Split) if shares[s.value] > 0)


def split_of_task(task: Task, shares: Mapping[str, float] | None = None, seed: int = 0) -> Split:
    """The split ``assign_splits`` will give a clean task (and its twins), known before the twins exist."""
    return split_of_key(task_group_key(task), shares, seed)


class SplitRow(NamedTuple):
    """The fields of a task its split depends on."""

    task_id: str
    clean_task_id: str | None
    level: Level
    subject_id: int | None
    template_id: str
    slots: tuple[NamedValue, ...]


def split_groups(tasks: Sequence[Task | SplitRow], real_subjects: Collection[int] | None = None) -> dict[str, str]:
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
            nodes.append(task_group_key(clean))
        for m in members:
            if m.subject_id is not None and (m is clean or real_subjects is None or m.subject_id in real_subjects):
                nodes.append(f"subject:{m.subject_id}")
        for n in nodes[1:]:
            uf.union(nodes[0], n)
        root_of_pair[root] = nodes[0]
    root_of = {t.task_id: uf.find(root_of_pair[t.clean_task_id or t.task_id]) for t in tasks}
    # Name each group by its smallest patient or population-group key (not by a pair: a pair's id
    # says nothing about where its patient goes), so the key of a clean task alone names its group.
    named: dict[str, str] = {}
    for node in uf.parent:
        if not node.startswith("pair:"):
            root = uf.find(node)
            named[root] = min(named.get(root, node), node)
    return {task_id: named.get(root, root) for task_id, root in root_of.items()}


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}\x00{key}".encode()).hexdigest()


def splits_of(tasks: Sequence[Task | SplitRow], *, shares: Mapping[str, float] | None = None, seed: int = 0,
              real_subjects: Collection[int] | None = None) -> list[Split]:
    """The split of each task, in input order."""
    shares = normalise_shares(shares)
    group_of = split_groups(tasks, real_subjects)
    split_of = {g: split_of_key(g, shares, seed) for g in set(group_of.values())}
    return [split_of[group_of[t.task_id]] for t in tasks]


def assign_splits(tasks: Sequence[Task], *, shares: Mapping[str, float] | None = None, seed: int = 0,
                  real_subjects: Collection[int] | None = None) -> list[Task]:
    """The tasks with ``split`` set (any split they carried is replaced), in input order."""
    splits = splits_of(tasks, shares=shares, seed=seed, real_subjects=real_subjects)
    return [dataclasses.replace(t, split=s) for t, s in zip(tasks, splits)]


def with_splits(table: pa.Table, *, shares: Mapping[str, float] | None = None, seed: int = 0,
                real_subjects: Collection[int] | None = None) -> pa.Table:
    """``table``'s tasks with the ``split`` column ``assign_splits`` would give them, in input order.

    Only the columns a split depends on are read into Python: a release's tasks stay Arrow from the
    files they were read from to the files they are written to."""
    cols = table.select(list(SplitRow._fields)).to_pydict()
    rows = [SplitRow(task_id, clean_id, _level(task_id, level), subject, template,
                     tuple(NamedValue(s["name"], s["value"]) for s in slots or ()))
            for task_id, clean_id, level, subject, template, slots in zip(*cols.values())]
    splits = splits_of(rows, shares=shares, seed=seed, real_subjects=real_subjects)
    column = pa.array([s.value for s in splits], type=arrow_schema().field("split").type)
    return table.set_column(table.schema.get_field_index("split"), "split", column)


def _level(task_id: str, value: str) -> Level:
    try:
        return Level(value)
    except ValueError:
        raise ValueError(f"task {task_id}: level {value!r} is not one of {[lv.value for lv in Level]}") from None
