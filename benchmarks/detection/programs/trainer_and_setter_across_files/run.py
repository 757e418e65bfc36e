import torch
import torch.nn as nn

from models import ImageClassifier, TaggingModel
from trainer import Trainer

batches = [(torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))) for _ in range(4)]
trainer = Trainer(epochs=1)
trainer.train(ImageClassifier(), batches)

tagger = TaggingModel(1000, 12)
tagger.add_loss_op(nn.CrossEntropyLoss())
loss = tagger(torch.randint(0, 1000, (4, 20)), torch.randint(0, 12, (4, 20)))
loss.backward()
