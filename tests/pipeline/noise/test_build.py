"""build_pairs: deterministic by seed, balanced, reported, and at full size on the demo."""

import dataclasses
from collections import Counter

import duckdb
import pyarrow.parquet as pq
import pytest

from pipeline.duckdb_memory import SMALL_STATEMENT_THREADS
from pipeline.noise import DEFAULT_TARGET_PAIRS, NoiseConfig, build_pairs
from pipeline.noise import build as build_module
from pipeline.noise import decidability
from pipeline.noise.decidability import check_labels
from pipeline.noise.registry import DropReason
from pipeline.task_model import tasks_from_arrow, tasks_to_arrow
from pipeline.templates import extract_clean_tasks
from pipeline.vocabulary import Intent, Level, NoiseLevel, NoiseType, Variant

SMALL = NoiseConfig(target_pairs=60)


@pytest.fixture(scope="module")
def few_clean(demo_built):
    _, clean, _ = demo_built
    per_template: Counter = Counter()
    out = []
    for t in clean:
        if per_template[t.template_id] < 1:
            per_template[t.template_id] += 1
            out.append(t)
    return out


def test_the_same_seed_gives_the_same_twins_byte_for_byte(demo_full_db, few_clean, tmp_path):
    first = build_pairs(demo_full_db, few_clean, SMALL, seed=3).twins
    second = build_pairs(demo_full_db, few_clean, SMALL, seed=3).twins
    pq.write_table(tasks_to_arrow(first), tmp_path / "a.parquet")
    pq.write_table(tasks_to_arrow(second), tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_another_seed_picks_other_twins(demo_full_db, few_clean):
    a = build_pairs(demo_full_db, few_clean, SMALL, seed=3).twins
    b = build_pairs(demo_full_db, few_clean, SMALL, seed=4).twins
    assert [t.to_dict() for t in a] != [t.to_dict() for t in b]


def test_twins_read_back_from_parquet_equal_what_was_built(built, tmp_path):
    _, _, result = built
    pq.write_table(tasks_to_arrow(result.twins), tmp_path / "twins.parquet")
    assert tasks_from_arrow(pq.read_table(tmp_path / "twins.parquet")) == result.twins


def test_task_ids_are_unique_and_say_which_clean_task_and_noise_type(built):
    _, _, result = built
    ids = [t.task_id for t in result.twins]
    assert len(set(ids)) == len(ids)
    for t in result.twins:
        assert t.task_id.startswith(f"{t.clean_task_id}~{t.noise_type.value}")


def test_the_mix_reaches_the_target_and_reports_what_was_dropped_and_why(built):
    _, _, result = built
    assert len(result.twins) == result.mix.total == 300
    assert result.mix.by("noise_level").keys() == set(NoiseLevel)
    assert sum(result.dropped.values()) > 0 and all(result.drop_examples[k] for k in result.dropped)
    assert result.skipped  # where a noise type does not apply is counted, not hidden


def test_a_small_run_spreads_each_type_over_intents_before_taking_more_from_one(built):
    _, clean, result = built
    cells = Counter((t.intent, t.level) for t in clean)
    per_cell = Counter((t.intent, t.level) for t in result.twins if t.noise_type is NoiseType.NONEXISTENT_ENTITY)
    assert len(per_cell) >= len(cells) - 2  # every cell with candidates gets some
    assert max(per_cell.values()) - min(per_cell.values()) <= 3


def test_twins_build_on_the_30_table_demo_without_chartevents(demo_db):
    clean = extract_clean_tasks(demo_db, tasks_per_template=1, seed=0).tasks
    result = build_pairs(demo_db, clean, SMALL, seed=0)
    assert len(result.twins) == 60 and Intent.VITALS_IO not in {t.intent for t in result.twins}


def test_a_task_from_another_database_is_refused(demo_full_db, few_clean):
    alien = dataclasses.replace(few_clean[0], base_fingerprint="0" * 64)
    with pytest.raises(ValueError, match="extracted from another database"):
        build_pairs(demo_full_db, [alien], SMALL)


def test_a_task_naming_an_unregistered_template_is_named_in_the_error(demo_full_db, few_clean):
    stray = dataclasses.replace(few_clean[0], template_id="no_such_template")
    with pytest.raises(KeyError, match=f"{stray.task_id} names template 'no_such_template'"):
        build_pairs(demo_full_db, [stray], SMALL)


def test_twins_are_not_built_from_twins(demo_built, demo_full_db):
    _, _, result = demo_built
    with pytest.raises(ValueError, match="clean tasks with an answer"):
        build_pairs(demo_full_db, result.twins[:1], SMALL)


def test_an_open_connection_can_be_passed_instead_of_a_path(demo_full_db, few_clean):
    with duckdb.connect(str(demo_full_db), read_only=True) as con:
        twins = build_pairs(con, few_clean, NoiseConfig(target_pairs=10), seed=3).twins
    assert [t.to_dict() for t in twins] == \
           [t.to_dict() for t in build_pairs(demo_full_db, few_clean, NoiseConfig(target_pairs=10), seed=3).twins]


def test_a_level_and_its_label_check_ask_their_small_statements_on_one_duckdb_thread(demo_full_db, few_clean,
                                                                                      small_statement_readers):
    # Thousands of millisecond statements: a second DuckDB thread costs them CPU and gains no time.
    opened = small_statement_readers(build_module, decidability)
    result = build_pairs(demo_full_db, few_clean, NoiseConfig(target_pairs=10), seed=3)
    assert opened == [SMALL_STATEMENT_THREADS] == [1]
    check_labels(demo_full_db, result.twins[:3])
    assert opened == [1, 1]


def test_a_gold_sql_is_run_once_per_patch_however_far_apart_it_is_asked(demo_full_db, demo_built, monkeypatch):
    # A value twin's answer with its row set aside is asked again by a later twin of the same row, one
    # round of the other clean tasks later: the second asking reads the rows the first one got.
    from pipeline import patching

    runs: Counter = Counter()
    remembered = patching.RowsMemo.rows

    def counting(memo, patch, sql, run):
        def counted():
            runs[(patch, sql)] += 1
            return run()
        return remembered(memo, patch, sql, counted)

    monkeypatch.setattr(patching.RowsMemo, "rows", counting)
    # Three clean tasks a template: one gave too few value twins once recomputable results were left alone.
    _, clean, _ = demo_built
    result = build_pairs(demo_full_db, clean, NoiseConfig(target_pairs=200), seed=0, levels=[NoiseLevel.VALUE])
    assert len(result.twins) > 50 and runs
    assert [key for key, n in runs.items() if n > 1] == []


@pytest.mark.slow
def test_a_default_run_on_the_demo_yields_5486_pairs_over_every_intent_level_and_noise_type(demo_full_db):
    clean = extract_clean_tasks(demo_full_db, seed=0).tasks
    result = build_pairs(demo_full_db, clean)
    twins = result.twins
    assert len(twins) >= DEFAULT_TARGET_PAIRS == 5486
    assert {t.intent for t in twins} == set(Intent)
    assert {t.level for t in twins} == set(Level)
    assert {t.noise_type for t in twins} == set(NoiseType)
    assert all(t.variant is Variant.NOISE and t.proof.passed for t in twins)
    assert result.mix.within_tolerance, result.mix.markdown()
    # No two query twins ask the same question (a label to memorise across splits); two population
    # questions presuming one name are the candidates this drops, under a reason of their own.
    questions = Counter(t.question for t in twins if t.noise_level is NoiseLevel.QUERY)
    assert [q for q, n in questions.items() if n > 1] == []
    repeated = {k: n for k, n in result.dropped.items() if k[1] is DropReason.QUESTION_REPEATED}
    assert repeated and all("another twin asks" in result.drop_examples[k] for k in repeated)
