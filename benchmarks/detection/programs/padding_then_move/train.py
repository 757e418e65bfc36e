import torch
import torch.nn as nn


class BagOfWords(nn.Module):
    def __init__(self, vocab, dim, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.out = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.out(self.embed(tokens).mean(1))


def batches(pairs, size):
    for i in range(0, len(pairs), size):
        yield pairs[i:i + size]


def train(model, pairs, device, epochs=2):
    opt = torch.optim.Adam(model.parameters())
    all_losses = torch.empty(0)  # safe: TL201 -- placeholder only ever concatenated with CPU values
    for _ in range(epochs):
        for chunk in batches(pairs, 16):
            seqs, labels = zip(*chunk)
            longest = max(len(s) for s in seqs)
            padded = torch.zeros(len(seqs), longest, dtype=torch.long)  # safe: TL201 -- CPU padding moved with .to(device) below
            for row, seq in enumerate(seqs):
                padded[row, : len(seq)] = seq
            padded = padded.to(device)
            target = torch.tensor(labels).to(device)
            loss = nn.functional.cross_entropy(model(padded), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            all_losses = torch.cat([all_losses, loss.detach().cpu().view(1)])
    return all_losses.mean().item()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = [(torch.randint(1, 500, (int(n),)), int(n) % 2) for n in torch.randint(3, 30, (200,))]
    print(train(BagOfWords(500, 32, 2).to(device), data, device))
