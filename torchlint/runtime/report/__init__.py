"""The `torchlint run` report, in the parent: text and JSON (``text``), report.html (``html_page``),
the building blocks of its sections (``html_kit``) and what a probe's plugin returns for its part
(``sections``). Plain data only; never imports torch."""
