import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from net import classifier

device = "cuda" if torch.cuda.is_available() else "cpu"
model = classifier.to(device)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
train_data = TensorDataset(torch.rand(600, 1, 28, 28), torch.randint(0, 10, (600,)))


def train_loop(dataloader):
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)  # expect: TL101 -- classifier (module-level Sequential in net.py) ends in nn.Softmax
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 10 == 0:
            print(f"loss: {loss.item():>7f}")


for epoch in range(5):
    train_loop(DataLoader(train_data, batch_size=64))
