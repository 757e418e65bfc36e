"""Which rules run: select / extend-select / ignore selectors against the rule registry.

A selector is ``ALL``, a code (``TL301``), a rule name (``load-without-map-location``) or a
code prefix (``TL3``, ``TL``). Exact codes, names and ``ALL`` enable default-off rules too;
a prefix enables only the default-on rules under it, so ``select = ["TL"]`` never turns on a
rule that its author marked as noisy.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable

from torchlint.config import ConfigError

if TYPE_CHECKING:
    from torchlint.rule import Rule

_PREFIX_RE = re.compile(r"^[A-Z]+[0-9]*$")


def match_selector(selector: str, rules: dict[str, type[Rule]], *, where: str) -> tuple[set[str], bool]:
    """(codes matched, whether the match was exact). Case does not matter (`tl301`,
    `Load-Without-Map-Location`, `all`). Unknown selectors are an error naming the closest
    rule."""
    code_like = selector.upper()
    if code_like == "ALL":
        return set(rules), True
    if code_like in rules:
        return {code_like}, True
    by_name = {rule.name.lower(): code for code, rule in rules.items()}
    if selector.lower() in by_name:
        return {by_name[selector.lower()]}, True
    if _PREFIX_RE.match(code_like):
        matched = {code for code in rules if code.startswith(code_like)}
        if matched:
            return matched, False
    raise ConfigError(f"{where}: unknown rule selector {selector!r} ({suggestion(selector, rules)})")


def closest_rule(selector: str, rules: dict[str, type[Rule]]) -> str | None:
    """The code of the rule whose code or name is nearest to `selector` (a typo), if any is
    near enough."""
    import difflib

    best: tuple[float, str] | None = None
    candidates = [(code, code, selector.upper()) for code in rules]
    candidates += [(rule.name, code, selector.lower()) for code, rule in rules.items()]
    for text, code, query in candidates:
        ratio = difflib.SequenceMatcher(None, query, text).ratio()
        if ratio >= 0.6 and (best is None or ratio > best[0]):
            best = (ratio, code)
    return best[1] if best else None


def suggestion(selector: str, rules: dict[str, type[Rule]]) -> str:
    """`did you mean TL301 (load-without-map-location)?`, or where to look."""
    code = closest_rule(selector, rules)
    if code is None:
        return "see `torchlint rules`"
    return f"did you mean {code} ({rules[code].name})?"


def resolve(
    rules: dict[str, type[Rule]],
    select: Iterable[str] | None,
    extend_select: Iterable[str],
    ignore: Iterable[str],
    *,
    where: str,
) -> set[str]:
    def add(selectors: Iterable[str], label: str) -> set[str]:
        chosen: set[str] = set()
        for selector in selectors:
            codes, exact = match_selector(selector, rules, where=f"{where} {label}")
            chosen |= codes if exact else {c for c in codes if rules[c].default_enabled}
        return chosen

    if select is None:
        enabled = {code for code, rule in rules.items() if rule.default_enabled}
    else:
        enabled = add(select, "select")
    enabled |= add(extend_select, "extend-select")
    for selector in ignore:
        codes, _ = match_selector(selector, rules, where=f"{where} ignore")
        enabled -= codes
    return enabled


def codes_for(selectors: Iterable[str], rules: dict[str, type[Rule]], *, where: str) -> set[str]:
    """Every code a list of selectors names, default-off included (for ignores and noqa)."""
    out: set[str] = set()
    for selector in selectors:
        out |= match_selector(selector, rules, where=where)[0]
    return out
