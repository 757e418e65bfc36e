import torch.nn as nn
from boxes import mask_centres


class MaskHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 3, 1)

    def forward(self, features):
        masks = self.conv(features).sigmoid()
        return masks, mask_centres(masks)
