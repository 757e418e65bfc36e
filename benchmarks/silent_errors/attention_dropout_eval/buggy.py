# expect: TL748
# scaled_dot_product_attention's dropout_p does not follow the module's mode: the evaluation is random.
import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=16, dropout=0.2):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.dropout = dropout

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout)


torch.manual_seed(0)
model = nn.Sequential(Attention(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 5, 16), torch.randint(0, 4, (8, 5))
for step in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    loss.backward()
    optimizer.step()
model.eval()
with torch.no_grad():
    print(model(x).sum().item())
