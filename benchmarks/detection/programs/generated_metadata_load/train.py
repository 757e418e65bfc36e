import torch
import torch.nn as nn

vocab = torch.load("vocab.pt", weights_only=False)  # safe: TL301 -- written by make_vocab.py: lists, a dict and a numpy array, no tensors
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.EmbeddingBag(len(vocab["itos"]), 64).to(device)
head = nn.Linear(64, 2).to(device)
opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()))
for step in range(100):
    tokens = torch.randint(0, len(vocab["itos"]), (16, 20), device=device)
    labels = torch.randint(0, 2, (16,), device=device)
    loss = nn.functional.cross_entropy(head(model(tokens)), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
