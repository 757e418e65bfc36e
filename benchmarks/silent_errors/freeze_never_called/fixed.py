# fixed twin: the freeze method is called
# The configuration freezes the pretrained encoder, but the freeze method is only named,
# never called: the encoder trains with the head.
import argparse

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32))
        self.head = nn.Linear(32, 3)

    def freeze_encoder(self):
        for p in self.encoder.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        return self.head(self.encoder(x))


parser = argparse.ArgumentParser()
parser.add_argument("--freeze-encoder", action="store_true", default=True)
args = parser.parse_args([])
torch.manual_seed(0)
model = Classifier()
if args.freeze_encoder:
    model.freeze_encoder()
optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
x, y = torch.randn(64, 16), torch.randint(0, 3, (64,))
for step in range(4):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
