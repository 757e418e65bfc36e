"""Apply a trained style network to an image tensor, on whatever device is here."""
import sys

import torch

from models import Critic, StyleNet


def stylize(model_path: str, critic_path: str, image_path: str) -> torch.Tensor:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = StyleNet()
    state_dict = torch.load(model_path, weights_only=True)  # safe: TL301 -- train.py saves StyleNet only after net.eval().cpu()
    net.load_state_dict(state_dict)
    critic = Critic()
    critic.load_state_dict(torch.load(critic_path, weights_only=True))  # expect: TL301 -- train.py saves the Critic straight from the accelerator
    image = torch.load(image_path, map_location="cpu", weights_only=True)
    with torch.no_grad():
        out = net.to(device)(image.to(device))
        print(critic.to(device)(out).item())
    return out.cpu()


if __name__ == "__main__":
    stylize(sys.argv[1], sys.argv[2], sys.argv[3])
