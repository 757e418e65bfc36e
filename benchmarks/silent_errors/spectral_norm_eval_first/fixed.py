# fixed twin: the parametrization runs its power iterations when applied
# A spectral-normalised critic scored in eval mode before its first training step: the
# singular-value estimate is still the random start.
import torch
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm

torch.manual_seed(0)
critic = nn.Sequential(spectral_norm(nn.Linear(16, 32)), nn.LeakyReLU(0.2), spectral_norm(nn.Linear(32, 1)))
x = torch.randn(64, 16)
critic.eval()
with torch.no_grad():
    print(f"score before training {critic(x).mean().item():.4f}")
critic.train()
optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)
for step in range(4):
    optimizer.zero_grad()
    loss = critic(x).mean()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
