import torch

from model import Classifier

device = torch.device("cuda:0")
model = Classifier()
model.load_state_dict(torch.load("classifier.pt"))  # safe: TL301 -- train.py wrote it on the one GPU this script also needs
model.to(device).eval()
with torch.no_grad():
    print(model(torch.randn(8, 20, device=device)).argmax(1))
