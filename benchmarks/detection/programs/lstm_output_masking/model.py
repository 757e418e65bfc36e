import torch
import torch.nn as nn


class SequenceTagger(nn.Module):
    def __init__(self, vocab, tags, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.LSTM(dim, dim, num_layers=2, batch_first=True)
        self.context = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.classify = nn.Linear(3 * dim, tags)

    def forward(self, tokens, lengths):
        embedded = self.embed(tokens)
        states, (hidden, _) = self.encoder(embedded)
        context, _ = self.context(embedded)
        for row, length in enumerate(lengths.tolist()):
            states[row, length:] = 0.0  # expect: TL103 -- the LSTM saved its output sequence for backward
            context[row, length:] = 0.0  # safe: TL103 -- a bidirectional LSTM returns a concatenation, not what it saved (on the CPU)
        hidden *= 0.5  # safe: TL103 -- the LSTM's final hidden state is not saved
        return self.classify(torch.cat([states, context], -1)), hidden


if __name__ == "__main__":
    model = SequenceTagger(100, 5)
    scores, _ = model(torch.randint(0, 100, (4, 9)), torch.tensor([9, 7, 5, 2]))
    scores.sum().backward()
