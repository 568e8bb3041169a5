"""Run every stage's benchmark in pipeline order and print their tables one after another.

    python benchmarks/run_all.py            # all stages
    python benchmarks/run_all.py noise      # some stages

Each stage's script stays runnable on its own with its own options; this only runs them with their
defaults, each in its own process so one stage's memory and caches do not colour the next.
"""

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STAGES = ("source_load", "synthetic", "templates", "noise", "demo_release", "environment", "eval_concurrency")


def main(argv: list[str]) -> int:
    unknown = set(argv) - set(STAGES)
    if unknown:
        print(f"unknown stage(s) {sorted(unknown)}; choose from {', '.join(STAGES)}", file=sys.stderr)
        return 2
    failed = []
    for stage in [s for s in STAGES if not argv or s in argv]:
        print(f"\n## {stage}\n", flush=True)
        start = time.perf_counter()
        code = subprocess.call([sys.executable, str(HERE / f"{stage}.py")], cwd=HERE.parent)
        print(f"\n({stage}: {time.perf_counter() - start:.0f} s, exit {code})", flush=True)
        if code:
            failed.append(stage)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
