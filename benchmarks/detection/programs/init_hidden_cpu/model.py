import torch
import torch.nn as nn


class LanguageModel(nn.Module):
    def __init__(self, ntoken, ninp=200, nhid=200, nlayers=2):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid

    def init_hidden(self, bsz):
        h = torch.zeros(self.nlayers, bsz, self.nhid)  # expect: TL201 -- CPU hidden state given to the LSTM in forward
        c = torch.zeros(self.nlayers, bsz, self.nhid)  # expect: TL201 -- CPU cell state given to the LSTM in forward
        return h, c

    def forward(self, src):
        hidden = self.init_hidden(src.size(1))
        output, hidden = self.rnn(self.encoder(src), hidden)
        return self.decoder(output)


class GRUModel(nn.Module):
    def __init__(self, ntoken, nhid=128):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, nhid)
        self.rnn = nn.GRU(nhid, nhid)
        self.nhid = nhid

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return torch.zeros(1, bsz, self.nhid, device=weight.device)  # safe: TL201 -- follows the parameters' device

    def forward(self, src):
        output, _ = self.rnn(self.encoder(src), self.init_hidden(src.size(1)))
        return output
