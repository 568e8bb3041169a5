"""Time the noise stage: a default run (5,486 pairs) on the MIMIC-IV demo, and per twin the patch
application and the proof. Target: median patch application + proof under 20 ms per twin on the demo.

The demo is loaded with the chartevents reconstruction overlaid (31 tables, every intent); clean
tasks are extracted with the templates stage's defaults. Neither is part of the timing. Then:

- ``build_pairs`` with the default ``NoiseConfig`` is timed end to end, and its own per-candidate
  proof times (patch + gold SQL + outcome checks, failed candidates included) are summarised;
- every twin it built is re-checked from its stored fields (``pipeline.noise.recheck``): the time
  to lay its patch's views over the source and drop them ("apply"), and to re-run its proof with the
  patch in place ("proof"), by noise level.

    python benchmarks/noise.py [--repeat 1] [--synthetic-patients 0]

Prints markdown; paste it under "Noise" in benchmarks/README.md.
"""

import argparse
import os
import resource
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import duckdb

from pipeline.loader import load_mimic
from pipeline.noise import NoiseConfig, build_pairs
from pipeline.noise.recheck import recheck_twin
from pipeline.noise.report import drops_markdown
from pipeline.templates import REGISTRY, extract_clean_tasks
from pipeline.vocabulary import NoiseLevel

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO.parent / "shared" / "mimic-iv-demo"
CHARTEVENTS = REPO.parent / "shared" / "mimic-iv-demo-chartevents"


def _stats(values: list[float]) -> tuple[str, str, str, str]:
    if not values:
        return "0", "-", "-", "-"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{len(values):,}", f"{statistics.median(values):.2f}", f"{p95:.2f}", f"{ordered[-1]:.2f}"


def run(db: Path, label: str, repeat: int) -> list[str]:
    clean = extract_clean_tasks(db, seed=0).tasks
    seconds, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = build_pairs(db, clean, NoiseConfig(), seed=0)
        seconds.append(time.perf_counter() - started)
    twins = result.twins
    by_id = {t.task_id: t for t in clean}
    apply_ms, proof_ms, total_ms = defaultdict(list), defaultdict(list), []
    problems = 0
    with duckdb.connect(str(db), read_only=True) as con:
        catalog = con.execute("SELECT current_database()").fetchone()[0]
        for twin in twins:
            r = recheck_twin(con, by_id[twin.clean_task_id], twin, REGISTRY.get(twin.template_id), catalog)
            problems += r.problem is not None
            apply_ms[twin.noise_level].append(r.apply_ms)
            proof_ms[twin.noise_level].append(r.proof_ms)
            total_ms.append(r.apply_ms + r.proof_ms)
    patch_rows = [len(t.patch.hide) + len(t.patch.add) + len(t.patch.update) for t in twins if not t.patch.is_empty]
    lines = [f"**{label}**: {len(clean):,} clean tasks; {len(twins):,} twins from {len(result.proof_ms):,} candidates "
             f"proven ({sum(result.dropped.values()):,} dropped); `build_pairs` {statistics.median(seconds):.1f} s "
             f"(median of {repeat}); patches of {min(patch_rows, default=0)}-{max(patch_rows, default=0)} rows "
             f"(median {statistics.median(patch_rows) if patch_rows else 0:g}); re-check failures: {problems}", "",
             "| step | n | median ms | p95 ms | max ms |", "| --- | ---: | ---: | ---: | ---: |"]
    lines.append("| build: proof per candidate (patch, gold SQL, outcomes; failed ones too) | "
                 + " | ".join(_stats(result.proof_ms)) + " |")
    for level in NoiseLevel:
        if level is not NoiseLevel.QUERY:
            lines.append(f"| {level.value}: apply patch (views laid and dropped) | "
                         + " | ".join(_stats(apply_ms[level])) + " |")
        lines.append(f"| {level.value}: proof re-run ({'gold SQL under the patch' if level is not NoiseLevel.QUERY else 'changed question'}) | "
                     + " | ".join(_stats(proof_ms[level])) + " |")
    lines.append("| **every twin: apply + proof** | " + " | ".join(_stats(total_ms)) + " |")
    lines += ["", "Realised mix (twins per intent, task level and noise type):", "", result.mix.markdown(),
              "", "Dropped candidates:", "", drops_markdown(result)]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="default runs timed (median reported)")
    parser.add_argument("--synthetic-patients", type=int, default=0, help="also time a synthetic database")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        demo = Path(tmp) / "demo.duckdb"
        load_mimic([DEMO, CHARTEVENTS], demo)
        out = run(demo, "MIMIC-IV demo (100 patients, 31 tables), default NoiseConfig (5,486 pairs)", args.repeat)
        if args.synthetic_patients:
            from pipeline.synthetic import generate_synthetic

            synthetic = Path(tmp) / "synthetic.duckdb"
            generate_synthetic(synthetic, patients=args.synthetic_patients, seed=0)
            out += [""] + run(synthetic, f"synthetic ({args.synthetic_patients:,} patients, seed 0)", args.repeat)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"```\n{len(REGISTRY)} templates; duckdb {duckdb.__version__}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}; peak RSS of the whole run {peak_mb:,.0f} MB\n```\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
