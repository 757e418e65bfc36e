"""torchlint: find the PyTorch bugs that cost days."""

__version__ = "0.1.0"
