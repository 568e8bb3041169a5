"""The evaluation report: ``report.json`` (every number), ``report.md`` (for people), ``report.png``.

The chart has two panels: success on clean and on noisy tasks per intent, and per noise type
(clean = the clean tasks that type's twins derive from, so each pair of bars is a paired gap).
"""

import json
from pathlib import Path

REPORT_JSON, REPORT_MD, REPORT_PNG = "report.json", "report.md", "report.png"


def write_report(summary: dict, meta: dict, out_dir: Path) -> dict[str, Path]:
    """Write the three report files into ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / REPORT_JSON, "md": out_dir / REPORT_MD, "png": out_dir / REPORT_PNG}
    paths["json"].write_text(json.dumps({"meta": meta, **summary}, indent=2, sort_keys=True) + "\n")
    paths["md"].write_text(render_markdown(summary, meta))
    render_chart(summary, meta, paths["png"])
    return paths


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _gap(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f} pt"


def _rows_table(title: str, column: str, groups: dict) -> list[str]:
    if not groups:
        return []
    lines = [f"### {title}", "", f"| {column} | clean | n | noise | n | gap |", "|---|---:|---:|---:|---:|---:|"]
    for name, g in groups.items():
        lines.append(f"| {name} | {_pct(g['clean']['success'])} | {g['clean']['episodes']} | "
                     f"{_pct(g['noise']['success'])} | {g['noise']['episodes']} | {_gap(g['gap'])} |")
    return lines + [""]


def render_markdown(summary: dict, meta: dict) -> str:
    o, rel = summary["overall"], summary["reliability"]
    lines = [f"# Evaluation: {meta.get('agent')} on {meta.get('release')} ({meta.get('split') or 'all splits'})", "",
             f"{summary['tasks']} tasks, {summary['episodes']} episodes ({meta.get('trials')} trial(s) per task).", "",
             "| | success | episodes |", "|---|---:|---:|",
             f"| clean | {_pct(o['clean']['success'])} | {o['clean']['episodes']} |",
             f"| noise | {_pct(o['noise']['success'])} | {o['noise']['episodes']} |",
             f"| all | {_pct(o['all']['success'])} | {o['all']['episodes']} |", "",
             f"Robustness gap (clean - noise): **{_gap(o['gap'])}**. "
             f"Reliability score: **{rel['score'] if rel['score'] is not None else '–'}** "
             f"(correct - {rel['wrong_penalty']:g} x wrong answers, per episode; outcomes: "
             + ", ".join(f"{k} {v}" for k, v in rel["outcomes"].items()) + ").", ""]
    lines += _rows_table("By intent", "intent", summary["by_intent"])
    lines += _rows_table("By level", "level", summary["by_level"])
    lines += _rows_table("By noise level (clean = the twins' own clean tasks)", "noise level",
                         summary["by_noise_level"])
    lines += _rows_table("By noise type (clean = the twins' own clean tasks)", "noise type", summary["by_noise_type"])
    lines += ["### pass^k and pass@k (unbiased)", "", "| tasks | k | pass^k | pass@k |", "|---|---:|---:|---:|"]
    for name, table in summary["pass_k"].items():
        for k in table["pass_hat_k"]:
            lines.append(f"| {name} | {k} | {_pct(table['pass_hat_k'][k])} | {_pct(table['pass_at_k'][k])} |")
    lines += ["", "![clean vs noise success](report.png)", ""]
    return "\n".join(lines)


def render_chart(summary: dict, meta: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("per intent", summary["by_intent"]), ("per noise type (paired clean tasks)", summary["by_noise_type"])]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8), constrained_layout=True)
    for ax, (title, groups) in zip(axes, panels):
        names = list(groups)
        xs = range(len(names))
        clean = [100 * (groups[n]["clean"]["success"] or 0) for n in names]
        noise = [100 * (groups[n]["noise"]["success"] or 0) for n in names]
        ax.bar([x - 0.2 for x in xs], clean, 0.4, label="clean", color="#4C72B0")
        ax.bar([x + 0.2 for x in xs], noise, 0.4, label="noise", color="#DD8452")
        ax.set_xticks(list(xs), [n.replace("_", "\n") for n in names], fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_ylabel("success (%)")
        ax.set_title(title)
        if not names:
            ax.text(0.5, 0.5, "no tasks", ha="center", va="center", transform=ax.transAxes)
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"{meta.get('agent')} on {meta.get('release')} ({meta.get('split') or 'all splits'})")
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
