"""What a minified repro script says when run alone, and how its failure is recognised.

The script must run without torchlint (a user attaches it to a bug report), so its main is
plain torch: it compiles the graph with Inductor the way the program's compile did
(``compile_fx_inner`` on the aten graph), compares with eager under torchlint's dtype
tolerances, and ends with one line the probe can read back:

- ``TORCHLINT-REPRO: accuracy: ...`` and exit 1 when the outputs differ;
- Inductor's exception (a compile error carries the compiler's output) and exit 1;
- ``TORCHLINT-REPRO: ok: ...`` and exit 0 when nothing fails.
"""

from __future__ import annotations

import re
from typing import Any

from torchlint.runtime.compile.check import TOLERANCES, compare, compiler_error

MARK = "TORCHLINT-REPRO:"

_TOLERANCES = "{" + ", ".join(f"{str(dtype)!r}: {tol!r}" for dtype, tol in TOLERANCES.items()) + "}"

#: The script's main; ``@KIND@`` is the failure it was minified for (see ``standalone_main``).
_MAIN = '''
if __name__ == "__main__":
    import os
    import sys

    from torch._dynamo.debug_utils import InputReader
    from torch._inductor.compile_fx import compile_fx_inner
    from torch.fx.experimental.proxy_tensor import make_fx

    # The inputs the program passed, saved beside this file (not random data).
    store = os.path.join(os.path.dirname(os.path.abspath(__file__)), "repro_inputs")
    if not os.path.isdir(store):
        sys.exit(f"@MARK@ error: the inputs folder {store} is missing")
    reader = InputReader(save_dir=store)
    load_args(reader)
    args = reader.args
    tolerances = @TOLERANCES@  # (rtol, atol) by dtype, as torchlint compares
    with torch.no_grad():
        gm = make_fx(mod, tracing_mode="real")(*args)
        expected = gm(*args)
        actual = compile_fx_inner(gm, list(args))(list(args))  # raises on a compile error
    for index, (want, got) in enumerate(zip(expected, actual)):
        if not (want.is_floating_point() or want.is_complex()):
            if not torch.equal(want, got):
                sys.exit(f"@MARK@ accuracy: output {index} ({want.dtype}) differs from eager")
            continue
        rtol, atol = tolerances.get(str(want.dtype), (1e-4, 1e-5))
        if not torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol, equal_nan=True):
            error = float((got.double() - want.double()).abs().max())
            sys.exit(f"@MARK@ accuracy: output {index} differs from eager: max abs error {error:.3g} "
                     f"({want.dtype}; rtol={rtol:g}, atol={atol:g})")
    print("@MARK@ ok: the compiled graph matches eager (minified for a @KIND@ failure)")
'''


def standalone_main(kind: str, store: str = "repro_inputs") -> str:
    """The ``if __name__ == "__main__"`` block of a script minified for a ``kind`` failure,
    reading its inputs from the folder ``store`` beside it."""
    return (_MAIN.replace("@MARK@", MARK).replace("@TOLERANCES@", _TOLERANCES).replace("@KIND@", kind)
            .replace('"repro_inputs"', repr(store)))


_LAST_EXCEPTION = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception))(?::|$)", re.M)


def compiler_error_line(text: str) -> str | None:
    """The compiler's first ``error:`` line (without the generated file's path)."""
    return compiler_error(text)


def outputs_differ(expected: Any, actual: Any) -> dict[str, Any] | None:
    """torchlint's comparison (compile.check.compare): None when the outputs match."""
    verdict = compare(expected, actual)
    return None if verdict.get("ok") else verdict


def read_outcome(returncode: int, output: str) -> dict[str, Any]:
    """What a run of the script showed: ``{"kind": "accuracy"|"compile"|"ok"|"other", ...}``."""
    for line in output.splitlines():
        if line.startswith(f"{MARK} accuracy:"):
            return {"kind": "accuracy", "detail": line[len(MARK):].strip()}
        if line.startswith(f"{MARK} ok:") and returncode == 0:
            return {"kind": "ok", "detail": line[len(MARK):].strip()}
    error = compiler_error(output)
    if returncode != 0 and error:
        return {"kind": "compile", "error_line": error}
    types = _LAST_EXCEPTION.findall(output)
    return {"kind": "other", "detail": (types[-1] if types else f"exit {returncode}")}
