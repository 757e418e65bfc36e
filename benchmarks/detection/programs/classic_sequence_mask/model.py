import torch
import torch.nn as nn


class TransformerClassifier(nn.Module):
    def __init__(self, vocab, dim=64, max_len=128, classes=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(dim, classes)

    def forward(self, tokens, lengths):
        B, T = tokens.shape
        positions = torch.arange(T)  # expect: TL201 -- CPU positions into the position embedding, whose weight is on the device
        pad_mask = torch.arange(T, device=tokens.device)[None, :] >= lengths[:, None]  # safe: TL201 -- device= given
        h = self.encoder(self.tok(tokens) + self.pos(positions), src_key_padding_mask=pad_mask)
        keep = (~pad_mask).unsqueeze(-1).float()
        return self.out((h * keep).sum(1) / keep.sum(1))


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TransformerClassifier(1000).to(device)
    tokens = torch.randint(0, 1000, (8, 32), device=device)
    lengths = torch.randint(1, 33, (8,), device=device)
    print(model(tokens, lengths).shape)
