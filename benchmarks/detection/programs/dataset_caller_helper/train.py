import torch
from head import MaskHead
from panoptic import PanopticMasks

device = "cuda" if torch.cuda.is_available() else "cpu"
data = PanopticMasks([[[[0, 1], [1, 1]]]])
head = MaskHead().to(device)
masks, centres = head(torch.randn(1, 8, 4, 4, device=device))
print(data[0]["boxes"], centres.shape)
