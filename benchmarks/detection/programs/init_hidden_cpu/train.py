import torch
import torch.nn as nn

from model import GRUModel, LanguageModel

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = LanguageModel(1000).to(device)
gru = GRUModel(1000).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=20)
for i in range(100):
    data = torch.randint(0, 1000, (35, 20), device=device)
    targets = torch.randint(0, 1000, (35 * 20,), device=device)
    output = model(data)
    loss = criterion(output.view(-1, 1000), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    gru(data)
