from __future__ import annotations

import libcst as cst

from torchlint.rule import Bad, Good, Rule
from torchlint.static.names import dotted_name

#: Calls that seed one library's global generator.
_SEEDS = {
    "torch.manual_seed": "torch", "torch.cuda.manual_seed": "torch", "torch.cuda.manual_seed_all": "torch",
    "torch.random.manual_seed": "torch", "numpy.random.seed": "numpy", "random.seed": "random",
}
#: Draws from each library's global generator.
_TORCH_DRAWS = frozenset(
    f"torch.{name}" for name in (
        "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
        "bernoulli", "multinomial", "poisson",
    )
)
_RANDOM_DRAWS = frozenset(
    f"random.{name}" for name in (
        "random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform", "gauss",
        "normalvariate", "betavariate", "expovariate",
    )
)
_NUMPY_NOT_DRAWS = frozenset({"seed", "get_state", "set_state", "RandomState", "default_rng", "Generator", "SeedSequence"})


class PartiallySeededRandomness(Rule):
    """
    ## What it does
    Flags, in a file that seeds some of the global random generators (`torch.manual_seed`,
    `np.random.seed`, `random.seed`), the first draw from a generator it does not seed:
    `np.random.rand(...)` after only `torch.manual_seed(0)`, `random.shuffle(...)` after only
    `np.random.seed(0)`, `torch.randn(...)` (without `generator=`) after only `random.seed(0)`.
    One finding per unseeded library.

    Left alone: draws inside a Dataset or transform class (`__getitem__`, `__iter__`,
    `__call__`: DataLoader workers seed `random` and numpy from torch's seed); files that seed nothing (reproducibility is a choice, and the launcher often
    seeds), files that call a seed-everything helper (`set_seed`, `seed_everything`, any
    call of a project function named `*seed*`), draws with an explicit `generator=`, and
    numpy `Generator` objects (`np.random.default_rng(seed)`).

    Off by default: the missing seed may be set in another module the script imports, and
    not every draw needs to be reproducible.

    ## Why is this bad?
    Seeding one generator says the run is meant to be reproducible, and the other generator
    breaks it silently: two runs of the same command draw different augmentations, splits
    or noise, so a change in results cannot be told from a change in the draws.

    ## Example
    ```python
    torch.manual_seed(0)
    for x, y in loader:
        x = x + torch.from_numpy(np.random.rand(*x.shape)).float()
    ```

    ## Use instead
    ```python
    torch.manual_seed(0)
    np.random.seed(0)
    for x, y in loader:
        x = x + torch.from_numpy(np.random.rand(*x.shape)).float()
    ```
    """

    code = "TL612"
    name = "partially-seeded-randomness"
    summary = "some random generators are seeded and another is drawn from unseeded: the run is not reproducible"
    triggers = ("seed",)
    default_enabled = False
    cases = [
        Bad(
            """
            import random
            import numpy as np
            import torch

            def train(model, loader, optimizer, criterion):
                torch.manual_seed(42)
                for x, y in loader:
                    jitter = np.random.rand(4)  # error
                    more = np.random.normal(size=4)
                    order = random.sample(range(4), 4)  # error
                    loss = criterion(model(x + torch.randn(4)), y)
                    loss.backward()
            """,
            note="one finding per unseeded library; torch draws are seeded",
        ),
        Good(
            """
            import random
            import numpy as np
            import torch

            torch.manual_seed(42)
            np.random.seed(42)
            random.seed(42)
            rng = np.random.default_rng(7)
            jitter = np.random.rand(4) + rng.random(4)
            pick = random.choice([0, 1])
            """,
            note="every generator seeded; a seeded numpy Generator",
        ),
        Good(
            """
            import random
            import torch

            class RandomFlip:
                def __call__(self, img):
                    return img.flip(-1) if random.random() < 0.5 else img

            torch.manual_seed(0)
            """,
            note="a transform's draw: DataLoader workers seed `random` from torch's seed",
        ),
        Good(
            """
            import numpy as np
            import torch
            from transformers import set_seed

            set_seed(42)
            noise = torch.randn(4) + torch.from_numpy(np.random.rand(4))
            """,
            note="a seed-everything helper",
        ),
        Good(
            """
            import numpy as np
            import torch

            noise = torch.randn(4) + torch.from_numpy(np.random.rand(4))
            g = torch.Generator()
            g.manual_seed(0)
            w = torch.rand(3, generator=g)
            """,
            note="nothing seeded globally: a choice this rule leaves alone",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.seeded: set[str] = set()
        self.helper_seeds = False
        self.draws: dict[str, cst.Call] = {}

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualname(node.func)
        if qualified in _SEEDS:
            self.seeded.add(_SEEDS[qualified])
            return
        name = (qualified or dotted_name(node.func) or "").rpartition(".")[2]
        if qualified is None and "seed" in name.lower():
            self.helper_seeds = True  # `set_seed(0)`, `utils.seed_everything(0)`
            return
        if qualified is not None and "seed" in name.lower() and qualified not in _SEEDS:
            if not qualified.startswith(("torch.", "numpy.", "random.")):
                self.helper_seeds = True  # `transformers.set_seed`, `lightning.seed_everything`
            return
        library = _draw_library(qualified, node)
        if library is not None and not self._in_data_pipeline():
            self.draws.setdefault(library, node)

    def _in_data_pipeline(self) -> bool:
        """Inside a class with `__getitem__`/`__iter__`/`__call__` (a Dataset or a transform):
        DataLoader workers seed `random` and numpy from torch's seed, so with workers these
        draws are reproducible once torch is seeded."""
        for ancestor in self.ctx.ancestors:
            if type(ancestor) is cst.ClassDef:
                methods = {
                    item.name.value for item in ancestor.body.body if type(item) is cst.FunctionDef
                }
                if methods & {"__getitem__", "__iter__", "__call__"}:
                    return True
        return False

    def finish(self) -> None:
        if not self.seeded or self.helper_seeds:
            return
        for library, call in sorted(self.draws.items(), key=lambda item: self.ctx.position(item[1])):
            if library in self.seeded:
                continue
            seeded = ", ".join(sorted(self.seeded))
            self.report(
                call,
                f"this file seeds {seeded} but draws from {library}'s generator, which it never seeds: "
                f"the run is not reproducible; seed {library} too (or use one seed-everything helper)",
            )


def _draw_library(qualified: str | None, call: cst.Call) -> str | None:
    if qualified is None:
        return None
    if qualified in _TORCH_DRAWS:
        return None if any(a.keyword is not None and a.keyword.value == "generator" for a in call.args) else "torch"
    if qualified in _RANDOM_DRAWS:
        return "random"
    if qualified.startswith("numpy.random."):
        name = qualified.rpartition(".")[2]
        if name == "default_rng" and not call.args:
            return "numpy"  # an unseeded Generator
        return None if name in _NUMPY_NOT_DRAWS else "numpy"
    return None
