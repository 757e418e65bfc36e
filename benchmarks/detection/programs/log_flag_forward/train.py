import torch
import torch.nn as nn

from model import TextClassifier

model = TextClassifier(10_000, 4)
criterion = nn.NLLLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
for step in range(100):
    tokens = torch.randint(0, 10_000, (256,))
    offsets = torch.arange(0, 256, 16)
    labels = torch.randint(0, 4, (16,))
    loss = criterion(model(tokens, offsets, log_probs=True), labels)  # safe: TL102 -- log_probs=True selects the log_softmax branch
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

with torch.no_grad():
    probabilities = model(tokens, offsets)
    check = criterion(model(tokens, offsets), labels)  # expect: TL102 -- the default branch returns softmax
