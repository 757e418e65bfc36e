"""The environment variables through which the parent hands the child its run: set by
``parent.runner`` and ``parent.supervisor``, read (and removed) by ``child.main``."""

SPEC_ENV = "TORCHLINT_RUN_SPEC"  # the child reads its RunSpec here (and removes it)
ENV_PARENT = "TORCHLINT_RUN_SUPERVISOR"  # the supervisor's pid: the child dies with it
