"""The parent's side of `torchlint run`: never imports torch or the user's code.

``command`` is the click command (``defaults`` what it shares with the run); ``pipeline`` runs
options to exit code: checks the ``target`` and its import closure (``scope``), starts the child
(``runner``) under a ``supervisor`` process (``lifetime``: processes die together;
``interrupts``: signals become cleanup), matches the child's evidence to the static findings
(``matching``) and writes the report (``torchlint.runtime.report``)."""
