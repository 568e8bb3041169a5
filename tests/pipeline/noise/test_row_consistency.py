"""A row noise changes is as consistent in itself as the source's own rows: an ICU stay's length is its
times' difference, a lab flagged abnormal is outside its reference range, a code has its description.

Each of these, left behind, let an agent reading one row tell the made-up row of a conflicting pair
from the real one, or read a corrupted stay's true length off its times."""

from datetime import datetime

import duckdb
import pytest

from pipeline.noise.row_consistency import CODED_TEXTS, coded_pair, recharted, with_derived
from pipeline.patching import patched
from pipeline.vocabulary import NoiseLevel

STAY = {"intime": datetime(2167, 5, 5, 12, 54, 6), "outtime": datetime(2167, 5, 6, 18, 40, 10),
        "los": 1.240324074074074}


def test_a_changed_stay_length_moves_its_end_and_a_changed_end_its_length():
    longer = with_derived("icustays", STAY, {"los": "3.5"})
    assert longer == {"los": "3.5", "outtime": "2167-05-09 00:54:06"}
    earlier = with_derived("icustays", STAY, {"outtime": "2167-05-04 18:40:10"})
    assert float(earlier["los"]) == pytest.approx(-(18 * 3600 + 13 * 60 + 56) / 86400, abs=1e-12)


def test_a_changed_lab_value_takes_the_flag_its_reference_range_gives():
    lab = {"ref_range_lower": 135.0, "ref_range_upper": 145.0}
    assert with_derived("labevents", lab, {"valuenum": "177"})["flag"] == "abnormal"
    assert with_derived("labevents", lab, {"valuenum": "140"})["flag"] is None
    assert "flag" not in with_derived("labevents", {"ref_range_lower": None, "ref_range_upper": None},
                                      {"valuenum": "177"})


def test_another_amount_given_moves_its_rate_and_what_equals_them_and_leaves_the_bag_as_ordered():
    # A potassium additive: no rate charted, its original rate the amount's own over the hour.
    additive = {"amount": 20.000000596046448, "rate": None, "originalamount": 20.0,
                "originalrate": 0.3333333432674408}
    out = recharted("inputevents", additive, {"amount": repr(additive["amount"] * 1.3)})
    assert float(out["originalamount"]) == pytest.approx(float(out["amount"]), rel=1e-7)
    assert float(out["originalrate"]) == pytest.approx(0.4333333, rel=1e-6) and "rate" not in out
    # Part of a 50 mL bag at 50 mL/hour: the rate moves, the bag stays as ordered.
    infusion = {"amount": 23.96, "rate": 50.0, "originalamount": 50.0, "originalrate": 50.0}
    out = recharted("inputevents", infusion, {"amount": "31.15"})
    assert float(out["rate"]) == pytest.approx(50.0 * 31.15 / 23.96, rel=5e-3)
    assert "originalamount" not in out and out["originalrate"] == repr(float(out["rate"]))
    # The bag changed alone is another bag, not another amount given.
    assert recharted("inputevents", infusion, {"originalamount": "100"}) == {"originalamount": "100"}


def test_codes_and_descriptions_are_declared_as_pairs():
    assert coded_pair("drgcodes", "description") is coded_pair("drgcodes", "drg_code") is not None
    assert coded_pair("labevents", "valuenum") is None


def _rows_written(con, twin) -> dict[str, list[dict]]:
    """The rows the twin's patch adds or rewrites, as its database holds them."""
    wanted: dict[str, set[int]] = {}
    for change in twin.patch.update:
        wanted.setdefault(change.table, set()).add(change.row_id)
    for row in twin.patch.add:
        wanted.setdefault(row.table, set()).add(row.row_id)
    out = {}
    with patched(con, twin.patch):
        for table_name, ids in wanted.items():
            cur = con.execute(f'SELECT * FROM "{table_name}" WHERE row_id IN (SELECT unnest(?))', [sorted(ids)])
            names = [d[0] for d in cur.description]
            out[table_name] = [dict(zip(names, r)) for r in cur.fetchall()]
    return out


def test_every_row_a_twin_writes_is_as_consistent_as_the_sources_rows(built):
    db, _, result = built
    checked = {"icustays": 0, "labevents": 0, "coded": 0, "unit": 0}
    with duckdb.connect(str(db), read_only=True) as con:
        # What the source itself holds, so that the test asks of a twin only what every source row shows.
        assert con.execute("SELECT count(*) FROM icustays WHERE abs(los - epoch(outtime - intime) / 86400) > 1e-9"
                           ).fetchone() == (0,)
        pairs = {t: {tuple(r) for r in con.execute(f'SELECT DISTINCT "{c.code}", "{c.text}" FROM "{t}"').fetchall()}
                 for t, (c,) in CODED_TEXTS.items()}
        for twin in result.twins:
            if twin.noise_level is NoiseLevel.QUERY:
                continue
            for table_name, rows in _rows_written(con, twin).items():
                for row in rows:
                    if table_name == "icustays" and None not in (row["los"], row["intime"], row["outtime"]):
                        checked["icustays"] += 1
                        span = (row["outtime"] - row["intime"]).total_seconds() / 86400
                        assert row["los"] == pytest.approx(span, abs=1e-9), (twin.task_id, row)
                    if table_name == "labevents" and None not in (row["valuenum"], row["ref_range_lower"],
                                                                  row["ref_range_upper"]) and row["valueuom"]:
                        outside = not row["ref_range_lower"] <= row["valuenum"] <= row["ref_range_upper"]
                        # A unit twin's range moved to the new unit with its value (a reviewer read the flag
                        # against a range left in the usual unit as a tell).
                        checked["labevents"] += 1
                        checked["unit"] += twin.noise_type.value == "unit_mismatch"
                        assert (row["flag"] == "abnormal") == outside, (twin.task_id, row)
                    if table_name in CODED_TEXTS and any(a.row_id < 0 for a in twin.patch.add):
                        (c,) = CODED_TEXTS[table_name]
                        checked["coded"] += 1
                        assert (row[c.code], row[c.text]) in pairs[table_name], (twin.task_id, row)
    assert checked["icustays"] and checked["labevents"], checked


def test_a_duplicate_of_a_table_whose_rows_conflict_only_by_key_keeps_the_key_and_its_description(built):
    """Another DRG code (with its description) for the same admission is a second DRG, which the label
    check reads as a tie: such drafts were made and thrown away, one label check each."""
    from random import Random

    from pipeline.noise.case import CleanCase, SourceLookup, read_evidence
    from pipeline.noise.record_noise import ConflictingDuplicate
    from pipeline.templates import REGISTRY

    db, clean, _ = built
    drafted = 0
    with duckdb.connect(str(db), read_only=True) as con:
        lookup = SourceLookup(con)
        for task in clean:
            evidence = read_evidence(con, [task])[task.task_id]
            if not {"drgcodes", "services"} & set(evidence):
                continue
            case = CleanCase(task, REGISTRY.get(task.template_id), evidence)
            for draft in ConflictingDuplicate().drafts(case, lookup, Random(0)):
                params = {p.name: p.value for p in draft.params}
                if params["table"] in ("drgcodes", "services"):
                    drafted += 1
                    assert params["column"] not in ("drg_code", "description", "curr_service"), params
    assert drafted, "no drgcodes or services duplicate was drafted: nothing was checked"
