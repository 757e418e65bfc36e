import torch
import torch.nn as nn


class SentimentModel(nn.Module):
    def __init__(self, vocab, dim=128, classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, classes)

    def forward(self, tokens):
        _, h = self.rnn(self.embed(tokens))
        return torch.softmax(self.out(h[-1]), dim=-1)


class Trainer:
    def __init__(self, model, lr=1e-3):
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)
        self.loss_fn = None

    def set_loss(self, loss_fn):
        self.loss_fn = loss_fn

    def step(self, tokens, labels):
        self.opt.zero_grad()
        loss = self.loss_fn(self.model(tokens), labels)  # expect: TL101 -- loss injected by set_loss(nn.CrossEntropyLoss()); the model returns softmax
        loss.backward()
        self.opt.step()
        return loss.item()


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    trainer = Trainer(SentimentModel(5000).to(device))
    trainer.set_loss(nn.CrossEntropyLoss())
    for _ in range(100):
        tokens = torch.randint(0, 5000, (16, 40), device=device)
        labels = torch.randint(0, 2, (16,), device=device)
        trainer.step(tokens, labels)
