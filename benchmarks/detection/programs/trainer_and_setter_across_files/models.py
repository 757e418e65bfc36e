import torch
import torch.nn as nn


class ImageClassifier(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(16, classes)

    def forward(self, images):
        return torch.softmax(self.head(self.features(images)), dim=1)


class TaggingModel(nn.Module):
    def __init__(self, vocab, tags):
        super().__init__()
        self.embed = nn.Embedding(vocab, 32)
        self.out = nn.Linear(32, tags)
        self.loss_op = None

    def add_loss_op(self, loss_op):
        self.loss_op = loss_op

    def forward(self, tokens, tags):
        scores = self.out(self.embed(tokens)).softmax(-1)
        return self.loss_op(scores.flatten(0, 1), tags.flatten())  # expect: TL101 -- run.py injects nn.CrossEntropyLoss through add_loss_op
