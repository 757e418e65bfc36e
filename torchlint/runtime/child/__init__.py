"""The child's side of `torchlint run`: what runs inside the user's process (imports torch).

``main`` (``python -m torchlint.runtime.child.main``) picks the device mode, installs the probes
and runs the target (``notebook_run`` for a notebook); ``probing`` is the one TorchFunctionMode
that feeds every probe, ``steps`` counts optimizer steps and forward calls, ``user_warnings``
hands torch's warnings to the probes, ``processes`` notes processes the program starts,
``watchdog`` says where the target was when its time ran out, and ``imported_files`` lists the
user's files the program imported."""
