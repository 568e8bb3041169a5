"""What downstream teams import needs no Dagster and no Great Expectations: a whole episode, the
reference agents, the report and the Gymnasium adapter run in a fresh interpreter without loading
either."""

import subprocess
import sys
import textwrap


def test_an_evaluation_loads_neither_dagster_nor_great_expectations(demo_release_dir, tmp_path):
    script = textwrap.dedent(f"""
        import sys
        import robustgym
        from robustgym.agents import make_agent
        from robustgym.gym_env import RobustGymEnv
        from robustgym.metrics import summarize
        from robustgym.report import write_report
        from robustgym.runner import run_agent

        release = robustgym.load_release({str(demo_release_dir)!r})
        with robustgym.Env(release) as env:
            env.reset(release.tasks("test")[0].task_id)
            assert env.python("print(1)").ok
        trajectories = run_agent(release, make_agent("checking"), split="test")
        write_report(summarize(trajectories), {{"agent": "checking"}}, {str(tmp_path)!r})
        RobustGymEnv(release, split="test").close()
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("dagster", "great_expectations"))
        print(loaded)
        sys.exit(1 if loaded else 0)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
