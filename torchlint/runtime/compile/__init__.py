"""`torch.compile` under `torchlint run`.

``capture`` records the model a program runs, the callables it compiles and their first inputs;
``check`` runs the compile probe's checks on them (graph breaks, recompilations, the backend
ladder, accuracy, speed); ``minify`` shrinks a graph Inductor failed on in a bounded process
(``minify_worker``), ``repro_script`` is the script it leaves and ``minify_report`` its part of
the report; ``profile`` and ``kernel_attribution`` put compiled time next to eager; ``regions``
keeps the probes out of the program's own compiled callables."""
