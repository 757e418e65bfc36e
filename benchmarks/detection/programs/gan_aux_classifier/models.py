import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, latent_dim=100, n_classes=10, img_dim=784):
        super().__init__()
        self.label_emb = nn.Embedding(n_classes, latent_dim)
        self.net = nn.Sequential(nn.Linear(latent_dim, 256), nn.LeakyReLU(0.2), nn.Linear(256, img_dim), nn.Tanh())

    def forward(self, z, labels):
        return self.net(z * self.label_emb(labels))


class Discriminator(nn.Module):
    def __init__(self, n_classes=10, img_dim=784):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(img_dim, 256), nn.LeakyReLU(0.2))
        self.adv_layer = nn.Sequential(nn.Linear(256, 1), nn.Sigmoid())
        self.aux_layer = nn.Sequential(nn.Linear(256, n_classes), nn.Softmax(dim=1))

    def forward(self, img):
        h = self.body(img)
        validity = self.adv_layer(h)
        label = self.aux_layer(h)
        return validity, label
