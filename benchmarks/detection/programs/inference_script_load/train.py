import torch
import torch.nn as nn

from net import SmallCNN

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = SmallCNN().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(1000):
    x = torch.randn(32, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (32,), device=device)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.save(model.state_dict(), "cnn.pt")
torch.save({"step": step, "optimizer": opt.state_dict()}, "train_state.pt")
