"""A diffusion sampling loop whose guidance-scale embedding is built on the CPU by helpers,
and a distillation step that gives such a helper a tensor already on the GPU."""
import math

import torch
import torch.nn as nn


def guidance_embedding(w, embedding_dim=64, dtype=torch.float32):
    assert w.ndim == 1
    half = embedding_dim // 2
    freqs = torch.exp(torch.arange(half, dtype=dtype) * -(math.log(10000.0) / (half - 1)))  # safe: TL201 -- every caller passes a CPU `w` and moves the result with the next statement
    emb = w.to(dtype)[:, None] * freqs[None, :]
    return torch.cat([emb.sin(), emb.cos()], dim=1)


def timestep_embedding(t, embedding_dim=64):
    assert t.ndim == 1
    half = embedding_dim // 2
    freqs = torch.exp(torch.arange(half) * -(math.log(10000.0) / (half - 1)))  # expect: TL201 -- `t` comes from the GPU in distill_step; the CPU frequencies meet it
    emb = t.float()[:, None] * freqs[None, :]
    return torch.cat([emb.sin(), emb.cos()], dim=1)


class Sampler:
    def __init__(self, unet, device):
        self.unet = unet.to(device)
        self.device = device

    def scale_embedding(self, w, embedding_dim=64):
        assert w.ndim == 1
        half = embedding_dim // 2
        freqs = torch.exp(torch.arange(half) * -(math.log(10000.0) / (half - 1)))  # safe: TL201 -- its one caller passes a CPU tensor and moves the result
        emb = w[:, None] * freqs[None, :]
        return torch.cat([emb.sin(), emb.cos()], dim=1)

    @torch.no_grad()
    def sample(self, latents, guidance_scale=7.5, steps=4):
        cond = self.scale_embedding(torch.tensor(guidance_scale - 1).repeat(latents.shape[0])).to(device=self.device, dtype=latents.dtype)
        for _ in range(steps):
            latents = latents - 0.1 * self.unet(torch.cat([latents, cond], dim=1))
        return latents


def distill_step(student, latents, w_min=3.0, w_max=15.0):
    w = (w_max - w_min) * torch.rand((latents.shape[0],)) + w_min
    w_emb = guidance_embedding(w)
    w_emb = w_emb.to(device=latents.device, dtype=latents.dtype)
    t = torch.randint(0, 1000, (latents.shape[0],), device=latents.device)
    t_emb = timestep_embedding(t)
    return student(torch.cat([latents, w_emb, t_emb], dim=1)).pow(2).mean()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    unet = nn.Linear(8 + 64, 8)
    print(Sampler(unet, device).sample(torch.randn(2, 8, device=device)).shape)
    student = nn.Linear(8 + 128, 1).to(device)
    distill_step(student, torch.randn(2, 8, device=device)).backward()
