"""Record what torch-preflight's own rule tests feed its engine, and what it reports.

Runs inside a throwaway environment where torch-preflight is installed (never in
torchlint's), with the peer's unpacked source distribution given as argv[1]. Its
`tests/test_rules.py` calls `analyze(source)` / `codes(source)` from its conftest; we put a
recording `conftest` in `sys.modules` first, run every test function, and print one JSON
document: each snippet with the test that analysed it, the test's outcome, and the peer's
own findings (code, line). Those findings are the peer's expected output: its tests pass
on them. `examples/bad_train.py` is checked the same way.

Standard library and torch-preflight only; nothing of the peer is written anywhere.
"""

from __future__ import annotations

import inspect
import json
import sys
import tempfile
import textwrap
import types
from pathlib import Path

from torch_preflight.engine import check_source

SDIST = Path(sys.argv[1])
records: list[dict] = []
current_test = ["<module>"]


def _findings(diagnostics) -> list[list]:
    return [[d.code, d.line] for d in diagnostics]


def analyze(source, cfg=None):
    text = textwrap.dedent(source).lstrip("\n")
    diagnostics, _ = check_source("t.py", text, cfg)
    records.append({"test": current_test[0], "source": text, "findings": _findings(diagnostics), "custom_config": cfg is not None})
    return diagnostics


def codes(source, cfg=None):
    return sorted(d.code for d in analyze(source, cfg))


def main() -> None:
    conftest = types.ModuleType("conftest")
    conftest.analyze, conftest.codes = analyze, codes
    sys.modules["conftest"] = conftest
    sys.path.insert(0, str(SDIST / "tests"))
    import test_rules  # noqa: E402  (after the recording conftest is in place)

    outcomes = {}
    for name, function in list(vars(test_rules).items()):
        if not (name.startswith("test_") and inspect.isfunction(function)):
            continue
        current_test[0] = name
        kwargs = {}
        for parameter in inspect.signature(function).parameters:
            if parameter == "tmp_path":
                kwargs[parameter] = Path(tempfile.mkdtemp())
            elif parameter == "check":
                kwargs[parameter] = codes
            else:
                outcomes[name] = f"skipped (needs fixture {parameter!r})"
                break
        else:
            try:
                function(**kwargs)
                outcomes[name] = "passed"
            except AssertionError:
                outcomes[name] = "failed"
            except Exception as error:  # a test of the peer's that needs something we lack
                outcomes[name] = f"error ({type(error).__name__})"
    example = SDIST / "examples" / "bad_train.py"
    text = example.read_text()
    diagnostics, _ = check_source(str(example), text, None)
    json.dump(
        {
            "snippets": records,
            "outcomes": outcomes,
            "example": {"name": "examples/bad_train.py", "source": text, "findings": _findings(diagnostics)},
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
