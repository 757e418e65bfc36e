"""The engine's own codes (TL0xx). They are not plugins: they describe the engine failing to
look at a file, so they exist whatever plugins are installed."""

from __future__ import annotations

from torchlint.findings import Finding, Location, Severity
from torchlint.rule import Rule


class FileNotChecked(Rule):
    """
    ## What it does
    Reports a file that torchlint could not read or parse: a syntax error, bytes that are not
    valid text in the file's encoding, a NUL byte, a broken symbolic link, a path that does
    not exist, or a permission error.

    ## Why is this bad?
    Every other rule is blind to a file that cannot be parsed, so a clean report would be a
    lie. The run goes on with the other files.

    ## Example
    ```python
    def forward(self, x)
        return x
    ```

    ## Use instead
    Fix the file, or exclude it (`extend-exclude` in `[tool.torchlint]`).
    """

    code = "TL000"
    name = "file-not-checked"
    summary = "The file could not be read or parsed"
    severity = Severity.ERROR


class RuleCrashed(Rule):
    """
    ## What it does
    Reports that a rule raised an exception on this file. The other rules' findings for the
    file are kept and the run goes on.

    ## Why is this bad?
    It is a bug in torchlint or in a plugin: please report it with the file that triggers it.
    """

    code = "TL001"
    name = "rule-crashed"
    summary = "A rule raised an exception while checking this file"
    severity = Severity.ERROR


class FixNotApplied(Rule):
    """
    ## What it does
    Reports fixes that `--fix` (or `--diff`) did not apply: the fixed file could not be
    written (a read-only folder, a full disk), the file changed on disk after torchlint read
    it (an editor's save during the run), the file is read-only (`--fix-read-only` writes it)
    or a symbolic link out of the project, a fix would have produced code that does not
    parse, or a fix no longer lands on the text it was made for.

    ## Why is this bad?
    The findings those fixes were for are still in the file. Saying nothing would let a run
    look fixed when it is not; the file itself is left exactly as it was.
    """

    code = "TL002"
    name = "fix-not-applied"
    summary = "A fix could not be applied or written; the file is unchanged"
    severity = Severity.ERROR


class UnusedSuppression(Rule):
    """
    ## What it does
    Reports a suppression comment that names a torchlint code or rule and silences nothing:
    `# noqa: TL301` on a line with no TL301 finding, `# torchlint: disable=TL2` whose rules
    found nothing there, a `disable-file` code that never fired in the file, and codes that
    name no torchlint rule at all (`# noqa: TL999`). Like ruff's RUF100.

    Only torchlint's own selectors are judged: a bare `# noqa` and other linters' codes
    (`# noqa: E501`) may be for another tool. A code whose rule is not enabled in this run
    is not judged either (the rule did not run).

    ## Why is this bad?
    A stale suppression hides the next real finding on its line, and an unknown code
    (a typo such as `TL31`) silences nothing while looking as if it did.

    ## Example
    ```python
    state = torch.load(path, map_location="cpu", weights_only=True)  # noqa: TL301
    ```

    ## Use instead
    ```python
    state = torch.load(path, map_location="cpu", weights_only=True)
    ```
    """

    code = "TL003"
    name = "unused-suppression"
    summary = "A suppression comment names a torchlint code that silences nothing, or no rule at all"
    severity = Severity.WARNING


ENGINE_RULES = {rule.code: rule for rule in (FileNotChecked, RuleCrashed, FixNotApplied, UnusedSuppression)}
#: Reported whatever the selection: the engine could not check, a rule crashed, a fix failed.
ALWAYS_REPORTED = frozenset({FileNotChecked.code, RuleCrashed.code, FixNotApplied.code})


def _location(line: int = 1, column: int = 1) -> Location:
    return Location(line, column, line, column)


def engine_finding(rule: type[Rule], path: str, message: str, line: int = 1, column: int = 1) -> Finding:
    return Finding(rule.code, rule.name, message, path, _location(line, column), rule.severity)
