"""A DDIM-style step that takes one noise prediction, or a list of per-scale predictions from a
nested UNet (then `scales` is set): the per-scale alphas are built on the CPU for the list form
only, where they meet the predictions one 0-dim element at a time."""
import torch


class NestedDDIM:
    def __init__(self, alphas, scales=None):
        self.alphas = alphas
        self.scales = scales

    def step(self, model_output: torch.Tensor, t: int, sample: torch.Tensor):
        alpha = self.alphas[t]
        if self.scales is not None and len(model_output) > 1:
            alpha = torch.tensor([alpha ** s for s in self.scales])  # safe: TL201 -- only under the nested guard, where model_output is a list walked element by element
        if len(model_output) > 1:
            return [(s - (1 - a) ** 0.5 * o) / a ** 0.5 for o, s, a in zip(model_output, sample, alpha)]
        return (sample - (1 - alpha) ** 0.5 * model_output) / alpha ** 0.5

    def add_noise(self, sample: torch.Tensor, t: int):
        if len(sample) > 1:
            ramp = torch.linspace(1.0, 0.5, len(sample))  # expect: TL201 -- len() of a batch tensor is its batch size: the CPU ramp meets the CUDA batch
            return sample * ramp[:, None, None, None] + self.alphas[t]
        return sample
