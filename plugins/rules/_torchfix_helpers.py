"""Helpers shared by the TorchFix-parity rules (TL104, TL105, TL302, TL403, TL501-TL509).

Kept apart from `_calls.py` (shared by every rule) so these rules can evolve on their own.
libcst is imported at module level: rule modules are only imported once a file needs parsing.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from torchlint.static.names import dotted_name

from ._calls import has_star_args, keyword, positional, with_keyword  # noqa: F401  (with_keyword re-exported)

if TYPE_CHECKING:
    from torchlint.static.context import FileContext

_VERSION_RE = re.compile(r"^\s*(\d+)(?:\.(\d+))?")


def parse_version(text: str | None) -> tuple[int, int] | None:
    """"2.4" -> (2, 4); "2.6.0+cu124" -> (2, 6); None or junk -> None."""
    if not text:
        return None
    match = _VERSION_RE.match(str(text))
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def target_torch(ctx: FileContext) -> tuple[int, int] | None:
    """The configured `target-torch` as (major, minor), or None when not configured."""
    config = getattr(ctx, "config", None)
    return parse_version(getattr(config, "target_torch", None)) if config is not None else None


def targets_before(ctx: FileContext, version: str | None) -> bool:
    """True only when a target torch is configured and it is older than `version`."""
    target, wanted = target_torch(ctx), parse_version(version)
    return target is not None and wanted is not None and target < wanted


# -- compatibility fallbacks ---------------------------------------------------------------------

_FALLBACK_EXCEPTIONS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "TypeError"})
_GUARD_WORDS = re.compile(r"version|hasattr|TORCH_\w+|_TORCH\w*|is_torch\w*|torch_\w*at_least", re.IGNORECASE)


def in_compat_fallback(ctx: FileContext) -> bool:
    """True when the node being visited is a deliberate compatibility path: inside an
    `except ImportError/ModuleNotFoundError/AttributeError/TypeError:` handler (TypeError:
    "unexpected keyword argument" from an older signature), or inside any branch of
    an `if` whose test looks like a version or feature check (`torch.__version__`,
    `hasattr(torch, ...)`, `TORCH_VERSION >= ...`, `is_torch_greater_or_equal(...)`).
    Old APIs there are there on purpose, for old torch versions. So is code after such a
    check that leaves on newer versions (`if torch.__version__ > "1.14": pytest.skip(...)`,
    `return`, `raise`), and the body of a test skipped by one (`@pytest.mark.skipif(...)`)."""
    ancestors = ctx.ancestors
    for index, ancestor in enumerate(ancestors):
        kind = type(ancestor)
        if kind is cst.ExceptHandler and _catches_import_error(ancestor):
            return True
        if kind in (cst.If, cst.IfExp) and _GUARD_WORDS.search(_code(ctx, ancestor.test)):
            return True
        if kind is cst.FunctionDef and any(_skipped_by_version(ctx, d.decorator) for d in ancestor.decorators):
            return True
        if kind in (cst.IndentedBlock, cst.Module) and index + 1 < len(ancestors):
            if _after_version_exit(ctx, ancestor.body, ancestors[index + 1]):
                return True
    return False


def _after_version_exit(ctx: FileContext, body, statement: cst.CSTNode) -> bool:
    """A statement of `body` before `statement` is `if <version check>:` whose body leaves."""
    for earlier in body:
        if earlier is statement:
            return False
        if type(earlier) is cst.If and _GUARD_WORDS.search(_code(ctx, earlier.test)) and _leaves(earlier.body):
            return True
    return False


def _skipped_by_version(ctx: FileContext, decorator: cst.BaseExpression) -> bool:
    """`@pytest.mark.skipif(<version check>, ...)`."""
    if type(decorator) is not cst.Call or not (dotted_name(decorator.func) or "").endswith("skipif"):
        return False
    return bool(decorator.args) and bool(_GUARD_WORDS.search(_code(ctx, decorator.args[0].value)))


def _leaves(block: cst.BaseSuite) -> bool:
    """The block ends by leaving: `return`, `raise`, `continue`, `break` or `pytest.skip(...)`."""
    statements = block.body if type(block) is cst.IndentedBlock else [block]
    last = statements[-1] if statements else None
    small = last.body[-1] if type(last) in (cst.SimpleStatementLine, cst.SimpleStatementSuite) and last.body else None
    if type(small) in (cst.Return, cst.Raise, cst.Continue, cst.Break):
        return True
    return type(small) is cst.Expr and type(small.value) is cst.Call and (dotted_name(small.value.func) or "").endswith("skip")


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    kind = handler.type
    if kind is None:
        return False
    names = kind.elements if type(kind) is cst.Tuple else [cst.Element(kind)]
    for element in names:
        dotted = dotted_name(element.value) or ""
        if dotted.rpartition(".")[2] in _FALLBACK_EXCEPTIONS:
            return True
    return False


def _code(ctx: FileContext, node: cst.CSTNode) -> str:
    return ctx.module.code_for_node(node)


# -- imports ----------------------------------------------------------------------------------------


def imported_names(node: cst.ImportFrom) -> Iterator[tuple[cst.ImportAlias, str]]:
    """(alias node, "module.name") for each name an absolute `from module import ...` binds.
    Relative and star imports yield nothing; odd aliases (`import range as r`) are fine."""
    if node.relative or node.module is None or type(node.names) is cst.ImportStar:
        return
    module = dotted_name(node.module)
    if module is None:
        return
    for alias in node.names:
        name = dotted_name(alias.name)
        if name is not None:
            yield alias, f"{module}.{name}"


def replace_import_module(node: cst.ImportFrom, new_module: str) -> cst.ImportFrom:
    """`from old import a, b as c` -> `from new import a, b as c`."""
    return node.with_changes(module=cst.parse_expression(new_module))


# -- expressions ------------------------------------------------------------------------------------


def is_name(node: cst.BaseExpression, value: str) -> bool:
    return type(node) is cst.Name and node.value == value


# The parity rules' names for the shared argument helpers in _calls.
keyword_arg = keyword
positional_args = positional
has_star = has_star_args


def has_double_star(call: cst.Call) -> bool:
    return any(arg.star == "**" for arg in call.args)


def spelled_in_scope(ctx: FileContext, qualified: str) -> str | None:
    """How `qualified` (e.g. "torch.linalg.norm") can be spelled here through an existing
    import: via an alias whose target is a prefix of it (`T.linalg.norm` after `import torch
    as T`, `nn.Upsample` for "torch.nn.Upsample"). The longest such alias wins; None if no
    import reaches it (fixes then are not offered: they would need a new import)."""
    best: tuple[int, str] | None = None
    for local, target in ctx.aliases.aliases.items():
        if qualified == target or qualified.startswith(target + "."):
            if ctx.qualname(cst.Name(local)) != target:
                continue  # shadowed in this function
            candidate = local + qualified[len(target):]
            if best is None or len(target) > best[0]:
                best = (len(target), candidate)
    return best[1] if best else None




# -- a base for "this qualified API is deprecated" rules -------------------------------------------

from torchlint.fix import NodeFix  # noqa: E402  (kept next to its only user)
from torchlint.rule import Rule  # noqa: E402


class QualifiedApiRule(Rule):
    """Flags uses of qualified names a subclass knows about (`entry`), once per place:

    - `from mod import name` of such a name is reported at the imported name. Calls of that
      local name are reported too when the import's fix would not migrate them (`from torch
      import svd`: every `svd(...)` needs its own change, since `linalg.svd` returns Vh), and
      not when it would (`from torch import ger` becomes `from torch import outer as ger`:
      one finding, one fix point);
    - calls through a module attribute (`torch.norm(x)`, `T.cuda.amp.autocast()`) are reported
      at the call;
    - with `report_references`, any reference through a module attribute (`v2.ToTensor`
      passed uncalled) is reported, called or not.

    Nothing is reported inside a compatibility fallback (`except ImportError:` or a version
    check), nor when the configured target torch predates the deprecation (`since`).
    """

    # Every API the subclasses know lives under torch, functorch or torchvision: all spelled
    # with "torch", so a file that never says "torch" cannot use one.
    imports = ("torch",)
    #: Report uncalled references (`transforms=[v2.ToTensor]`) as well as calls.
    report_references = False

    def entry(self, qualified: str):  # -> object with .replacement and .since, or None
        raise NotImplementedError

    def call_message(self, qualified: str, entry) -> str:
        raise NotImplementedError

    def import_message(self, qualified: str, entry) -> str:
        return self.call_message(qualified, entry)

    def call_fix(self, node: cst.Call, qualified: str, entry) -> NodeFix | None:
        return None

    def import_target(self, qualified: str, entry) -> str | None:
        """Where a `from` import of `qualified` may be pointed instead, if that is exactly
        equivalent for every use of the imported name; None for no import fix."""
        return None

    def import_fix_safety(self) -> str:
        from torchlint.fix import SAFE

        return SAFE

    # -- traversal -----------------------------------------------------------------------------
    def _active(self, qualified: str | None):
        if qualified is None:
            return None
        found = self.entry(qualified)
        if found is None or targets_before(self.ctx, getattr(found, "since", None)):
            return None
        return found

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) is cst.Name:
            self._imported_name_call(node)
            return
        if type(node.func) is not cst.Attribute or self.report_references:
            return  # with report_references, visit_Attribute reports the callee
        qualified = self.ctx.qualname(node.func)
        found = self._active(qualified)
        if found is None or in_compat_fallback(self.ctx):
            return
        self.report(node, self.call_message(qualified, found), fix=self.call_fix(node, qualified, found))

    def _imported_name_call(self, node: cst.Call) -> None:
        """`qr(A)` after `from torch import qr`: reported when fixing the import alone would
        leave this call wrong. No fix here: the call's replacement is a decision per call."""
        qualified = self.ctx.qualname(node.func)
        found = self._active(qualified)
        if found is None or self.import_target(qualified, found) is not None or in_compat_fallback(self.ctx):
            return
        self.report(node, self.call_message(qualified, found))

    def report_reference(self, node: cst.Attribute) -> None:
        """For a subclass's `visit_Attribute` (kept out of this base so that the other rules
        do not subscribe to every attribute of every file)."""
        qualified = self.ctx.qualname(node)
        found = self._active(qualified)
        if found is None or in_compat_fallback(self.ctx):
            return
        self.report(node, self.call_message(qualified, found))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        hits = [(alias, q, self._active(q)) for alias, q in imported_names(node)]
        hits = [(alias, q, found) for alias, q, found in hits if found is not None]
        if not hits or in_compat_fallback(self.ctx):
            return
        fix = self._import_fix(node)
        for index, (alias, qualified, found) in enumerate(hits):
            self.report(alias, self.import_message(qualified, found), fix=fix if index == 0 else None)

    def _import_fix(self, node: cst.ImportFrom) -> NodeFix | None:
        """Rewrite the whole statement when every name in it has an equivalent in one module:
        `from functorch import vmap` -> `from torch.func import vmap`; renamed names keep their
        local name (`from torch import ger` -> `from torch import outer as ger`)."""
        # Edits touch only the module and the renamed names, never the whole statement, so
        # parentheses, comments and trailing commas of the import stay as they were.
        new_module = None
        edits: list[tuple[cst.CSTNode, str]] = []
        count = 0
        for alias, qualified in imported_names(node):
            count += 1
            found = self._active(qualified)
            target = self.import_target(qualified, found) if found is not None else None
            if target is None:
                return None
            module, _, name = target.rpartition(".")
            if new_module not in (None, module):
                return None
            new_module = module
            if alias.evaluated_name != name:
                local = alias.evaluated_alias or alias.evaluated_name
                edits.append((alias.name, name if alias.asname is not None else f"{name} as {local}"))
        if new_module is None or count != len(node.names):
            return None
        if new_module != dotted_name(node.module):
            edits.insert(0, (node.module, new_module))
        if not edits:
            return None
        return NodeFix(f"Import from `{new_module}`", self.import_fix_safety(), tuple(edits))
