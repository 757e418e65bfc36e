"""Frame energies of a waveform, for the dataset manifest (runs once, on the CPU)."""
import numpy as np
import torch
import torch.nn.functional as F


def extract_energy(waveform: torch.Tensor, hop_length: int = 256, n_fft: int = 1024) -> np.ndarray:
    waveform = F.pad(waveform.view(1, 1, -1), [n_fft // 2, n_fft // 2], mode="reflect")
    fourier = np.fft.fft(np.eye(n_fft))[: n_fft // 2 + 1]
    basis = torch.FloatTensor(np.vstack([fourier.real, fourier.imag])[:, None, :])  # safe: TL201 -- the result is .numpy()-ed without .cpu(): waveform is a CPU tensor
    spectrum = F.conv1d(waveform, basis, stride=hop_length)
    real, imag = spectrum.chunk(2, dim=1)
    return torch.norm(torch.sqrt(real**2 + imag**2), dim=1).squeeze(0).numpy()
