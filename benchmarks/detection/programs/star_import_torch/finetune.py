from torch import *
from torch import nn, optim

model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).cuda()
state = load("pretrained.pt")  # expect: TL301 -- torch.load via star import; a pretrained checkpoint from elsewhere
model.load_state_dict(state)
opt = optim.Adam(model.parameters(), lr=1e-4)

for step in range(100):
    x = randn(8, 16).cuda()
    bias = zeros(8, 4)  # expect: TL201 -- torch.zeros via star import, added to CUDA output
    out = model(x) + bias
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
