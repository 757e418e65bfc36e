import torch
import torch.nn as nn


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(784, 64), nn.ReLU())
        self.dec = nn.Sequential(nn.Linear(64, 784), nn.Sigmoid())

    def forward(self, x):
        return self.dec(self.enc(x))


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = AutoEncoder().to(device)
    opt = torch.optim.Adam(model.parameters())
    for step in range(200):
        x = torch.rand(64, 784, device=device)
        loss = nn.functional.binary_cross_entropy(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save({"model": model.state_dict(), "step": step}, "ae.pt")
    restored = AutoEncoder().to(device)
    ckpt = torch.load("ae.pt")  # safe: TL301 -- written by this __main__ block just above, same devices
    restored.load_state_dict(ckpt["model"])
