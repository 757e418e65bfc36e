"""Built-in runtime probes: one package each, each its own plugin.

Every probe package is registered through its own entry point in the ``torchlint`` group,
exactly as a third party's probe is, and owns everything of its feature: its runtime-only
rules with their docs (``torchlint_rules``), its ``torchlint run`` options
(``torchlint_run_options``), its report section (``torchlint_run_section``) and the probe
class (``torchlint_probes``). A package's ``__init__`` must stay importable without torch:
the static ``torchlint check`` loads every plugin. The probe class lives in the package's
``probe`` module and is imported only in the child process of ``torchlint run``.
"""
