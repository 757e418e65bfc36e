import torch.nn as nn


def make_classifier(in_dim, num_classes):
    return nn.Sequential(
        nn.Linear(in_dim, 128),
        nn.ReLU(),
        nn.Linear(128, num_classes),
        nn.Softmax(dim=1),
    )
