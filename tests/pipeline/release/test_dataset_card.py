"""The dataset card: Hugging Face front matter the Hub and `datasets` read, Markdown that renders as
written, and the sections a user of the benchmark needs (noise types and outcomes, how to evaluate,
intended use and limitations, citations)."""

import json
import logging
import re
import warnings

import pytest
import yaml

from pipeline.release.base_database import TERMS
from pipeline.release.dataset_card import NOISE_TYPE_CHANGES, SECTIONS, CardData, render_card
from pipeline.vocabulary import NoiseType, Split
from tests.pipeline.release.demo_tasks import demo_tasks, observed_noise_shares

URL = "https://example.org/ehr-robustgym"


@pytest.fixture(scope="module")
def release(demo_db, tmp_path_factory):
    from pipeline.release import build_release

    tasks = list(demo_tasks(demo_db))
    return build_release(tasks, source_db=demo_db, version="3.0.0", releases_dir=tmp_path_factory.mktemp("rel"),
                         noise_shares=observed_noise_shares(tasks),
                         config={"publication": {"url": URL, "creator": "A Lab"}})


@pytest.fixture(scope="module")
def card(release) -> str:
    return (release.path / "README.md").read_text()


def _front_matter(text: str) -> dict:
    match = re.match(r"\A---\n(.*?)\n---\n", text, re.S)
    assert match, "the card must open with a YAML front matter block"
    return yaml.safe_load(match.group(1))


def test_the_card_opens_with_hugging_face_metadata(card, release):
    meta = _front_matter(card)
    assert meta["license"] == "odbl"  # the demo's licence
    assert meta["pretty_name"] == "EHR-RobustGym 3.0.0"
    assert "question-answering" in meta["task_categories"] and "mimic-iv" in meta["tags"]
    assert meta["size_categories"] == ["n<1K"]
    assert meta["configs"] == [{"config_name": "default", "default": True, "data_files": [
        {"split": s.value, "path": f"tasks/{s.value}.parquet"} for s in Split]}]


def test_each_source_brings_its_own_hub_licence(release):
    manifest = release.manifest
    licences = {name: _front_matter(render_card(CardData(manifest, TERMS[name]))) for name in TERMS}
    assert licences["synthetic"]["license"] == "cc-by-4.0" and "synthetic" in licences["synthetic"]["tags"]
    assert licences["mimic_iv_demo"]["license"] == "odbl"
    credentialed = licences["mimic_iv"]
    assert credentialed["license"] == "other"
    assert credentialed["license_name"] and credentialed["license_link"].startswith("https://physionet.org/")


def test_datasets_loads_the_three_splits_without_the_card_warning(release, monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets

    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        ds = datasets.load_dataset(str(release.path), cache_dir=str(tmp_path / "cache"))
    assert sorted(ds) == sorted(s.value for s in Split)
    for split in Split:
        assert ds[split.value].num_rows == release.manifest["counts"]["by_split"][split.value]
        assert set(ds[split.value]["split"]) == {split.value}
    messages = [r.getMessage() for r in caplog.records] + [str(w.message) for w in caught]
    assert not [m for m in messages if "metadata block" in m.lower() or "card" in m.lower()], messages


def _rendered_text(card: str) -> tuple[list[str], list[str]]:
    """(every text a reader sees, the kinds of raw HTML the Markdown holds), as markdown-it renders it."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    body = re.sub(r"\A---\n.*?\n---\n", "", card, flags=re.S)
    texts, html = [], []

    def walk(tokens):
        for t in tokens:
            if t.type in ("html_inline", "html_block"):
                html.append(t.content)
            if t.type in ("text", "code_inline", "code_block", "fence"):
                texts.append(t.content)
            if t.children:
                walk(t.children)

    walk(md.parse(body))
    return texts, html


def test_the_rendered_card_shows_no_literal_entity_and_holds_no_html(card):
    texts, html = _rendered_text(card)
    assert html == []
    literal = [t for t in texts if re.search(r"&(lt|gt|amp|quot|#\d+);", t)]
    assert literal == []
    # The nested types read as themselves, inside code spans.
    assert any(t.startswith("list<element: struct<") or t.startswith("list<item: struct<") for t in texts), \
        [t for t in texts if t.startswith("list")]


def test_the_noise_table_maps_each_type_to_its_expected_status_with_an_example(card, release):
    section = card.split("## Noise types and expected outcomes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    by_type = {re.match(r"\| `([a-z_]+)`", r).group(1): r for r in rows}
    present = {c["noise_type"] for c in release.manifest["counts"]["by_category"]} - {"clean"}
    assert set(by_type) == present
    expected = {"missing_evidence": "no_evidence", "conflicting_duplicate": "conflicting_evidence",
                "orphaned_record": "inconsistent_record", "implausible_value": "implausible_value",
                "unit_mismatch": "unit_inconsistency", "nonexistent_entity": "invalid_premise",
                "false_premise": "invalid_premise", "out_of_window": "no_evidence", "ambiguous_reference": "ambiguous"}
    for noise_type, row in by_type.items():
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[3] == f"`{expected[noise_type]}`", row
        assert cells[2] == NOISE_TYPE_CHANGES[NoiseType(noise_type)]
        assert len(cells[5]) > 10, row  # an example


def test_every_noise_type_has_a_description():
    assert set(NOISE_TYPE_CHANGES) == set(NoiseType)


def test_the_card_says_how_to_evaluate_its_limits_and_how_to_cite(card):
    for heading in ("## How to evaluate", "## Intended use and limitations", "## Licence and citation"):
        assert heading in card
    evaluate = card.split("## How to evaluate", 1)[1].split("\n## ", 1)[0]
    assert "robustgym eval --release releases/3.0.0" in evaluate and "pass^k" in evaluate
    assert "accepted_outcomes" in evaluate and "tolerance" in evaluate
    cite = card.split("## Licence and citation", 1)[1]
    bibtex = re.findall(r"```bibtex\n(.*?)```", cite, re.S)
    assert len(bibtex) == 2
    assert bibtex[0].startswith("@misc{ehrrobustgym_3_0_0,") and URL in bibtex[0] and "{A Lab}" in bibtex[0]
    assert "10.13026/dp1f-ex47" in bibtex[1] and "goldberger2000physionet" in bibtex[1]
    assert bibtex[0].count("{") == bibtex[0].count("}")


def test_sections_are_small_functions_in_one_list(release):
    """One place to add a section: a function of the card data, listed in SECTIONS (None leaves it out)."""
    data = CardData(release.manifest, TERMS["mimic_iv_demo"])
    extra = lambda d: f"## Extra\n\n{d.counts['total']} tasks"  # noqa: E731
    text = render_card(data, sections=(*SECTIONS, extra))
    assert text.rstrip().endswith(f"## Extra\n\n{release.manifest['counts']['total']} tasks")
    assert "## Changes" not in render_card(data)  # no diff given: the section leaves itself out
