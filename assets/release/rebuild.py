"""Run the whole asset graph, source to release, in-process: what ``robustgym build`` does.

Assets are materialized one at a time in dependency order, each partition of a partitioned asset
in its own run (clean tasks are partitioned by intent, twins by noise level), on one Dagster
instance so every materialization and check evaluation is recorded as usual (and shows in the UI
when the instance is ``$DAGSTER_HOME``'s). A failed step stops the graph there; a blocking check
that fails makes its asset's step fail (``assets/gate.py``). Progress events the stages send while
they run (``pipeline.progress``) reach the runner's ``progress`` callback too.

Run configuration is given per setting, not per asset: each setting is passed to every asset whose
config declares a field of that name (``seed`` reaches the source, the templates, the noise and the
release stages alike), so the runner does not hard-code the stages' config classes.
"""

import resource
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import dagster as dg

from assets.gate import EVIDENCE
from assets.release.interrupts import INTERRUPTS, is_interrupt
from pipeline.interrupts import InterruptWatch, forget_in_child, signals_held
from pipeline.progress import ProgressEvent, listening


@dataclass(frozen=True)
class FailedCheck:
    asset: str
    check: str
    severity: str
    metadata: dict  # metadata entry -> text

    @property
    def evidence(self) -> str:
        """What failed, how often, an example (the check's ``evidence``; older checks: their summary)."""
        for key in (EVIDENCE, "summary", "problems", "failures"):
            if self.metadata.get(key):
                return self.metadata[key]
        return "(the check recorded no evidence)"


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


@dataclass(frozen=True)
class Step:
    asset: str
    partition: str | None
    success: bool
    seconds: float
    failed_checks: tuple[FailedCheck, ...] = ()
    error: str | None = None
    metadata: dict = field(default_factory=dict)  # the materialization's metadata, as text
    # User + system seconds of the step's process and of the processes it started and waited for (the
    # SQL sandboxes of the reference agents): on a busy machine the wall time moves, the CPU much less.
    cpu: float | None = None

    @property
    def label(self) -> str:
        return self.asset + (f"[{self.partition}]" if self.partition else "")


@dataclass
class GraphRun:
    steps: list[Step] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return bool(self.steps) and all(s.success for s in self.steps)

    @property
    def failed(self) -> Step | None:
        return next((s for s in self.steps if not s.success), None)

    def last(self, asset: str) -> Step | None:
        return next((s for s in reversed(self.steps) if s.asset == asset), None)


def _config_fields(assets_def: dg.AssetsDefinition) -> set[str]:
    schema = assets_def.op.config_schema
    config_type = getattr(schema, "config_type", None)
    return set(getattr(config_type, "fields", {}) or {})


def plan(defs: dg.Definitions) -> list[tuple[dg.AssetsDefinition, dg.AssetKey, list[str | None]]]:
    """Materializable assets in dependency order, with the partitions each one runs for."""
    graph = defs.resolve_asset_graph()
    assets_by_key = {k: a for a in (defs.assets or []) if isinstance(a, dg.AssetsDefinition) for k in a.keys}
    out = []
    for key in graph.toposorted_asset_keys:
        if key not in assets_by_key or not graph.get(key).is_materializable:
            continue
        a = assets_by_key[key]
        out.append((a, key, list(a.partitions_def.get_partition_keys()) if a.partitions_def else [None]))
    return out


def config_fields(defs: dg.Definitions) -> dict[str, list[str]]:
    """Config field name -> the assets whose config has it."""
    out: dict[str, list[str]] = {}
    for assets_def, key, _ in plan(defs):
        for name in sorted(_config_fields(assets_def)):
            out.setdefault(name, []).append(key.to_user_string())
    return out


def _root_cause(error) -> str:
    """The innermost error's message: Dagster wraps what the asset raised in its own errors."""
    while getattr(error, "cause", None) is not None:
        error = error.cause
    return error.message.strip()


def _text(value) -> str:
    return str(getattr(value, "value", getattr(value, "text", getattr(value, "md_str", value))))


def check_evaluations(instance: dg.DagsterInstance, run_id: str) -> list[dg.AssetCheckEvaluation]:
    """Every check evaluation a run recorded, including those of a step that then failed (which the
    in-process result does not list)."""
    records = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    return [r.dagster_event.event_specific_data for r in records if r.dagster_event]


def _cpu_seconds() -> float:
    """CPU this process and its waited-for children have spent so far. A step's share is a difference:
    a forked worker runs one step, and the parent runs its steps one at a time and joins its forked
    workers only between them."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _materialize(everything, resources, instance, key: dg.AssetKey, partition: str | None, run_config: dict,
                 say: Callable[[str], None]) -> Step:
    """One asset (one partition of it) in one run; what the run did, as plain data."""
    name = key.to_user_string()
    started, cpu_before = time.perf_counter(), _cpu_seconds()
    with listening(say):
        result = dg.materialize(everything, selection=dg.AssetSelection.assets(key), partition_key=partition,
                                resources=resources, run_config=run_config or None, instance=instance,
                                raise_on_error=False)
    seconds, cpu = time.perf_counter() - started, _cpu_seconds() - cpu_before
    failed = tuple(
        FailedCheck(e.asset_key.to_user_string(), e.check_name, e.severity.value,
                    {k: _text(v) for k, v in e.metadata.items()})
        for e in check_evaluations(instance, result.run_id) if not e.passed)
    error = None
    if not result.success:
        messages = [_root_cause(ev.step_failure_data.error) for ev in result.get_step_failure_events()
                    if ev.step_failure_data and ev.step_failure_data.error]
        error = "; ".join(messages) or "the run failed"
    metadata = {k: _text(v) for ev in result.get_asset_materialization_events()
                for k, v in ev.materialization.metadata.items()}
    return Step(name, partition, result.success, seconds, failed, error, metadata, cpu)


# What a forked worker needs and cannot be handed as an argument (definitions hold closures): set by
# the parent just before it forks, inherited by the children, never read in the parent.
_FORKED: dict = {}


def _tagged(message: str, partition: str | None) -> str:
    """A worker's progress event, its stage named with the partition: the parent's ETA and lines stay
    per partition when several report at once."""
    if isinstance(message, ProgressEvent) and partition:
        return ProgressEvent(f"{message.stage} [{partition}]", message.unit, message.done, message.total,
                             message.label, message.note)
    return message


def _partition_worker(key: dg.AssetKey, partition: str, run_config: dict, results) -> None:
    """A forked worker: one partition in its own run. Its progress, then its Step, go to the parent
    through ``results`` (a pipe of its own: nothing is shared with the other workers). Stopped by the
    parent (SIGTERM), it ends without a word: the parent reports the interrupt."""
    forget_in_child()
    everything, resources, instance_ref = (_FORKED[k] for k in ("everything", "resources", "instance_ref"))
    sending = threading.Lock()  # a stage may report from threads of its own

    def send(kind: str, payload) -> None:
        with sending:
            results.send((kind, payload))

    try:
        try:
            instance = dg.DagsterInstance.from_ref(instance_ref) if instance_ref else dg.DagsterInstance.ephemeral()
            with instance:
                step = _materialize(everything, resources, instance, key, partition, run_config,
                                    lambda message: send("progress", _tagged(message, partition)))
        except Exception as exc:  # noqa: BLE001 - the parent reports it as the step's failure
            step = Step(key.to_user_string(), partition, False, 0.0, error=f"{type(exc).__name__}: {exc}")
        send("step", step)
    except BaseException as exc:
        if not is_interrupt(type(exc)):
            raise
    finally:
        # Nothing is left but exiting, where a stop signal would print a traceback (SIGKILL still ends it).
        for stop in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop, signal.SIG_IGN)


def _instance_ref(instance: dg.DagsterInstance):
    """The reference workers reopen the instance by, or None for an in-memory one (the workers then
    record their runs in throwaway instances of their own; the build's result is the same)."""
    return None if instance.is_ephemeral else instance.get_ref()


def run_graph(defs: dg.Definitions, *, settings: Mapping[str, object], resources: Mapping | None = None,
              instance: dg.DagsterInstance | None = None, progress: Callable[[str], None] | None = None,
              log_level: str | None = None, workers: int = 1) -> GraphRun:
    """Materialize every asset of ``defs`` in dependency order; stop at the first failure.

    ``settings``: name -> value, passed to each asset whose config has a field of that name.
    ``resources`` override the definitions' resources (e.g. ProjectPaths with other folders).
    ``log_level`` sets Dagster's console logger (e.g. CRITICAL to leave the output to ``progress``).
    ``workers`` > 1 runs the partitions of one asset (the six intents, the three noise levels) in that
    many forked processes at once, each partition in its own run as before. Partitions write only
    their own files and read only what earlier assets wrote, so the outputs are the bytes of a serial
    build; steps are reported in partition order whatever order they finish in.

    Ctrl-C or SIGTERM raises ``KeyboardInterrupt``: at once as a rule, at the latest when the step
    running at the time ends (``pipeline/interrupts.py`` says why a step may not notice).
    """
    say = progress or (lambda message: None)
    everything = [*(defs.assets or []), *(defs.asset_checks or [])]
    resources = {**(defs.resources or {}), **(resources or {})}
    instance = instance or dg.DagsterInstance.ephemeral()
    steps = plan(defs)
    total = sum(len(p) for _, _, p in steps)
    run = GraphRun()

    def record(step: Step) -> bool:
        run.steps.append(step)
        note = "ok" if step.success else "FAILED"
        warnings = [c for c in step.failed_checks if c.severity != dg.AssetCheckSeverity.ERROR.value]
        if warnings:
            note += f" ({len(warnings)} check warning(s))"
        cpu = f", {step.cpu:.1f} s of CPU" if step.cpu is not None else ""
        say(f"[{len(run.steps)}/{total}] {step.label} {note} in {step.seconds:.1f} s{cpu}")
        for c in warnings:
            say(f"  warning {c.asset}.{c.check}:\n" + _indent(c.evidence))
        return step.success

    with InterruptWatch(quiet=INTERRUPTS) as interrupts:
        for assets_def, key, partitions in steps:
            name = key.to_user_string()
            fields = _config_fields(assets_def)
            config = {k: v for k, v in settings.items() if k in fields}
            run_config: dict = {"ops": {assets_def.op.name: {"config": config}}} if config else {}
            if log_level:
                run_config["loggers"] = {"console": {"config": {"log_level": log_level}}}
            labels = [name + (f"[{p}]" if p else "") for p in partitions]
            if workers > 1 and len(partitions) > 1:
                done = len(run.steps)
                say(f"[{done + 1}-{done + len(partitions)}/{total}] {', '.join(labels)} ... "
                    f"({min(workers, len(partitions))} at a time)")
                results = _run_partitions(everything, resources, instance, key, partitions, run_config, say,
                                          workers)
                _stop_if(interrupts)
                for step in results:  # partition order: a failure is reported where a serial build reports it
                    if not record(step):
                        return run
                continue
            for partition, label in zip(partitions, labels):
                say(f"[{len(run.steps) + 1}/{total}] {label} ...")
                step = _materialize(everything, resources, instance, key, partition, run_config, say)
                _stop_if(interrupts)
                if not record(step):
                    return run
    return run


def _stop_if(interrupts: InterruptWatch) -> None:
    """An interrupt that arrived during the step ends the build here, however the step ended. A
    Dagster run leaves SIGTERM with SIGINT's handler: the watch's comes back for the next step."""
    interrupts.keep_sigterm()
    if interrupts.received():
        raise KeyboardInterrupt


STOP_GRACE_SECONDS = 10.0  # for a stopped worker to end its step (its files are written atomically)


def _run_partitions(everything, resources, instance, key, partitions, run_config, say, workers) -> list[Step]:
    """Each partition in a forked process, ``workers`` at a time; their Steps in partition order.

    Fork, not spawn: the children inherit the loaded definitions (which cannot be pickled) and start
    in milliseconds instead of re-importing Dagster. No DuckDB connection is open between steps, so
    none is shared across the fork, and each partition gets a fresh process (nothing cached in one
    partition's memory reaches the next). Each child sends its progress and then its Step through a
    pipe of its own, which the parent reads as they come: progress reaches whatever ``say`` writes to
    (a captured stream included), and a child that dies without a Step is a failed step, not a hang.
    An interrupt (Ctrl-C) or any error in the parent stops the children (``_stop``)."""
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("fork")
    name = key.to_user_string()
    waiting = list(enumerate(partitions))
    running: dict = {}  # the parent's end of a child's pipe -> (partition index, child)
    steps: dict[int, Step] = {}
    _FORKED.update(everything=everything, resources=resources, instance_ref=_instance_ref(instance))
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                index, partition = waiting.pop(0)
                receive, send = context.Pipe(duplex=False)
                child = context.Process(target=_partition_worker, args=(key, partition, run_config, send),
                                        name=f"{name}[{partition}]", daemon=True)
                with signals_held():  # a Ctrl-C lands after the fork, with the child already known to _stop
                    child.start()
                    send.close()  # the child holds the only write end: its exit is the pipe's end
                    running[receive] = (index, child)
            for receive in wait(list(running)):
                index, child = running[receive]
                try:
                    kind, payload = receive.recv()
                except EOFError:
                    kind, payload = "died", None
                if kind == "progress":
                    say(payload)
                    continue
                del running[receive]
                receive.close()
                child.join()
                steps[index] = payload if kind == "step" else Step(
                    name, partitions[index], False, 0.0,
                    error=f"its worker process ended without a result (exit code {child.exitcode})")
        return [steps[i] for i in range(len(partitions))]
    finally:
        _stop([child for _, child in running.values()])
        for receive in running:
            receive.close()
        _FORKED.clear()


def _stop(children: list) -> None:
    """SIGTERM, which Dagster turns into an interrupted step in each child; whatever still runs after
    ``STOP_GRACE_SECONDS`` (or at a second Ctrl-C) is killed. No child outlives the build."""
    try:
        for child in children:
            child.terminate()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child in children:
            child.join(max(0.0, deadline - time.monotonic()))
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
                child.join()
