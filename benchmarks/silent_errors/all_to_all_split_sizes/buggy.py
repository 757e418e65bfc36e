# expect: TL720
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
    receive = [1, 3] if rank == 0 else [2, 2]
    out = torch.empty(sum(receive))
    dist.all_to_all_single(out, tokens, output_split_sizes=receive, input_split_sizes=send)
    print(rank, out.tolist())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
