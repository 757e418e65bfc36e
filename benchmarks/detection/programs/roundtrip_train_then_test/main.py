import torch
import torch.nn as nn
import torch.nn.functional as F

CKPT = "mnist_cnn.pt"
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_model():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def train():
    model = make_model().to(device)
    opt = torch.optim.Adam(model.parameters())
    for _ in range(100):
        x = torch.randn(64, 1, 28, 28, device=device)
        y = torch.randint(0, 10, (64,), device=device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(model.state_dict(), CKPT)


def test():
    model = make_model().to(device)
    model.load_state_dict(torch.load(CKPT))  # safe: TL301 -- train() saved it earlier in this same run
    model.eval()
    with torch.no_grad():
        x = torch.randn(256, 1, 28, 28, device=device)
        print(model(x).argmax(1).bincount(minlength=10))


def main():
    train()
    test()


if __name__ == "__main__":
    main()
