import torch.nn as nn
import torch.nn.functional as F


class CharRNN(nn.Module):
    def __init__(self, n_chars, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(n_chars, hidden)
        self.lstm = nn.LSTM(hidden, hidden, batch_first=True)
        self.decoder = nn.Linear(hidden, n_chars)

    def forward(self, x):
        out, _ = self.lstm(self.embed(x))
        return F.log_softmax(self.decoder(out), dim=-1)


class Tagger(nn.Module):
    def __init__(self, n_in, n_tags):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, 64), nn.Tanh(), nn.Linear(64, n_tags), nn.LogSoftmax(dim=1))

    def forward(self, x):
        return self.net(x)
