"""The memory behind a tensor, whatever its layout (child process only: imports torch).

A strided tensor has one storage. A sparse one has none of its own (`untyped_storage()`
raises "Cannot access storage of SparseTensorImpl"): its memory is that of its index and value
tensors. A graph convolution multiplies a sparse adjacency matrix, and autograd saves it for
backward, so every probe that weighs tensors meets one.
"""

from __future__ import annotations

import torch

_COMPRESSED_ROWS = (torch.sparse_csr, torch.sparse_bsr)
_COMPRESSED_COLUMNS = (torch.sparse_csc, torch.sparse_bsc)


def storages(tensor: torch.Tensor) -> list[tuple[int, int]]:
    """``(data_ptr, nbytes)`` of each storage that holds ``tensor``'s data: one for a strided
    tensor, those of the indices and values of a sparse one, none where torch cannot say
    (an MKL-DNN tensor). Call it outside every mode (``torch._C.DisableTorchFunction()``)."""
    layout = tensor.layout
    if layout == torch.sparse_coo:
        parts = (tensor._indices(), tensor._values())
    elif layout in _COMPRESSED_ROWS:
        parts = (tensor.crow_indices(), tensor.col_indices(), tensor.values())
    elif layout in _COMPRESSED_COLUMNS:
        parts = (tensor.ccol_indices(), tensor.row_indices(), tensor.values())
    else:
        try:
            storage = tensor.untyped_storage()
            return [(storage.data_ptr(), storage.nbytes())]
        except (RuntimeError, NotImplementedError):
            return []
    found: list[tuple[int, int]] = []
    for part in parts:
        found.extend(storages(part))
    return found
