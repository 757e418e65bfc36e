"""The Rule base class: metadata, examples that double as tests, and the reporting API.

A rule is instantiated once per file it runs on. The engine calls ``visit_<NodeType>`` and
``leave_<NodeType>`` methods (libcst node class names) in source order during its single
traversal, and ``finish()`` once the file has been walked. Rules report through
``self.report(node, message)``; positions are computed only for reported nodes.

Rules never import torch: they reason about source text.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from torchlint.findings import Severity
from torchlint.static.lines import python_lines

if TYPE_CHECKING:
    import libcst as cst

    from torchlint.analysis import Analysis
    from torchlint.findings import Finding
    from torchlint.fix import NodeFix
    from torchlint.static.context import FileContext, ProjectContext

#: A line in an example that ends with this comment must be reported; no other line may be.
EXPECT_MARK = "# error"


@dataclass(frozen=True)
class Case:
    """An example of code for a rule. Single-file cases use ``code``; cross-file ones ``files``."""

    code: str = ""
    files: dict[str, str] = field(default_factory=dict)
    note: str = ""
    #: For a Bad case of a fixable rule: the code after every fix (unsafe ones included),
    #: with the `# error` markers left as they were.
    fixed: str = ""

    def sources(self) -> dict[str, str]:
        if self.files:
            return {name: textwrap.dedent(text).lstrip("\n") for name, text in self.files.items()}
        return {"example.py": textwrap.dedent(self.code).lstrip("\n")}

    def expected_lines(self) -> set[tuple[str, int]]:
        expected = set()
        for name, text in self.sources().items():
            for number, line in enumerate(python_lines(text), start=1):
                if line.rstrip().endswith(EXPECT_MARK):
                    expected.add((name, number))
        return expected


class Bad(Case):
    """Code the rule must flag, exactly on the lines marked ``# error``."""


class Good(Case):
    """Code the rule must leave alone: a safe look-alike (a hard negative)."""


_CODE_RE = re.compile(r"^[A-Z]{1,4}[0-9]{3,4}$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class Rule:
    #: Stable code such as ``TL301``; never reused once released.
    code: ClassVar[str] = ""
    #: kebab-case name of the pattern (not of the fix).
    name: ClassVar[str] = ""
    #: One-line summary shown in `torchlint rules`.
    summary: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.WARNING
    default_enabled: ClassVar[bool] = True
    #: A file is only walked for this rule when its text contains one of these substrings.
    #: An empty tuple means "always run".
    triggers: ClassVar[tuple[str, ...]] = ()
    #: Top-level packages the rule's findings need imported (e.g. ``("torch",)`` when every
    #: finding is about a call that resolves to ``torch.*``). A file whose text names none of
    #: them is skipped whatever its trigger tokens: short triggers like "load" or "norm"
    #: occur in most Python files, and a file that never imports torch cannot call it.
    imports: ClassVar[tuple[str, ...]] = ()
    #: True for codes only `torchlint run` reports (probes, crashes): never run statically.
    runtime_only: ClassVar[bool] = False
    #: "safe", "unsafe", or None when the rule offers no fix.
    fix_safety: ClassVar[str | None] = None
    #: Per-file analyses this rule reads with ``self.ctx.analysis(cls)`` (see torchlint.analysis):
    #: built once per file for every rule that names them.
    analyses: ClassVar[tuple[type[Analysis], ...]] = ()
    cases: ClassVar[list[Case]] = []

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    # -- reporting --------------------------------------------------------------------------
    def report(
        self, node: cst.CSTNode, message: str, *, end_node: cst.CSTNode | None = None, fix: NodeFix | None = None
    ) -> None:
        """Report `node` (through `end_node`, if given). A `fix` replaces nodes with new ones;
        it is offered only if its applicability is not riskier than the rule's `fix_safety`.
        Returns a handle for `withdraw`."""
        return self.ctx.report(self, node, message, end_node=end_node, fix=fix)

    def withdraw(self, handle: object) -> None:
        """Take back a report once later code shows it was wrong (e.g. in `finish()`).
        Report while visiting, not in `finish()`: positions and fix layout come from the
        traversal context."""
        self.ctx.withdraw(handle)

    def add_fact(self, key: str, value: Any) -> None:
        """Record a JSON-able fact about this file for ``project_check`` (cached with the file)."""
        self.ctx.facts.setdefault(self.code, {}).setdefault(key, []).append(value)

    def finish(self) -> None:
        """Called once after the traversal; rules that defer decisions report here."""

    # -- cross-file checks ------------------------------------------------------------------
    @classmethod
    def project_check(cls, project: ProjectContext) -> list[Finding]:
        """Findings that need facts from several files (see ``FileContext.add_fact``)."""
        return []

    #: Words whose presence in any checked file the project phase should know, whether or
    #: not this rule ran on that file (`ProjectContext.files_mentioning`): "does the project
    #: ever mention cuda?" costs one byte search per file. A word counts where no letter
    #: touches it ("cuda" in `use_cuda` and `x.cuda()`, "xla" not in `xlabel`).
    project_tokens: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def keep_in_project(cls, project: ProjectContext, finding: Finding) -> bool:
        """Whether a finding this rule made while checking one file stands, given what the
        whole project shows (e.g. a checkpoint load in a project that never uses CUDA). The
        finding keeps its fix; `--fix` applies the same judgement."""
        return True

    @classmethod
    def belongs_in_project(cls, project: ProjectContext, finding: Finding) -> bool:
        """Whether a finding is this rule's at all, given what the whole project shows: a check
        split into a default part and an opt-in part (TL301 and TL303) gives each call to one of
        them. Unlike a finding `keep_in_project` drops, one that does not belong is not brought
        back by `torchlint run` when the run proves it: the other part reports it."""
        return True

    # -- metadata ---------------------------------------------------------------------------
    @classmethod
    def docs(cls) -> str:
        return textwrap.dedent(cls.__doc__ or "").strip()

    @classmethod
    def validate(cls) -> list[str]:
        """Problems with the rule's metadata; a plugin's rule with problems is refused."""
        problems = []
        if not _CODE_RE.match(cls.code or ""):
            problems.append(f"code {cls.code!r} is not like 'TL123'")
        if not _NAME_RE.match(cls.name or ""):
            problems.append(f"name {cls.name!r} is not kebab-case")
        if not cls.summary:
            problems.append("summary is empty")
        for attribute in ("triggers", "imports"):
            value = getattr(cls, attribute)
            if not isinstance(value, tuple) or not all(isinstance(token, str) and token for token in value):
                problems.append(f"{attribute} must be a tuple of non-empty strings")
        if cls.fix_safety not in (None, "safe", "unsafe"):
            problems.append(f"fix_safety {cls.fix_safety!r} is not 'safe', 'unsafe' or None")
        from torchlint.analysis import Analysis

        if not isinstance(cls.analyses, tuple) or not all(isinstance(a, type) and issubclass(a, Analysis) for a in cls.analyses):
            problems.append("analyses must be a tuple of torchlint.analysis.Analysis subclasses")
        if cls.runtime_only and cls.cases:
            problems.append("a runtime-only rule has no static cases")
        for case in cls.cases:
            if isinstance(case, Bad) and not case.expected_lines():
                problems.append(f"a Bad case has no line marked {EXPECT_MARK!r}")
        return problems

    @classmethod
    def metadata(cls) -> dict[str, Any]:
        return {
            "code": cls.code,
            "name": cls.name,
            "summary": cls.summary,
            "severity": cls.severity.value,
            "default_enabled": cls.default_enabled,
            "fix_safety": cls.fix_safety,
            "runtime_only": cls.runtime_only,
        }
