"""A community pipeline file (no package): the guidance embedding helper was copied from
another pipeline and nothing here calls it."""
import torch
from scheduler import NestedDDIM


class NestedPipeline:
    def __init__(self, unet, alphas, scales=None):
        self.unet = unet
        self.scheduler = NestedDDIM(alphas, scales)

    def get_guidance_scale_embedding(self, w, embedding_dim=8):
        assert len(w.shape) == 1
        half = embedding_dim // 2
        freqs = torch.exp(torch.arange(half) * -0.1)  # safe: TL201 -- an uncalled method of a non-module class in a file outside any package: no device tensor reaches it
        return w[:, None] * freqs[None, :]

    def __call__(self, latents, steps=2):
        latents = self.scheduler.add_noise(latents, 0)
        for t in range(steps):
            latents = self.scheduler.step(self.unet(latents), t, latents)
        return latents


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    unet = torch.nn.Conv2d(4, 4, 1).to(device)
    pipe = NestedPipeline(unet, torch.linspace(0.9, 0.1, 10).tolist())
    print(pipe(torch.randn(1, 4, 8, 8, device=device)).shape)
