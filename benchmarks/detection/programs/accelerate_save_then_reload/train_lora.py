"""LoRA fine-tuning with accelerate: saves a checkpoint each epoch with `accelerator.save`,
then reloads the last one for a validation pass in the same run; an optional warm start
loads weights from an earlier run. Needs `accelerate`."""
import argparse
import os

import torch
import torch.nn as nn
from accelerate import Accelerator


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output_dir", default="out")
    parser.add_argument("--init_from", default=None)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)

    accelerator = Accelerator()
    model = nn.Linear(16, 4)
    if args.init_from is not None:
        model.load_state_dict(torch.load(args.init_from))  # expect: TL301 -- weights of an earlier run, maybe saved on a GPU
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,))), batch_size=8)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    for epoch in range(args.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        accelerator.save(accelerator.unwrap_model(model).state_dict(), os.path.join(args.output_dir, f"{epoch}_lora.pt"))

    def load_lora(net, epoch):
        checkpoint = os.path.join(args.output_dir, f"{epoch}_lora.pt")
        net.load_state_dict(torch.load(checkpoint))  # safe: TL301 -- this run saved that file above, on this machine
        return net

    validation_model = load_lora(nn.Linear(16, 4).to(accelerator.device), epoch)
    print(validation_model.weight.shape)


if __name__ == "__main__":
    main()
