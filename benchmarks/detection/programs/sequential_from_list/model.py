import torch.nn as nn


def mlp(sizes, probabilities=True):
    layers = []
    for width_in, width_out in zip(sizes, sizes[1:]):
        layers.extend([nn.Linear(width_in, width_out), nn.Tanh()])
    layers.pop()
    if probabilities:
        layers.append(nn.Softmax(dim=-1))
    return layers


class PolicyNet(nn.Module):
    def __init__(self, observations, actions):
        super().__init__()
        layers = [nn.Linear(observations, 64), nn.Tanh(), nn.Linear(64, actions)]
        layers.append(nn.Softmax(dim=-1))
        self.body = nn.Sequential(*layers)

    def forward(self, observation):
        return self.body(observation)
