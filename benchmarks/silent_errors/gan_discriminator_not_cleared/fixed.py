# fixed twin: the discriminator step starts with netD.zero_grad(), as DCGAN does
# A GAN whose discriminator step never clears the discriminator's gradients: the generator
# step's backward adds into them too, and each discriminator step applies all of them.
import torch
from torch import nn

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
netD = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
optD = torch.optim.Adam(netD.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(32, 8) + 2
for step in range(8):
    noise = torch.randn(32, 4)
    fake = netG(noise)
    netD.zero_grad()
    lossD = bce(netD(real), torch.ones(32, 1)) + bce(netD(fake.detach()), torch.zeros(32, 1))
    lossD.backward()
    optD.step()
    netG.zero_grad()
    lossG = bce(netD(fake), torch.ones(32, 1))
    lossG.backward()
    optG.step()
print(f"lossD {lossD.item():.4f} lossG {lossG.item():.4f}")
