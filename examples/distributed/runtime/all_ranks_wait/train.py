"""Every rank waits for a file no rank writes (rank 0 was meant to, after preparing the data):
no collective diverges, so only --timeout ends the run, and the report shows where each rank
was."""
import os
import time

import torch.distributed as dist


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.2)


def main():
    dist.init_process_group("gloo")
    wait_for("data.ready")  # nobody creates it
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
