import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from engine import Trainer
from models import make_classifier

if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    data = TensorDataset(torch.randn(400, 30), torch.randint(0, 6, (400,)))
    trainer = Trainer(make_classifier(30, 6), nn.NLLLoss(), lr=0.05, device=device)
    trainer.fit(DataLoader(data, batch_size=40, shuffle=True), epochs=3)
