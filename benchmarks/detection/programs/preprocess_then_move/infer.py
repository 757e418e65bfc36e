import torch
import torch.nn as nn
from torch import Tensor


def preprocess(img: Tensor) -> Tensor:
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)  # safe: TL201 -- CPU preprocessing; the caller moves the result
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)  # safe: TL201 -- CPU preprocessing; the caller moves the result
    return (img.float() / 255.0 - mean) / std


def jitter(batch: Tensor) -> Tensor:
    noise = torch.randn(batch.shape) * 0.01  # safe: TL201 -- applied before fabric.to_device moves the batch
    return batch + noise


def run(model, images, fabric):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device).eval()
    outputs = []
    with torch.no_grad():
        for img in images:
            x = preprocess(img).cuda()
            outputs.append(model(x.unsqueeze(0)).argmax(1).item())
        for batch in images:
            batch = fabric.to_device(jitter(batch.float()))
            outputs.append(model(batch).argmax(1))
    return outputs


if __name__ == "__main__":
    from lightning.fabric import Fabric

    fabric = Fabric(accelerator="cuda")
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
    imgs = [torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8) for _ in range(4)]
    print(run(net, imgs, fabric))
