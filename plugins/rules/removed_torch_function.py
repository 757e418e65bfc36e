from __future__ import annotations

from torchlint.findings import Severity
from torchlint.rule import Bad, Good

from ._deprecations import removed
from ._torchfix_helpers import QualifiedApiRule


class RemovedTorchFunction(QualifiedApiRule):
    """
    ## What it does
    Flags calls to, and imports of, torch functions that were deprecated and then removed:
    `torch.solve`, `torch.symeig`, `torch.matrix_rank`, `torch.lstsq`, `torch.eig`. The
    message names the `torch.linalg` replacement and how its arguments differ.

    The table is shared with TL502 (`plugins/rules/_deprecations.py`).

    ## Why is this bad?
    These names still exist as stubs, so the code imports fine, but every call raises
    `RuntimeError: This function was deprecated since version 1.9 and is now removed`.

    An import (`from torch import symeig as eig`) is reported, and so is each call of the
    name it binds: that call is the line that raises. Not flagged: an import or call inside
    `except ImportError:` or a branch of a version check (a fallback for old torch).

    ## Example
    ```python
    x, _ = torch.solve(b, A)
    ```

    ## Use instead
    ```python
    x = torch.linalg.solve(A, b)   # arguments reversed, returns only the solution
    ```
    """

    code = "TL501"
    name = "removed-torch-function"
    summary = "Call or import of a torch function that was removed (it raises at run time)"
    severity = Severity.ERROR
    triggers = ("solve", "symeig", "matrix_rank", "lstsq", "eig")
    cases = [
        Bad(
            """
            import torch
            x, lu = torch.solve(b, A)  # error
            r = torch.matrix_rank(A, symmetric=True)  # error
            """
        ),
        Bad(
            """
            import torch as T
            from torch import lstsq, symeig as eigs  # error
            e = T.eig(A)  # error
            sol = lstsq(B, A)  # error
            ok = symeig(A)
            """,
            note="the import once per statement line, and each call of a name it bound (it raises); "
            "`symeig` was imported under another name, so the bare `symeig` is something else",
        ),
        Good(
            """
            import torch
            x = torch.linalg.solve(A, b)
            e = torch.linalg.eigh(A)
            r = torch.linalg.matrix_rank(A)
            solve = lambda a, b: a / b
            y = solve(1, 2)
            """,
            note="the replacements, and a local function named solve",
        ),
        Good(
            """
            import numpy as np
            import scipy.linalg
            x = np.linalg.solve(A, b)
            y = scipy.linalg.lstsq(A, b)
            """,
            note="other libraries' functions of the same name",
        ),
        Good(
            """
            try:
                from torch.linalg import solve
            except ImportError:
                from torch import solve
            """,
            note="a compatibility fallback for old torch",
        ),
        Good(
            """
            import torch

            def f(torch, A, b):
                return torch.solve(b, A)
            """,
            note="a parameter named torch",
        ),
    ]

    def entry(self, qualified):
        return removed(qualified)

    def call_message(self, qualified, entry):
        return f"`{qualified}` was removed in torch {entry.removed} and raises; use `{entry.replacement}` ({entry.note})"

    def import_message(self, qualified, entry):
        return f"import of `{qualified}`, removed in torch {entry.removed}; use `{entry.replacement}` ({entry.note})"
