import torch
import torch.nn as nn
import torch.nn.functional as F

from model import CharRNN, Tagger

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
rnn = CharRNN(96).to(device)
tagger = Tagger(40, 12).to(device)
criterion = nn.NLLLoss()
params = list(rnn.parameters()) + list(tagger.parameters())
optimizer = torch.optim.Adam(params, lr=2e-3)

for it in range(300):
    seq = torch.randint(0, 96, (8, 33), device=device)
    inp, target = seq[:, :-1], seq[:, 1:]
    log_probs = rnn(inp)
    loss = criterion(log_probs.reshape(-1, 96), target.reshape(-1))  # safe: TL102 -- CharRNN returns log_softmax
    feats = torch.randn(32, 40, device=device)
    tags = torch.randint(0, 12, (32,), device=device)
    loss = loss + F.nll_loss(tagger(feats), tags)  # safe: TL102 -- Tagger ends in nn.LogSoftmax
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
