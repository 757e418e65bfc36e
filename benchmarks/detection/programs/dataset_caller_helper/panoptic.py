import numpy as np
import torch
from boxes import masks_to_boxes


class PanopticMasks:
    def __init__(self, arrays):
        self.arrays = arrays

    def __len__(self):
        return len(self.arrays)

    def __getitem__(self, i):
        masks = torch.as_tensor(np.asarray(self.arrays[i]), dtype=torch.uint8)
        return {"masks": masks, "boxes": masks_to_boxes(masks)}
