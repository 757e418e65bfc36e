import argparse

import torch

from net import SmallCNN


def load_model(path):
    model = SmallCNN()
    model.load_state_dict(torch.load(path))  # expect: TL301 -- cnn.pt was saved by train.py, which trains on CUDA
    return model.eval()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("--state", default="train_state.pt")
    args = parser.parse_args()
    model = load_model(args.checkpoint)
    state = torch.load(args.state)  # expect: TL301 -- optimizer state written on the training GPU
    print("trained for", state["step"], "steps")
    with torch.no_grad():
        print(model(torch.randn(1, 3, 32, 32)).argmax(1).item())


if __name__ == "__main__":
    main()
