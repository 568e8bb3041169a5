"""Splits keep patients, pairs and population groups whole, track the shares, and follow the seed."""

from collections import Counter, defaultdict

import pyarrow as pa
import pytest

from pipeline.release.splits import assign_splits, normalise_shares, split_groups, with_splits
from pipeline.release.task_files import split_tables, tasks_table
from pipeline.task_model import NamedValue, tasks_to_arrow
from pipeline.vocabulary import Level, Split, Variant
from tests.pipeline.release.demo_tasks import demo_tasks


@pytest.fixture(scope="module")
def tasks(demo_db):
    return list(demo_tasks(demo_db, per_template=12))


def _splits_per(tasks, key):
    where = defaultdict(set)
    for t in tasks:
        k = key(t)
        if k is not None:
            where[k].add(t.split)
    return where


def test_no_patient_pair_or_population_group_spans_two_splits(tasks):
    assigned = assign_splits(tasks, seed=3)
    assert all(t.split is not None for t in assigned)
    assert max(map(len, _splits_per(assigned, lambda t: t.subject_id).values())) == 1
    assert max(map(len, _splits_per(assigned, lambda t: t.clean_task_id or t.task_id).values())) == 1
    groups = _splits_per([t for t in assigned if t.level is Level.POPULATION],
                         lambda t: (t.template_id, t.slots) if t.variant is Variant.CLEAN else None)
    assert max(map(len, groups.values())) == 1


def test_every_split_gets_tasks_near_its_share(tasks):
    counts = Counter(t.split for t in assign_splits(tasks, seed=0, shares={"train": 0.6, "validation": 0.2, "test": 0.2}))
    for split, share in ((Split.TRAIN, 0.6), (Split.VALIDATION, 0.2), (Split.TEST, 0.2)):
        assert abs(counts[split] / len(tasks) - share) < 0.1, counts


def test_the_same_seed_gives_the_same_splits_whatever_the_input_order(tasks):
    a = {t.task_id: t.split for t in assign_splits(tasks, seed=5)}
    b = {t.task_id: t.split for t in assign_splits(list(reversed(tasks)), seed=5)}
    assert a == b
    c = {t.task_id: t.split for t in assign_splits(tasks, seed=6)}
    assert a != c


def test_a_zero_share_split_stays_empty(tasks):
    counts = Counter(t.split for t in assign_splits(tasks, shares={"train": 0.5, "validation": 0, "test": 0.5}))
    assert counts[Split.VALIDATION] == 0 and counts[Split.TRAIN] and counts[Split.TEST]


def test_a_twin_naming_another_real_patient_joins_that_patients_group(tasks):
    import dataclasses

    patients = sorted({t.subject_id for t in tasks if t.subject_id is not None})
    twin = next(t for t in tasks if t.variant is Variant.NOISE and t.subject_id == patients[0])
    moved = [dataclasses.replace(t, subject_id=patients[1]) if t is twin else t for t in tasks]
    groups = split_groups(moved, real_subjects=set(patients))
    first = next(t for t in tasks if t.subject_id == patients[0])
    second = next(t for t in tasks if t.subject_id == patients[1])
    assert groups[first.task_id] == groups[second.task_id]
    # A made-up patient (not in the source) ties nothing together.
    fake = [dataclasses.replace(t, subject_id=99_999_999) if t is twin else t for t in tasks]
    groups = split_groups(fake, real_subjects=set(patients))
    assert groups[first.task_id] != groups[second.task_id]


def test_population_tasks_of_one_template_and_slots_share_a_group(tasks):
    import dataclasses

    clean = [t for t in tasks if t.variant is Variant.CLEAN and t.level is Level.POPULATION]
    a, b = clean[0], next(t for t in clean if t.template_id != clean[0].template_id)
    paraphrase = dataclasses.replace(b, task_id="paraphrase-of-a", template_id=a.template_id, slots=a.slots,
                                     paraphrase=1)
    groups = split_groups([*tasks, paraphrase])
    assert groups["paraphrase-of-a"] == groups[a.task_id]
    other = dataclasses.replace(paraphrase, task_id="other-slots", slots=(NamedValue("x", "1"),))
    assert split_groups([*tasks, other])["other-slots"] != groups[a.task_id]


@pytest.mark.parametrize("shares, message", [
    ({"train": 1, "dev": 1}, "unknown splits"),
    ({"train": -1, "test": 2}, ">= 0"),
    ({"train": 0, "validation": 0, "test": 0}, "more than 0"),
])
def test_bad_shares_are_refused(shares, message):
    with pytest.raises(ValueError, match=message):
        normalise_shares(shares)


def _with_made_up_patient(tasks, seed):
    """``tasks`` with one patient-level twin naming a made-up patient whose key would move the twin's
    group to another split if it were trusted as real."""
    import dataclasses

    from pipeline.release.splits import split_of_key

    def fakes(subject: int):  # ids whose key sorts first, so a group holding it is named by it
        return [f for f in [*(10 ** k for k in range(8)), *range(10 ** 7, subject)] if str(f) < str(subject)]

    twin, fake = next((t, f) for t in tasks if t.variant is Variant.NOISE and t.level is Level.PATIENT
                      for f in fakes(t.subject_id)
                      if split_of_key(f"subject:{f}", seed=seed) != split_of_key(f"subject:{t.subject_id}", seed=seed))
    return [dataclasses.replace(t, subject_id=fake) if t is twin else t for t in tasks], twin.task_id


@pytest.mark.parametrize("trust", [False, True])
def test_a_table_of_tasks_gets_the_splits_assign_splits_gives_the_tasks(trust, tasks):
    tasks, moved = _with_made_up_patient(tasks, seed=3)
    real = {t.subject_id for t in tasks if t.variant is Variant.CLEAN}
    settings = {"seed": 3, "real_subjects": None if trust else real}
    assigned = assign_splits(tasks, **settings)
    table = tasks_to_arrow(tasks)
    split = with_splits(table, **settings)
    assert split.column("split").to_pylist() == [t.split.value for t in assigned]
    assert split.drop_columns(["split"]).equals(table.drop_columns(["split"]))
    by_split = split_tables(split)
    assert set(by_split) == {s.value for s in Split}
    for s in Split:
        assert by_split[s.value].equals(tasks_table([t for t in assigned if t.split is s])), s
    # The made-up patient mattered: trusted, it took the twin (and its pair) to another split.
    untrusted = assign_splits(tasks, seed=3, real_subjects=real)
    trusted = assign_splits(tasks, seed=3)
    assert [t.split for t in trusted if t.task_id == moved] != [t.split for t in untrusted if t.task_id == moved]


def test_a_table_with_an_unknown_level_is_refused_naming_the_task(tasks):
    table = tasks_to_arrow(tasks[:3])
    levels = table.column("level").to_pylist()
    levels[1] = "ward"
    broken = table.set_column(table.schema.get_field_index("level"), "level", pa.array(levels, pa.string()))
    with pytest.raises(ValueError, match=f"task {tasks[1].task_id}: level 'ward'"):
        with_splits(broken)


@pytest.mark.parametrize("bad", [None, "holdout"])
def test_a_task_without_one_of_the_three_splits_is_refused_before_any_file_is_made(bad, tasks):
    table = with_splits(tasks_to_arrow(tasks[:4]))
    splits = table.column("split").to_pylist()
    splits[2] = bad
    broken = table.set_column(table.schema.get_field_index("split"), "split", pa.array(splits, pa.string()))
    with pytest.raises(ValueError, match=rf"1 task\(s\) have no split .*{tasks[2].task_id}"):
        split_tables(broken)
