# expect: TL745
# An encoder-decoder trained with two optimizers; a copy-paste clears the encoder's
# gradients twice and the decoder's never.
import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(12, 8), nn.ReLU())
decoder = nn.Linear(8, 12)
enc_opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
dec_opt = torch.optim.Adam(decoder.parameters(), lr=1e-3)
x = torch.randn(64, 12)
for step in range(8):
    enc_opt.zero_grad()
    enc_opt.zero_grad()
    loss = nn.functional.mse_loss(decoder(encoder(x)), x)
    loss.backward()
    enc_opt.step()
    dec_opt.step()
print(f"loss {loss.item():.4f}")
