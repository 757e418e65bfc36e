import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(40, 3)

    def forward(self, x):
        scale = torch.FloatTensor([1.0, 0.5, 2.0])  # expect: TL201 -- legacy constructor, CPU tensor multiplied with the CUDA logits
        return self.fc(x) * scale


def train(model, samples, epochs):
    model.cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        for features, label_list in samples:
            x = features.cuda()
            noise = torch.normal(0.0, 0.05, size=x.shape)  # expect: TL201 -- torch.normal makes a CPU tensor that is added to CUDA x
            logits = model(x + noise)
            target = torch.LongTensor(label_list)  # expect: TL201 -- CPU targets for CUDA logits
            loss = F.cross_entropy(logits, target)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    data = [(torch.randn(8, 40), [0, 1, 2, 0, 1, 2, 0, 1]) for _ in range(10)]
    train(Classifier(), data, args.epochs)
