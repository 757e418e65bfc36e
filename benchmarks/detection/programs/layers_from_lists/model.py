import torch
import torch.nn as nn
from vision_blocks.layers import ResidualStage


class Encoder(nn.Module):
    def __init__(self, widths, vectors):
        super().__init__()
        stages = []
        for width_in, width_out in zip(widths, widths[1:]):
            stages += [nn.Conv2d(width_in, width_out, 3, padding=1), nn.ReLU()]
        self.stem = nn.Sequential(*stages)
        self.stage = ResidualStage(widths[-1])
        self.tokens = nn.Embedding.from_pretrained(vectors, freeze=False)

    def forward(self, images, captions):
        features = self.stage(self.stem(images))
        noise = torch.randn(features.shape) * 0.01  # expect: TL201 -- meets the output of a Sequential built from a list, on the device
        positions = torch.arange(captions.size(1))  # expect: TL201 -- given to an embedding made with from_pretrained, whose weights move with the model
        words = self.tokens(captions) + self.tokens(positions)
        scale = torch.ones(features.shape[0], 1, 1, 1)  # expect: TL201 -- meets the output of a layer class imported from another package
        return features + noise, words, self.stage(features) * scale


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Encoder([3, 16, 32], torch.randn(100, 32)).to(device)
    model(torch.randn(2, 3, 32, 32, device=device), torch.randint(0, 100, (2, 7), device=device))
