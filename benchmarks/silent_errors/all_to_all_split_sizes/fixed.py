# fixed twin: the split sizes are exchanged first, so every rank agrees
# ranks: 2
# Expert routing with all_to_all_single: each rank computes the split sizes from its own
# token counts and never exchanges them, so the ranks disagree on what to send and receive.
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    tokens = torch.arange(4, dtype=torch.float32) + 10 * rank
    send = [1, 3] if rank == 0 else [2, 2]
    counts = torch.tensor(send)
    received = torch.empty_like(counts)
    dist.all_to_all_single(received, counts)
    receive = received.tolist()
    out = torch.empty(sum(receive))
    dist.all_to_all_single(out, tokens, output_split_sizes=receive, input_split_sizes=send)
    print(rank, out.tolist())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
