"""``python -m torchlint.runtime.distributed.agent TORCHRUN-ARGUMENTS``: torch's launcher
(``torch.distributed.run``, what ``torchrun`` runs), quieted.

When a rank fails, the launcher stops the others, logs each stop and raises
``ChildFailedError``, whose traceback and failure table would end the program's output that
`torchlint run` shows and keeps for the report. The report names the failing rank, its line
and the others' state itself; here that failure is only an exit status.
"""

from __future__ import annotations

import logging
import sys


def main(argv: list[str]) -> int:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    try:
        run(parse_args(argv))
    except ChildFailedError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
