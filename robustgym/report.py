"""The evaluation report: ``report.json`` (every number), ``report.md`` (for people), and the chart as
``report.png`` and ``report.svg``; ``write_leaderboard`` puts several reports into one table and chart.

The chart has three panels: success on clean tasks, on noisy tasks and on pairs (a clean task and its
twin both right in the same trial) per intent, the same per noise type (clean = the clean tasks that
type's twins derive from, so each group is a paired comparison), and pass^k against k. Bars carry
their 95% patient-bootstrap intervals; every group's label carries its n (clean / noisy episodes).
"""

import json
from pathlib import Path

REPORT_JSON, REPORT_MD, REPORT_PNG, REPORT_SVG = "report.json", "report.md", "report.png", "report.svg"
LEADERBOARD = "leaderboard"
SERIES = (("clean", "#4C72B0"), ("noise", "#DD8452"), ("pairs", "#55A868"))


def write_report(summary: dict, meta: dict, out_dir: Path) -> dict[str, Path]:
    """Write the report files into ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / REPORT_JSON, "md": out_dir / REPORT_MD, "png": out_dir / REPORT_PNG,
             "svg": out_dir / REPORT_SVG}
    paths["json"].write_text(json.dumps({"meta": meta, **summary}, indent=2, sort_keys=True) + "\n")
    paths["md"].write_text(render_markdown(summary, meta))
    render_chart(summary, meta, [paths["png"], paths["svg"]])
    return paths


# ---------------------------------------------------------------------------- text


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _ci(ci: list | None, scale: float = 100, unit: str = "") -> str:
    return "" if not ci else f" [{scale * ci[0]:.1f}, {scale * ci[1]:.1f}]{unit}"


def _rate(r: dict | None) -> str:
    return "–" if not r or r.get("success") is None else _pct(r["success"]) + _ci(r.get("ci"))


def _gap(x: float | None, ci: list | None = None) -> str:
    return "–" if x is None else f"{100 * x:+.1f} pt" + _ci(ci)


def _score(x: float | None, ci: list | None = None) -> str:
    return "–" if x is None else f"{x:+.3f}" + ("" if not ci else f" [{ci[0]:+.3f}, {ci[1]:+.3f}]")


def _rows_table(title: str, column: str, groups: dict) -> list[str]:
    if not groups:
        return []
    lines = [f"### {title}", "", f"| {column} | clean | n | noise | n | gap | pairs | n |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, g in groups.items():
        pairs = g.get("pairs") or {}
        lines.append(f"| {name} | {_rate(g['clean'])} | {g['clean']['episodes']} | {_rate(g['noise'])} | "
                     f"{g['noise']['episodes']} | {_gap(g['gap'], g.get('gap_ci'))} | {_rate(pairs)} | "
                     f"{pairs.get('episodes', 0)} |")
    return lines + [""]


def render_markdown(summary: dict, meta: dict) -> str:
    o, rel = summary["overall"], summary["reliability"]
    boot = summary.get("bootstrap")
    intervals = (f"Brackets are 95% confidence intervals from a bootstrap over patients ({boot['resamples']} "
                 f"resamples of {boot['clusters']} patients and population-level task families, seed "
                 f"{boot['seed']})." if boot else "No confidence intervals (no bootstrap).")
    lines = [f"# Evaluation: {meta.get('agent')} on {meta.get('release')} ({meta.get('split') or 'all splits'})", "",
             f"{summary['tasks']} tasks, {summary['episodes']} episodes ({meta.get('trials')} trial(s) per task). "
             + intervals, "",
             "| | success | episodes |", "|---|---:|---:|",
             f"| clean | {_rate(o['clean'])} | {o['clean']['episodes']} |",
             f"| noise | {_rate(o['noise'])} | {o['noise']['episodes']} |",
             f"| pairs (clean task and twin both right, same trial) | {_rate(o['pairs'])} | {o['pairs']['episodes']} |",
             f"| all | {_rate(o['all'])} | {o['all']['episodes']} |", "",
             f"Robustness gap (clean - noise): **{_gap(o['gap'], o.get('gap_ci'))}**. "
             f"Reliability: **{_score(rel['score'], rel.get('ci'))}** = (clean side {_score(rel['clean'])} + "
             f"noisy side {_score(rel['noise'])}) / 2, where an episode scores +1 when correct, "
             f"-{rel['wrong_penalty']:g} for a wrong answer or for not answering a clean task, 0 for another "
             f"abstention.", "",
             "| outcomes | " + " | ".join(rel["outcomes"]) + " |", "|---|" + "---:|" * len(rel["outcomes"]),
             "| clean | " + " | ".join(str(v) for v in rel["outcomes_clean"].values()) + " |",
             "| noise | " + " | ".join(str(v) for v in rel["outcomes_noise"].values()) + " |", ""]
    lines += _rows_table("By intent", "intent", summary["by_intent"])
    lines += _rows_table("By level", "level", summary["by_level"])
    lines += _rows_table("By noise level (clean = the twins' own clean tasks)", "noise level",
                         summary["by_noise_level"])
    lines += _rows_table("By noise type (clean = the twins' own clean tasks)", "noise type", summary["by_noise_type"])
    lines += ["### pass^k and pass@k (unbiased, C(c,k)/C(n,k))", "",
              "| tasks | k | pass^k | pass@k |", "|---|---:|---:|---:|"]
    for name, table in summary["pass_k"].items():
        for k in table["pass_hat_k"]:
            lines.append(f"| {name} | {k} | {_pct(table['pass_hat_k'][k])}{_ci(table['pass_hat_k_ci'].get(k))} | "
                         f"{_pct(table['pass_at_k'][k])}{_ci(table['pass_at_k_ci'].get(k))} |")
    lines += ["", "![clean, noise and pair success; pass^k](report.svg)", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- charts


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Fixed ids and no dates in the SVG/PNG: the same numbers give the same files.
    matplotlib.rcParams["svg.hashsalt"] = "robustgym"
    return plt


def _save(fig, paths: list[Path]) -> None:
    for path in paths:
        path = Path(path)
        metadata = {"Date": None} if path.suffix == ".svg" else {"Software": None}
        fig.savefig(path, dpi=110, metadata=metadata)


def _errors(values: list[float], cis: list[list | None]) -> list[list[float]]:
    lo = [v - 100 * c[0] if c else 0.0 for v, c in zip(values, cis)]
    hi = [100 * c[1] - v if c else 0.0 for v, c in zip(values, cis)]
    return [[max(x, 0.0) for x in lo], [max(x, 0.0) for x in hi]]


def _group_panel(ax, title: str, groups: dict) -> None:
    names = list(groups)
    height = 0.8 / len(SERIES)
    for i, (series, color) in enumerate(SERIES):
        values = [100 * ((groups[n].get(series) or {}).get("success") or 0) for n in names]
        cis = [(groups[n].get(series) or {}).get("ci") for n in names]
        ys = [y - 0.4 + height * (i + 0.5) for y in range(len(names))]
        ax.barh(ys, values, height, xerr=_errors(values, cis), label=series, color=color,
                error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#333333"})
    labels = [f"{n.replace('_', ' ')}\nn = {groups[n]['clean']['episodes']} / {groups[n]['noise']['episodes']}"
              for n in names]
    ax.set_yticks(range(len(names)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 105)
    ax.set_xlabel("success (%), 95% CI")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    if not names:
        ax.text(0.5, 0.5, "no tasks", ha="center", va="center", transform=ax.transAxes)


def _pass_k_panel(ax, pass_k: dict) -> None:
    colors = {"all": "#333333", **dict(SERIES)}
    drawn = False
    for name, table in pass_k.items():
        ks = [int(k) for k in table["pass_hat_k"]]
        if not ks:
            continue
        values = [100 * table["pass_hat_k"][str(k)] for k in ks]
        ax.plot(ks, values, marker="o", label=f"{name} ({table['tasks']})", color=colors.get(name))
        cis = [table["pass_hat_k_ci"].get(str(k)) for k in ks]
        if all(cis):
            ax.fill_between(ks, [100 * c[0] for c in cis], [100 * c[1] for c in cis], alpha=0.15,
                            color=colors.get(name))
        drawn = True
    ax.set_xlabel("k (trials that must all succeed)")
    ax.set_ylabel("pass^k (%)")
    ax.set_ylim(0, 105)
    ax.set_title("pass^k (unbiased), 95% CI", fontsize=10)
    ax.grid(alpha=0.3)
    if drawn:
        ks = sorted({int(k) for t in pass_k.values() for k in t["pass_hat_k"]})
        ax.set_xticks(ks)
        ax.legend(fontsize=8, title="tasks (n)", title_fontsize=8)


def render_chart(summary: dict, meta: dict, paths: list[Path]) -> None:
    plt = _pyplot()
    rows = max(len(summary["by_intent"]), len(summary["by_noise_type"]), 3)
    fig, axes = plt.subplots(1, 3, figsize=(17, 2.6 + 0.55 * rows), layout="constrained",
                             gridspec_kw={"width_ratios": [1, 1, 0.8]})
    _group_panel(axes[0], "per intent", summary["by_intent"])
    _group_panel(axes[1], "per noise type (clean = the twins' own clean tasks)", summary["by_noise_type"])
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(SERIES), fontsize=9)
    _pass_k_panel(axes[2], summary["pass_k"])
    rel = summary["reliability"]
    fig.suptitle(f"{meta.get('agent')} on {meta.get('release')} ({meta.get('split') or 'all splits'}): "
                 f"{summary['episodes']} episodes, reliability {_score(rel['score'], rel.get('ci'))}")
    _save(fig, paths)
    plt.close(fig)


# ---------------------------------------------------------------------------- several agents


def leaderboard_rows(reports: list[dict]) -> list[dict]:
    """One row per report, best reliability first (ties: pair success, then agent name)."""
    rows = []
    for r in reports:
        o, rel, meta = r["overall"], r["reliability"], r["meta"]
        pk = r["pass_k"]["pairs"] if r["pass_k"].get("pairs", {}).get("tasks") else r["pass_k"]["all"]
        k = max(pk["pass_hat_k"], key=int) if pk["pass_hat_k"] else None
        rows.append({"agent": meta.get("agent"), "release": meta.get("release"), "split": meta.get("split"),
                     "trials": meta.get("trials"), "episodes": r["episodes"],
                     "reliability": rel["score"], "reliability_ci": rel.get("ci"),
                     "clean": o["clean"], "noise": o["noise"], "gap": o["gap"], "gap_ci": o.get("gap_ci"),
                     "pairs": o["pairs"], "pass_hat_k": {"k": k, "value": pk["pass_hat_k"].get(k) if k else None,
                                                         "ci": pk["pass_hat_k_ci"].get(k) if k else None}})
    return sorted(rows, key=lambda x: (-(x["reliability"] if x["reliability"] is not None else -9),
                                       -((x["pairs"] or {}).get("success") or 0), str(x["agent"])))


def leaderboard_markdown(rows: list[dict]) -> str:
    lines = ["| # | agent | reliability | pairs | clean | noise | gap | pair pass^k | episodes |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(rows, 1):
        pk = r["pass_hat_k"]
        pass_k = "–" if pk["k"] is None else f"k={pk['k']}: {_pct(pk['value'])}{_ci(pk['ci'])}"
        lines.append(f"| {i} | {r['agent']} | {_score(r['reliability'], r['reliability_ci'])} | {_rate(r['pairs'])} | "
                     f"{_rate(r['clean'])} | {_rate(r['noise'])} | {_gap(r['gap'], r['gap_ci'])} | {pass_k} | "
                     f"{r['episodes']} |")
    first = rows[0] if rows else {}
    return (f"Leaderboard: release {first.get('release')}, split {first.get('split') or 'all'}; 95% patient-bootstrap "
            f"intervals in brackets.\n\n" + "\n".join(lines) + "\n")


def render_leaderboard_chart(rows: list[dict], paths: list[Path]) -> None:
    plt = _pyplot()
    names = [str(r["agent"]) for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(13, 1.6 + 0.5 * max(len(rows), 2)), constrained_layout=True)
    rel = [r["reliability"] or 0.0 for r in rows]
    rel_err = [[max(v - (r["reliability_ci"] or [v, v])[0], 0) for v, r in zip(rel, rows)],
               [max((r["reliability_ci"] or [v, v])[1] - v, 0) for v, r in zip(rel, rows)]]
    axes[0].barh(range(len(rows)), rel, xerr=rel_err, color=["#55A868" if v > 0 else "#C44E52" for v in rel],
                 error_kw={"capsize": 3})
    axes[0].axvline(0, color="#333333", linewidth=0.8)
    axes[0].set_xlim(-1.05, 1.05)
    axes[0].set_xlabel("reliability (95% CI)")
    axes[0].set_yticks(range(len(rows)), names)
    axes[0].invert_yaxis()
    height = 0.8 / len(SERIES)
    for i, (series, color) in enumerate(SERIES):
        values = [100 * ((r[series] or {}).get("success") or 0) for r in rows]
        cis = [(r[series] or {}).get("ci") for r in rows]
        ys = [y - 0.4 + height * (i + 0.5) for y in range(len(rows))]
        axes[1].barh(ys, values, height, xerr=_errors(values, cis), label=series, color=color,
                     error_kw={"elinewidth": 0.8, "capsize": 2})
    axes[1].set_yticks(range(len(rows)), [f"{n}\nn = {r['episodes']}" for n, r in zip(names, rows)], fontsize=8)
    axes[1].invert_yaxis()
    axes[1].set_xlim(0, 105)
    axes[1].set_xlabel("success (%), 95% CI")
    axes[1].legend(fontsize=8, loc="lower right")
    for ax in axes:
        ax.grid(axis="x", alpha=0.3)
    first = rows[0] if rows else {}
    fig.suptitle(f"release {first.get('release')}, split {first.get('split') or 'all'}")
    _save(fig, paths)
    plt.close(fig)


def write_leaderboard(reports: list[dict], out_dir: Path) -> dict[str, Path]:
    """``leaderboard.md``, ``.json``, ``.png`` and ``.svg`` in ``out_dir`` for the given report.json contents."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = leaderboard_rows(reports)
    paths = {ext: out_dir / f"{LEADERBOARD}.{ext}" for ext in ("md", "json", "png", "svg")}
    paths["md"].write_text(leaderboard_markdown(rows))
    paths["json"].write_text(json.dumps(rows, indent=2, sort_keys=True) + "\n")
    render_leaderboard_chart(rows, [paths["png"], paths["svg"]])
    return paths
