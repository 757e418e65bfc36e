"""Defaults the command line (``command``) and the run (``pipeline``) share; cheap to import.

Here rather than in either so that the command, which the CLI imports on every invocation,
need not import the pipeline, and the pipeline need not import the command.
"""

#: Steps the probes watch every torch call for, by default: enough for the probes that compare
#: steps (gradient flow, memory growth, syncs per step), few enough that a long run pays
#: for them once (see `Probe.keeps_watching`).
DEFAULT_WATCH_STEPS = 10
