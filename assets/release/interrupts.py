"""Interrupts in a Dagster run. Dagster swaps its own SIGINT handler in around each run: in a step
it raises ``DagsterExecutionInterruptedError``; while it sets a run up or winds it down it only notes
the signal, and it forgets the note when the run ends, so the run succeeds and the build goes on.
``run_graph`` therefore reads interrupts from ``pipeline.interrupts.InterruptWatch`` after each step,
and this module names what counts as one."""

from dagster._core.errors import DagsterExecutionInterruptedError

INTERRUPTS = (KeyboardInterrupt, DagsterExecutionInterruptedError)


def is_interrupt(exc_type: type[BaseException]) -> bool:
    return issubclass(exc_type, INTERRUPTS)
