from torch import nn

classifier = nn.Sequential(
    nn.Flatten(),
    nn.Linear(28 * 28, 512),
    nn.ReLU(),
    nn.Linear(512, 10),
    nn.Softmax(dim=1),
)
