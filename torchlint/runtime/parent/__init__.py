"""The parent's side of `torchlint run`: never imports torch or the user's code.

``command`` is the click command (``defaults`` what it shares with the run); ``pipeline`` runs
options to exit code: checks the ``target`` and its import closure (``scope``), starts the child
(``runner``) under a ``supervisor`` process (``runtime.lifetime``: processes die together;
``interrupts``: signals become cleanup), matches the child's evidence to the static findings
(``runtime.merge``) and writes the report (``runtime.report``). The top layer: it may import
every other subpackage, and none imports it."""
