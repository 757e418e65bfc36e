import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F


class LitClassifier(L.LightningModule):
    def __init__(self, in_dim=64, classes=5, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.classifier = nn.Sequential(nn.Linear(in_dim, 128), nn.ReLU(), nn.Linear(128, classes), nn.Softmax(dim=-1))

    def forward(self, x):
        return self.classifier(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.nll_loss(self(x), y)  # expect: TL102 -- the classifier ends in nn.Softmax: probabilities, not log-probabilities
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        probs = self(x)
        loss = F.nll_loss(torch.log(probs + 1e-8), y)  # safe: TL102 -- log of the probabilities
        self.log("val_loss", loss)
        self.log("val_acc", (probs.argmax(-1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


if __name__ == "__main__":
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.randn(256, 64), torch.randint(0, 5, (256,)))
    trainer = L.Trainer(accelerator="gpu", devices=1, max_epochs=2)
    trainer.fit(LitClassifier(), DataLoader(data, batch_size=32), DataLoader(data, batch_size=64))
