"""Reference floors of a release: what agents that never look at the record score on it.

``score_floors(release_dir, split="test")`` plays the ``abstain`` agent (always ``no_evidence``) and
the ``clean_answer`` agent (the clean task's gold answer, never checks) on one split and returns
their headline numbers with 95% patient-bootstrap intervals. The higher of the two is the bar any
reported model must clear: below it, a model does no better than a rule that ignores the data.

The release build runs it on the release folder before the dataset card is written
(``release_floors`` is the hook ``pipeline.release.build_release`` takes), so the card prints them;
``pipeline`` never imports ``robustgym``, the Dagster release asset passes the hook in.
"""

from pathlib import Path

from pipeline.vocabulary import Split

FLOOR_AGENTS = ("abstain", "clean_answer")
HEADLINE = ("reliability", "pairs", "clean", "noise")


def score_floors(release_dir: Path | str, *, split: Split | str = Split.TEST, base_database: Path | str | None = None,
                 resamples: int = 1000, seed: int = 0, verify: bool = True) -> dict:
    """The floor agents' headline numbers on ``split`` of the release at ``release_dir``; ``verify``
    as in ``load_release``."""
    from robustgym.agents import make_agent
    from robustgym.metrics import summarize
    from robustgym.release import load_release
    from robustgym.runner import run_agent

    split = Split(split).value
    release = load_release(release_dir, base_database=base_database, verify=verify, splits=[split])
    tasks = release.tasks(split)
    out = {"split": split, "tasks": len(tasks), "agents": {}, "bar": None,
           "bootstrap": {"unit": "patient", "resamples": resamples, "seed": seed}}
    if not tasks:
        return out
    for name in FLOOR_AGENTS:
        summary = summarize(run_agent(release, make_agent(name), split=split), resamples=resamples, seed=seed)
        o, rel = summary["overall"], summary["reliability"]
        out["agents"][name] = {
            "reliability": rel["score"], "reliability_ci": rel["ci"],
            "pairs": o["pairs"]["success"], "pairs_ci": o["pairs"]["ci"],
            "clean": o["clean"]["success"], "clean_ci": o["clean"]["ci"],
            "noise": o["noise"]["success"], "noise_ci": o["noise"]["ci"],
            "episodes": summary["episodes"]}
    agents = out["agents"].values()
    out["bar"] = {key: max((a[key] for a in agents if a[key] is not None), default=None)
                  for key in ("reliability", "pairs")}
    return out


def release_floors(release_dir: Path, source_db: Path) -> dict:
    """The release build's hook: ``{"floors": ...}`` on the test split, added to the manifest.

    Not verified on load: the build has just written the folder and digested the base database from
    ``source_db`` (the fingerprint is still compared), and verifies every file after the floors are in.
    A second content digest of the source is a full sorted scan: minutes at 365K patients."""
    return {"floors": score_floors(release_dir, base_database=source_db, verify=False)}
