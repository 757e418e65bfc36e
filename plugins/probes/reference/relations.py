"""Relations inferred from a reference run, and a new step checked against them (no torch).

As TrainCheck does, a relation is what held at *every* recorded step of the reference, for
the steps of one optimizer (a GAN's two optimizers each have their own), and only where there
are at least ``MIN_SUPPORT`` such steps. Only facts that do not move with the seed, the data
order or the hardware are related: presence and order of calls, zero/non-zero and
finite/non-finite, changed/unchanged, dtypes, train/eval modes, the sign of the learning
rate. Values themselves (a loss, a norm, a learning rate) never are: a seed or a library
upgrade moves them without anything being wrong. The loss curve is compared for gross
changes only (``loss_trend``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

#: Recorded steps of an optimizer a relation must hold at before it is one: fewer could be
#: a coincidence of the first batches.
MIN_SUPPORT = 3
#: Names listed in a message before "and N more".
SHOWN = 5

CALL_ORDER, PARAMETER_UPDATE, MODULE_MODE, DTYPE, LOSS, ACTIVATION = "TL760", "TL761", "TL762", "TL763", "TL764", "TL767"

HAS_GRAD = {"zero", "nonzero", "nonfinite", "present"}


@dataclass
class Break:
    """A relation of the reference that a step of this run broke (one finding)."""
    code: str
    keys: set  # the relations it covers: each is reported once, at the step it first broke
    site: list | None  # [path, line]
    message: str
    step: int
    data: dict[str, Any] = field(default_factory=dict)


def where(site: Any) -> str:
    if not site or not site[0]:
        return "?"
    return f"{os.path.basename(site[0])}:{site[1]}"


def _listed(names: list[str]) -> str:
    names = sorted(names, key=lambda name: (name.count("."), name))
    shown = ", ".join(f"`{name}`" for name in names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _count(names: list, one: str = "parameter") -> str:
    return f"`{names[0]}`" if len(names) == 1 else f"{len(names)} {one}s"


class Relations:
    def __init__(self, reference: dict[str, Any]) -> None:
        self.optimizer_types: dict[str, str] = reference.get("optimizers") or {}
        self.modules: dict[str, list[str]] = reference.get("modules") or {}
        records = reference["records"]
        self.last_step = max((r["step"] for r in records), default=0)
        self.parameters = {name for r in records for name in r["rows"]}
        self.shapes: dict[str, list[int]] = reference.get("shapes") or {}
        #: Parameters of this run not compared (another shape under the same name).
        self.excluded: set[str] = set()
        by_optimizer: dict[str, list] = {}
        for record in records:
            by_optimizer.setdefault(record["optimizer"], []).append(record)
        self.records = by_optimizer
        self.inferred = {key: self._infer(steps) for key, steps in by_optimizer.items() if len(steps) >= MIN_SUPPORT}

    # -- inference -----------------------------------------------------------------------------
    def _infer(self, records: list[dict]) -> dict[str, Any]:
        # A step's record runs from the previous step() to its own: calls a loop makes after
        # step() (scheduler.step(), a zero_grad() at the end) land in the next record, so the
        # first record lacks them. The calls and their order are related from the second on.
        calls = records[1:] if len(records) > MIN_SUPPORT else records
        groups = min(len(r.get("lr") or ()) for r in records)
        losses = [r["loss"] for r in records if r.get("loss") is not None]
        return {
            "first_step": records[0]["step"] if calls is not records else None,
            **_infer_calls(records, calls),
            "params": _infer_parameters(records),
            "lr": [g for g in range(groups) if all((r["lr"][g] or 0) > 0 for r in records)],
            "forward": self._infer_forward(records),
            "finite_loss": len(losses) >= MIN_SUPPORT and all(isinstance(v, float) for v in losses),
            "steps": len(records),
        }

    def _infer_forward(self, records: list[dict]) -> dict[str, dict[str, Any]]:
        """Per model with a training forward at every step: each module's mode where it never
        changed, the output dtype where it never changed, the modules whose output was finite
        and not all zero at every step."""
        forward: dict[str, dict[str, Any]] = {}
        for label in set.intersection(*(set(r["forward"]) for r in records)):
            entries = [r["forward"][label] for r in records]
            paths = self.modules.get(label) or []
            modes = {}
            for index, path in enumerate(paths):
                seen = {e["modes"][index] if index < len(e["modes"]) else None for e in entries}
                if len(seen) == 1 and None not in seen:
                    modes[path] = seen.pop()
            dtypes = {e.get("dtype") for e in entries}
            healthy = [path for index, path in enumerate(paths)
                       if all(index < len(e.get("outputs") or "") and e["outputs"][index] == "v" for e in entries)]
            forward[label] = {"modes": modes, "dtype": dtypes.pop() if len(dtypes) == 1 else None, "healthy": healthy}
        return forward

    def count(self) -> int:
        """How many relations were inferred (for the report)."""
        total = 0
        for inferred in self.inferred.values():
            total += len(inferred["always"]) + len(inferred["order"]) + len(inferred["lr"]) + bool(inferred["finite_loss"])
            total += sum(len(facts) for facts in inferred["params"].values())
            total += sum(len(f["modes"]) + bool(f["dtype"]) + len(f["healthy"]) for f in inferred["forward"].values())
        return total

    # -- checking ------------------------------------------------------------------------------
    def check(self, record: dict[str, Any], modules: dict[str, list[str]], reported: set) -> list[Break]:
        """The relations this step breaks that were not reported before (``reported``)."""
        if record["step"] > self.last_step:
            return []  # beyond the reference's steps: a schedule's end (lr decayed to 0) is not a relation
        inferred = self.inferred.get(record["optimizer"])
        if inferred is None:
            return []
        found: list[Break] = []
        if record["step"] != inferred["first_step"]:
            found += self._calls(record, inferred, reported)
        found += self._learning_rates(record, inferred, reported)
        found += self._parameters(record, inferred, reported)
        found += self._modes(record, inferred, modules, reported)
        found += self._loss(record, inferred, reported)
        for each in found:
            reported.update(each.keys)
        return found

    def _optimizer(self, index: str) -> str:
        kind = self.optimizer_types.get(index)
        return f"optimizer {index} ({kind})" if kind else f"optimizer {index}"

    def call(self, kind: str) -> str:
        what, _, detail = kind.partition(":")
        if what in ("zero_grad", "step") and detail.isdigit():
            return f"`{what}()` of {self._optimizer(detail)}"
        if what in ("zero_grad", "train", "eval"):
            return f"`{detail}.{what}()`"
        if what == "scheduler":
            return f"the scheduler's `step()` ({detail})"
        if what == "autocast":
            return f"`autocast` ({detail.replace('/', ', ')})"
        return f"`{what}()`"

    def _calls(self, record: dict, inferred: dict, reported: set) -> list[Break]:
        out = []
        opt, step = record["optimizer"], record["step"]
        positions = _first_positions(record["events"])
        sites = {}
        for kind, path, line in record["events"]:
            sites.setdefault(kind, [path, line])
        missing = sorted(kind for kind in inferred["always"] - set(positions) if ("missing", opt, kind) not in reported)
        for kind in missing:
            # autocast with another dtype, another scheduler: the same call, changed
            family = kind.split(":")[0] + ":"
            instead = [other for other in positions if family in ("autocast:", "scheduler:") and other.startswith(family)]
            if instead:
                here = f"here step {step} called {self.call(instead[0])} at {where(sites.get(instead[0]))} instead"
                at = sites.get(instead[0])
            else:
                here = f"here step {step} had none before {self.call('step:' + opt)} at {where(record.get('site'))}"
                at = record.get("site")
            out.append(Break(
                CALL_ORDER, {("missing", opt, kind)}, at,
                f"in the reference, {self.call(kind)} was {'entered' if family == 'autocast:' else 'called'} at every step "
                f"(at {where(inferred['sites'].get(kind))}); {here}",
                step, {"relation": "called every step", "call": kind, "reference": where(inferred["sites"].get(kind)),
                       "here": instead[0] if instead else None},
            ))
        broken = [(a, b) for a, b in sorted(inferred["order"]) if ("order", opt, a, b) not in reported
                  and a in positions and b in positions and positions[a] > positions[b]]
        if broken:
            out.append(self._order(broken, positions, sites, inferred, opt, step))
        return out

    def _order(self, broken: list[tuple[str, str]], positions: dict, sites: dict, inferred: dict, opt: str, step: int) -> Break:
        """One finding for the orderings one step broke: a call that moved breaks its order
        with every call it moved past, and it is named, not each pair."""
        counts: dict[str, int] = {}
        for pair in broken:
            for kind in pair:
                counts[kind] = counts.get(kind, 0) + 1
        # backward() and step() are what a training step is built around: between equals, the
        # other call is the one that moved (zero_grad() after backward(), not the reverse).
        moved = max(counts, key=lambda kind: (counts[kind], kind != "backward" and not kind.startswith("step:"), -positions[kind]))
        ahead = [b for a, b in broken if a == moved]  # it came before these
        behind = [a for a, b in broken if b == moved]  # and after these
        rank = inferred["rank"]

        def order(kinds: list[str]) -> str:
            return ", ".join(self.call(kind) for kind in sorted(kinds, key=lambda kind: rank.get(kind, 0)))

        reference = " and ".join(part for part in (f"before {order(ahead)}" if ahead else "", f"after {order(behind)}" if behind else "") if part)
        if ahead:
            past = max(ahead, key=lambda kind: positions[kind])
            here = f"after {self.call(past)} at {where(sites.get(past))}"
        else:
            past = min(behind, key=lambda kind: positions[kind])
            here = f"before {self.call(past)} at {where(sites.get(past))}"
        others = len([pair for pair in broken if moved not in pair])
        more = f" ({others} more ordering{'s' * (others != 1)} broken)" if others else ""
        return Break(
            CALL_ORDER, {("order", opt, a, b) for a, b in broken}, sites.get(moved),
            f"in the reference, {self.call(moved)} came {reference} at every step; here at step {step} it is at "
            f"{where(sites.get(moved))}, {here}{more}",
            step, {"relation": "order", "call": moved, "before": ahead, "after": behind},
        )

    def _learning_rates(self, record: dict, inferred: dict, reported: set) -> list[Break]:
        out = []
        opt, lrs = record["optimizer"], record.get("lr") or []
        for group in inferred["lr"]:
            key = ("lr", opt, group)
            if key in reported or group >= len(lrs) or lrs[group] is None or lrs[group] > 0:
                continue
            reference = [r["lr"][group] for r in self.records[opt] if r["step"] == record["step"]]
            value = f" ({reference[0]:g} at this step)" if reference else ""
            out.append(Break(
                PARAMETER_UPDATE, {key}, record.get("site"),
                f"in the reference, the learning rate of param group {group} of {self._optimizer(opt)} was above 0 at every "
                f"step{value}; here it is {lrs[group]:g} at step {record['step']}: the step changes none of its parameters",
                record["step"], {"relation": "lr > 0", "group": group, "reference": reference[0] if reference else None,
                                 "here": lrs[group]},
            ))
        return out

    def _parameters(self, record: dict, inferred: dict, reported: set) -> list[Break]:
        opt, step, lrs = record["optimizer"], record["step"], record.get("lr") or []
        groups: dict[str, list[str]] = {}  # what broke -> the parameters it broke for
        values: dict[str, dict[str, Any]] = {}
        for name, facts in inferred["params"].items():
            row = record["rows"].get(name)
            if row is None or name in self.excluded:
                continue
            holder, requires_grad, grad, changed, dtype = row
            broken = None
            if "holder" in facts and holder != facts["holder"]:
                broken = ("holder", facts["holder"], holder)
            elif "requires_grad" in facts and requires_grad != facts["requires_grad"]:
                broken = ("requires_grad", facts["requires_grad"], requires_grad)
            elif facts.get("grad") in ("some", "nonzero") and grad is None:
                broken = ("no-grad", facts["grad"], grad)
            elif facts.get("grad") == "nonzero" and grad == "zero" and not _cancelled(name, record["rows"]) \
                    and not _frozen_group(holder, opt, lrs):
                broken = ("zero-grad", facts["grad"], grad)
            elif facts.get("grad") == "none" and grad is not None:
                broken = ("new-grad", facts["grad"], grad)
            elif facts.get("finite") and grad == "nonfinite":
                broken = ("nonfinite-grad", True, grad)
            elif facts.get("changed") is True and changed is False and not _frozen_group(holder, opt, lrs):
                broken = ("unchanged", True, changed)
            elif facts.get("changed") is False and changed is True:
                broken = ("changed", False, changed)
            if broken is not None and ("param", broken[0], name) not in reported:
                kind = f"{broken[0]}:{broken[1]}->{broken[2]}" if broken[0] in ("holder", "requires_grad") else broken[0]
                groups.setdefault(kind, []).append(name)
                values.setdefault(kind, {"reference": broken[1], "here": broken[2]})
            if "dtype" in facts and dtype != facts["dtype"] and ("param", "dtype", name) not in reported:
                kind = f"dtype:{facts['dtype']}->{dtype}"
                groups.setdefault(kind, []).append(name)
                values.setdefault(kind, {"reference": facts["dtype"], "here": dtype})
        out = []
        for kind, names in sorted(groups.items()):
            what = kind.split(":")[0]
            keys = {("param", what, name) for name in names}
            out.append(Break(DTYPE if what == "dtype" else PARAMETER_UPDATE, keys, record.get("site"),
                             self._parameter_message(kind, names, step), step,
                             {"relation": what, "parameters": sorted(names), **values[kind]}))
        return out

    def _parameter_message(self, kind: str, names: list[str], step: int) -> str:
        subject, listed = _count(names), ("" if len(names) == 1 else f": {_listed(names)}")
        plural = len(names) > 1
        it = "they" if plural else "it"
        what, _, detail = kind.partition(":")
        if what == "holder":
            before, _, after = detail.partition("->")
            them = "them" if plural else "it"
            now = f"no optimizer holds {them}" if after == "None" else f"{self._holder(after)} holds {them}"
            if before == "None":
                return f"in the reference, no optimizer held {subject} at any step; here {now} at step {step}{listed}"
            return f"in the reference, {self._holder(before)} held {subject} at every step; here {now} at step {step}{listed}"
        if what == "requires_grad":
            before, _, after = detail.partition("->")
            return (f"in the reference, {subject} {'had' if plural else 'has'} `requires_grad={before}` at every step; here "
                    f"{it} {'have' if plural else 'has'} `requires_grad={after}` at step {step}{listed}")
        text = {
            "no-grad": ("got a gradient at every step", f"got none at step {step}"),
            "zero-grad": ("got a non-zero gradient at every step", f"got an all-zero one at step {step}"),
            "new-grad": ("never got a gradient (frozen)", f"got one at step {step}"),
            "nonfinite-grad": ("got a finite gradient at every step", f"got NaN or inf at step {step}"),
            "unchanged": ("changed at every step", f"did not change at step {step}"),
            "changed": ("never changed (frozen)", f"changed at step {step}"),
        }
        if what == "dtype":
            before, _, after = detail.partition("->")
            return f"in the reference, {subject} {'were' if plural else 'was'} {before} at every step; here {it} {'are' if plural else 'is'} {after} at step {step}{listed}"
        reference, here = text[what]
        return f"in the reference, {subject} {reference}; here {it} {here}{listed}"

    def _holder(self, holder: str | None) -> str:
        if not holder or holder == "None":
            return "no optimizer"
        index, _, group = holder.partition("/")
        return f"param group {group} of {self._optimizer(index)}"

    def _modes(self, record: dict, inferred: dict, modules: dict[str, list[str]], reported: set) -> list[Break]:
        out = []
        step = record["step"]
        for label, facts in inferred["forward"].items():
            entry = record["forward"].get(label)
            if entry is None:
                continue
            here = dict(zip(modules.get(label) or [], entry["modes"]))
            flipped = [path for path, mode in facts["modes"].items() if path in here and here[path] != mode
                       and ("mode", path) not in reported]
            if flipped:
                flipped.sort(key=lambda path: (path.count("."), path))
                top = flipped[0]
                reference = "train" if facts["modes"][top] == "t" else "eval"
                now = "eval" if reference == "train" else "train"
                switch = entry.get("switch")
                why = f"; the last switch was {self._switch(switch)}" if switch else ""
                inside = [path for path in modules.get(label) or [] if path != label]
                if top == label and set(inside) <= set(flipped):
                    more = f" (and all {len(inside)} of its modules)" if inside else ""
                else:
                    more = "" if len(flipped) == 1 else f" ({len(flipped)} modules: {_listed(flipped)})"
                out.append(Break(
                    MODULE_MODE, {("mode", path) for path in flipped}, entry.get("at"),
                    f"in the reference, `{top}` was in {reference} mode at every training forward (grad enabled); here it is "
                    f"in {now} mode at step {step}{more}{why}",
                    step, {"relation": "mode", "modules": flipped, "reference": reference, "here": now},
                ))
            found = self._outputs(label, facts, entry, here_paths(modules, label), step, reported)
            if found is not None:
                out.append(found)
            dtype = entry.get("dtype")
            if facts["dtype"] and dtype and dtype != facts["dtype"] and ("output-dtype", label) not in reported:
                out.append(Break(
                    DTYPE, {("output-dtype", label)}, entry.get("at"),
                    f"in the reference, the output of `{label}` was {facts['dtype']} at every training forward; here it is "
                    f"{dtype} at step {step}",
                    step, {"relation": "output dtype", "reference": facts["dtype"], "here": dtype},
                ))
        return out

    def _outputs(self, label: str, facts: dict, entry: dict, paths: list[str], step: int, reported: set) -> Break | None:
        """Modules whose output was finite and not all zero at every step of the reference and
        is all zero or not finite here: one finding, named by the first in the model's order
        (where it starts; the modules after it only pass it on)."""
        codes = dict(zip(paths, entry.get("outputs") or ""))
        bad = [path for path in facts.get("healthy", ()) if codes.get(path) in ("z", "n") and ("output", path) not in reported]
        if not bad:
            return None
        first = bad[0]
        what = "all zero" if codes[first] == "z" else "NaN or inf"
        more = f" (and {len(bad) - 1} module{'s' * (len(bad) > 2)} after it)" if len(bad) > 1 else ""
        return Break(
            ACTIVATION, {("output", path) for path in bad}, entry.get("at"),
            f"in the reference, the output of `{first}` was finite and not all zero at every training forward; here it is "
            f"{what} at step {step}{more}",
            step, {"relation": "output finite and non-zero", "modules": bad, "here": what},
        )

    def _switch(self, switch: list) -> str:
        kind, path, line = switch
        return f"{self.call(kind)} at {where([path, line])}"

    def _loss(self, record: dict, inferred: dict, reported: set) -> list[Break]:
        loss = record.get("loss")
        key = ("loss-finite", record["optimizer"])
        if not inferred["finite_loss"] or not isinstance(loss, str) or key in reported:
            return []
        site = next(([path, line] for kind, path, line in record["events"] if kind == "backward"), record.get("site"))
        return [Break(LOSS, {key}, site,
                      f"in the reference, the loss was finite at every step; here it is {loss} at step {record['step']}",
                      record["step"], {"relation": "finite loss", "here": loss})]


def _infer_calls(records: list[dict], calls: list[dict]) -> dict[str, Any]:
    """The calls made at every step (``always``), the pairs of them always in one order, the
    order they came in (``rank``, for messages) and where the reference made each first."""
    kinds = [_first_positions(r["events"]) for r in calls]
    always = set.intersection(*(set(k) for k in kinds))
    order = {(a, b) for a in always for b in always if a != b and all(k[a] < k[b] for k in kinds)}
    sites: dict[str, list] = {}
    for record in records:
        for kind, path, line in record["events"]:
            sites.setdefault(kind, [path, line])
    return {"always": always, "order": order, "rank": kinds[0], "sites": sites}


def _infer_parameters(records: list[dict]) -> dict[str, dict[str, Any]]:
    """Per parameter in every step: what never changed of its holder, requires_grad and dtype;
    its gradient (non-zero at every step, present at every step, never there; finite); whether
    the step changed it at every step, or at none."""
    params: dict[str, dict[str, Any]] = {}
    for name in set.intersection(*(set(r["rows"]) for r in records)):
        rows = [r["rows"][name] for r in records]
        facts: dict[str, Any] = {}
        for column, key in ((0, "holder"), (1, "requires_grad"), (4, "dtype")):
            values = {row[column] for row in rows}
            if len(values) == 1:
                facts[key] = values.pop()
        grads = [row[2] for row in rows]
        if all(g == "nonzero" for g in grads):
            facts["grad"] = "nonzero"
        elif all(g in HAS_GRAD for g in grads):
            facts["grad"] = "some"
        elif all(g is None for g in grads):
            facts["grad"] = "none"
        if all(g in ("zero", "nonzero") for g in grads):
            facts["finite"] = True
        changes = [row[3] for row in rows]
        if all(c is True for c in changes):
            facts["changed"] = True
        elif all(c is False for c in changes):
            facts["changed"] = False
        params[name] = facts
    return params


def here_paths(modules: dict[str, list[str]], label: str) -> list[str]:
    return modules.get(label) or []


def _cancelled(name: str, rows: dict[str, list]) -> bool:
    """A bias whose gradient is exactly zero while its layer's weight has a non-zero one: the
    gradient reaches the layer, and the bias's (a sum over the batch) cancelled. That happens
    by chance in low precision (bfloat16 sums of balanced +-p), so it breaks no relation."""
    layer, _, leaf = name.rpartition(".")
    if "bias" not in leaf:
        return False
    weight = rows.get(f"{layer}.weight")
    return weight is not None and weight[2] == "nonzero"


def _frozen_group(holder: str | None, opt: str, lrs: list) -> bool:
    """The parameter's param group has a learning rate of 0 now: that break explains it."""
    if not holder or holder.split("/")[0] != opt:
        return False
    group = int(holder.split("/")[1])
    return group < len(lrs) and lrs[group] is not None and lrs[group] <= 0


def _first_positions(events: list) -> dict[str, int]:
    positions: dict[str, int] = {}
    for index, (kind, _path, _line) in enumerate(events):
        positions.setdefault(kind, index)
    return positions


#: The loss curve: the reference must have fallen by at least this share from its first
#: recorded steps to its last before "not falling at all" is worth a finding.
REFERENCE_DROP = 0.2
#: Recorded steps averaged (median) at each end of the curve: one noisy batch moves neither.
ENDS = 3


def loss_trend(relations: Relations, records: list[dict]) -> Break | None:
    """A gross change of the loss curve over the steps both runs recorded: the reference fell
    by REFERENCE_DROP or more (median of its first ENDS recorded losses against its last
    ENDS), and this run's did not fall at all. A seed, a new torch or a refactor moves the
    curve but not from learning to not learning."""
    for opt, ours in _by_optimizer(records).items():
        theirs = {r["step"]: r.get("loss") for r in relations.records.get(opt, ())}
        pairs = [(theirs[r["step"]], r.get("loss")) for r in ours if r["step"] in theirs]
        pairs = [(a, b) for a, b in pairs if isinstance(a, float) and isinstance(b, float)]
        if len(pairs) < 2 * ENDS:
            continue
        ref_start, ref_end = _median([a for a, _ in pairs[:ENDS]]), _median([a for a, _ in pairs[-ENDS:]])
        new_start, new_end = _median([b for _, b in pairs[:ENDS]]), _median([b for _, b in pairs[-ENDS:]])
        if ref_start <= 0 or (ref_start - ref_end) / abs(ref_start) < REFERENCE_DROP or new_end < new_start:
            continue
        last = [r for r in ours if r["step"] in theirs][-1]
        site = next(([path, line] for kind, path, line in last["events"] if kind == "backward"), last.get("site"))
        drop = (ref_start - ref_end) / abs(ref_start)
        return Break(
            LOSS, {("loss-trend", opt)}, site,
            f"in the reference, the loss fell by {drop:.0%} over the {len(pairs)} steps compared ({ref_start:.4g} to "
            f"{ref_end:.4g}); here it did not fall at all ({new_start:.4g} to {new_end:.4g}, up to step {last['step']})",
            last["step"], {"relation": "loss falls", "reference": [ref_start, ref_end], "here": [new_start, new_end]},
        )
    return None


def _by_optimizer(records: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for record in records:
        out.setdefault(record["optimizer"], []).append(record)
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
