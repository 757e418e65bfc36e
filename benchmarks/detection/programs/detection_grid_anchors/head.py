import torch
import torch.nn as nn


class YoloHead(nn.Module):
    def __init__(self, in_ch, num_anchors=3, num_classes=80, stride=8):
        super().__init__()
        self.pred = nn.Conv2d(in_ch, num_anchors * (5 + num_classes), 1)
        self.na, self.no, self.stride = num_anchors, 5 + num_classes, stride
        self.register_buffer("anchor_wh", torch.tensor([[10.0, 13.0], [16.0, 30.0], [33.0, 23.0]]))

    def forward(self, feats):
        b, _, h, w = feats.shape
        p = self.pred(feats).view(b, self.na, self.no, h, w).permute(0, 1, 3, 4, 2)
        ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")  # expect: TL201 -- CPU grid added to the CUDA predictions below
        grid = torch.stack((xs, ys), dim=-1).view(1, 1, h, w, 2).float()
        xy = (p[..., :2].sigmoid() + grid) * self.stride
        wh = p[..., 2:4].exp() * self.anchor_wh.view(1, self.na, 1, 1, 2)
        return torch.cat((xy, wh, p[..., 4:].sigmoid()), dim=-1)


def orthogonality_penalty(weight: torch.Tensor) -> torch.Tensor:
    k = weight.shape[0]
    gram = weight @ weight.t()
    return ((gram - torch.eye(k)) ** 2).sum()  # expect: TL201 -- CPU identity meets the (CUDA) weight's Gram matrix


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    head = YoloHead(64).to(device)
    out = head(torch.randn(2, 64, 20, 20, device=device))
    penalty = orthogonality_penalty(head.pred.weight.flatten(1))
    (out.mean() + penalty).backward()
