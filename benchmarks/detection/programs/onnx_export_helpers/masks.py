"""Mask padding for a detection head: the tracing branch that ONNX export takes calls private
helpers that pad on the CPU (export runs there); the eager path runs with the model's masks."""
import torch
import torch.nn as nn
import torchvision


def _onnx_pad_mask(mask, padding: int):
    pad = torch.zeros(mask.shape[0], padding)  # safe: TL201 -- only the export check's branch reaches it, and ONNX export runs on the CPU
    return torch.cat([mask, pad], dim=1)


@torch.jit._script_if_tracing
def _onnx_pad_masks_loop(masks, padding: int):
    padded = []
    for i in range(masks.shape[0]):
        padded.append(_onnx_pad_mask(masks[i], padding))
    return torch.stack(padded)


def pad_masks(masks, padding: int):
    if torchvision._is_tracing():
        return _onnx_pad_masks_loop(masks, padding)
    pad = torch.zeros(masks.shape[0], masks.shape[1], padding)  # expect: TL201 -- the eager path gets the head's CUDA masks
    return torch.cat([masks, pad], dim=2)


class MaskHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 1, 3, padding=1)

    def forward(self, x):
        return pad_masks(self.conv(x)[:, 0], padding=2)


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    head = MaskHead().to(device)
    print(head(torch.randn(2, 4, 8, 8, device=device)).shape)
