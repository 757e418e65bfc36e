"""Device modes for the child of `torchlint run`: cpu, cuda, fake-cuda and meta.

``modes`` picks one (the built-in ``torchlint_select_device`` hook); ``fake_cuda`` simulates CUDA
placement with real values on a CPU-only machine (``fake_cuda_runtime``: torch.cuda and its
streams, events and DataParallel; ``fake_cuda_checkpoints``: saving and loading); ``meta`` runs
value-less under FakeTensorMode. Child process only: these import torch."""
