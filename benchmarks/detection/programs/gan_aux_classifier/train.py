import torch
import torch.nn as nn

from models import Discriminator, Generator

cuda = torch.cuda.is_available()
generator, discriminator = Generator(), Discriminator()
adversarial_loss = nn.BCELoss()
auxiliary_loss = nn.CrossEntropyLoss()
if cuda:
    generator.cuda()
    discriminator.cuda()
opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))

for step in range(1000):
    real = torch.randn(64, 784)
    labels = torch.randint(0, 10, (64,))
    if cuda:
        real, labels = real.cuda(), labels.cuda()
    valid = torch.ones(64, 1, device=real.device)
    fake = torch.zeros(64, 1, device=real.device)

    opt_g.zero_grad()
    z = torch.randn(64, 100, device=real.device)
    gen_imgs = generator(z, labels)
    validity, pred_label = discriminator(gen_imgs)
    g_loss = 0.5 * (adversarial_loss(validity, valid) + auxiliary_loss(pred_label, labels))  # expect: TL101 -- the discriminator's label head ends in nn.Softmax
    g_loss.backward()
    opt_g.step()

    opt_d.zero_grad()
    real_pred, real_aux = discriminator(real)
    d_real_loss = (adversarial_loss(real_pred, valid) + auxiliary_loss(real_aux, labels)) / 2  # expect: TL101 -- real_aux is the softmax label head
    fake_pred, _ = discriminator(gen_imgs.detach())
    d_loss = d_real_loss + adversarial_loss(fake_pred, fake) / 2
    d_loss.backward()
    opt_d.step()
