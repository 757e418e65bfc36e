import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
best = float("inf")
for epoch in range(50):
    x = torch.randn(128, 8, device=device)
    loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if loss.item() < best:
        best = loss.item()
        torch.save(model.state_dict(), "best.pt")

model.load_state_dict(torch.load("best.pt"))  # safe: TL301 -- saved by this same process a few lines above
print("best loss", best)
