"""Box helpers of a research repo (not an installed package): the dataset turns panoptic
masks into boxes on the CPU; the mask head turns its predicted masks into boxes on the GPU."""
import torch


def masks_to_boxes(masks):
    h, w = masks.shape[-2:]
    ys = torch.arange(h, dtype=torch.float)  # safe: TL201 -- its only caller is the dataset's __getitem__, which passes CPU masks
    xs = torch.arange(w, dtype=torch.float)  # safe: TL201 -- its only caller is the dataset's __getitem__, which passes CPU masks
    x_max = (masks * xs[None, None]).flatten(1).max(-1)[0]
    y_max = (masks * ys[None, :, None]).flatten(1).max(-1)[0]
    return torch.stack([x_max, y_max], 1)


def mask_centres(masks):
    h, w = masks.shape[-2:]
    grid = torch.arange(h * w, dtype=torch.float).view(h, w)  # expect: TL201 -- the mask head passes its CUDA mask probabilities
    return (masks * grid).flatten(1).sum(-1) / masks.flatten(1).sum(-1)
