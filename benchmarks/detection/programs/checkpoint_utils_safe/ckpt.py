import copy
import io

import torch


def clone_state(model):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    return torch.load(buffer)  # safe: TL301 -- in-memory round trip in one function


def load_on(path, device):
    return torch.load(path, device)  # safe: TL301 -- map_location passed positionally


def load_with(path, **kwargs):
    return torch.load(path, **kwargs)  # safe: TL301 -- **kwargs may carry map_location


def snapshot(model):
    return copy.deepcopy(model.state_dict())


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = torch.nn.Linear(4, 4).to(device)
    clone_state(net)
    torch.save(net.state_dict(), "net.pt")
    load_on("net.pt", device)
    load_with("net.pt", map_location=device)
