"""A prototype classifier whose distance to 1024 prototypes in 2048 dimensions dwarfs the rest of the model:
`torchlint run --profile` names models.py's cdist line as the hot spot.

    torchlint run examples/compile/hotspot/train.py --profile --report out/
"""

import torch
from torch import nn

from models import PrototypeNet


def main() -> None:
    torch.manual_seed(0)
    model = PrototypeNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(8):
        x, y = torch.randn(64, 32), torch.randint(0, 10, (64,))
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
