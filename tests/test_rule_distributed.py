"""The distributed rules (TL801-TL807) beyond their Bad/Good cases: which conditions split the
ranks, and the project-level judgements (helpers in other files, imported model classes)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.plugins.rules._distributed import RankReader
from torchlint.testing import check_sources


def lines(sources: dict[str, str], code: str) -> list[tuple[str, int]]:
    files = {name: textwrap.dedent(text).lstrip("\n") for name, text in sources.items()}
    return sorted((f.path, f.location.line) for f in check_sources(files, select=[code]).findings if f.code == code)


# -- rank-dependent conditions ---------------------------------------------------------------


@pytest.mark.parametrize(
    "test",
    [
        "rank == 0",
        "dist.get_rank() == 0",
        "local_rank == 0",
        "is_main_process()",
        "args.rank % 2",
        "args.local_rank in [-1, 0]",
        "not master_process",
        "int(os.environ['RANK']) == 0",
        "self.gpu_id == 0",
        "args.rank % ngpus_per_node == 0 and epoch % 10 == 0",
        "not args.distributed or rank == 0",
        "accelerator.is_local_main_process",
        "trainer.is_global_zero",
        "rank <= 0",
    ],
)
def test_conditions_that_differ_between_ranks(test):
    assert RankReader().dependent(cst.parse_expression(test))


@pytest.mark.parametrize(
    "test",
    [
        "rank != -1",
        "args.local_rank == -1",
        "local_rank is None",
        "rank >= 0",
        "0 <= rank",
        "world_size > 1",
        "dist.is_initialized()",
        "args.distributed",
        "int(os.environ.get('RANK', -1)) != -1",
        "args.gpu",
        "lora_rank > 0",
        "low_rank",
    ],
)
def test_conditions_that_are_the_same_on_every_rank(test):
    assert not RankReader().dependent(cst.parse_expression(test))


def test_names_a_file_binds_to_the_rank_count_like_it():
    module = cst.parse_module("gpu = int(os.environ['LOCAL_RANK'])\nlogs = dist.get_rank() == 0\nworker_id = 3\n")
    reader = RankReader(module)
    assert reader.dependent(cst.parse_expression("gpu == 1"))
    assert reader.dependent(cst.parse_expression("logs"))
    assert not reader.dependent(cst.parse_expression("worker_id == 0"))


# -- TL803: helpers and guards ------------------------------------------------------------------


def test_tl803_a_helper_guarded_inside_is_its_own_business():
    source = """
        import torch.distributed as dist

        def sync(t):
            if dist.is_initialized():
                dist.all_reduce(t)

        def log(t, rank):
            if rank == 0:
                sync(t)
        """
    # The collective in `sync` is itself conditional: the rule does not guess whether every
    # rank reaches it, so the call under `rank == 0` is not reported either.
    assert lines({"a.py": source}, "TL803") == []


def test_tl803_arms_of_an_elif_chain_that_pair_up_are_left_alone():
    source = """
        import torch.distributed as dist

        def step(t, rank):
            if rank == 0:
                dist.broadcast(t, src=0)
            elif rank == 1:
                dist.broadcast(t, src=0)
            else:
                print(t)
        """
    # Ranks 0 and 1 both broadcast: with two ranks the else never runs. Either arm pairs
    # with the other, so neither is reported; an arm with no partner still is.
    assert lines({"a.py": source}, "TL803") == []
    assert lines({"a.py": source.replace("dist.broadcast(t, src=0)\n            else", "print(t)\n            else")}, "TL803") == [("a.py", 5)]


# -- TL801: helpers in other files -------------------------------------------------------------

MAIN = """
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    from engine import train_one_epoch

    def main(dataset, model, epochs):
        loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
        for epoch in range(epochs):
            train_one_epoch(model, loader, epoch)
    """


def test_tl801_needs_the_helper_file_to_judge_a_loop_that_hands_the_loader_over():
    helper = "def train_one_epoch(model, loader, epoch):\n    for x in loader:\n        model(x)\n"
    assert lines({"main.py": MAIN, "engine.py": helper}, "TL801") == [("main.py", 7)]
    assert lines({"main.py": MAIN}, "TL801") == []  # engine.py not checked: it may set the epoch
    setting = helper.replace("    for x", "    loader.sampler.set_epoch(epoch)\n    for x")
    assert lines({"main.py": MAIN, "engine.py": setting}, "TL801") == []


# -- TL805 and TL806 across files ------------------------------------------------------------------


def test_tl805_is_left_to_the_imported_file_that_converts_the_model():
    train = """
        import torch
        import torch.nn as nn
        from helpers import prepare

        def main(rank):
            model = prepare(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
            return torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
        """
    helpers = "import torch.nn as nn\n\ndef prepare(model):\n    return nn.SyncBatchNorm.convert_sync_batchnorm(model)\n"
    assert lines({"train.py": train}, "TL805") == [("train.py", 7)]
    assert lines({"train.py": train, "helpers.py": helpers}, "TL805") == []
    # A file that mentions SyncBatchNorm but that this one does not import proves nothing.
    assert lines({"train.py": train, "other.py": helpers}, "TL805") == [("train.py", 7)]


def test_tl806_matches_files_only_by_a_path_written_with_a_literal():
    train = """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP

        def main(rank, args):
            model = DDP(Net().to(rank), device_ids=[rank])
            torch.save(model.state_dict(), args.out)
        """
    evaluate = """
        import torch

        def main(args):
            model = Net()
            model.load_state_dict(torch.load(args.out))
        """
    assert lines({"train.py": train, "evaluate.py": evaluate}, "TL806") == []
    literal = {name: text.replace("args.out", '"out/model.pt"') for name, text in (("train.py", train), ("evaluate.py", evaluate))}
    assert lines(literal, "TL806") == [("evaluate.py", 5)]
