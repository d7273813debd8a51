"""Where and how reproducibly the non-linear experiments run (torch devices, determinism).

Both experiments train on ``"cpu"`` or a CUDA GPU and switch PyTorch's deterministic
algorithms on in the same way, here.  On a GPU, cuBLAS is deterministic only with a fixed
workspace: ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` must be set before the first cuBLAS call, or
``torch.use_deterministic_algorithms(True)`` makes that call fail; every switch below sets it
(unless the caller already did).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import torch

from ..validation import check_int

__all__ = ["CUBLAS_WORKSPACE", "resolve_device", "enable_determinism", "deterministic"]

#: the cuBLAS workspace setting that makes cuBLAS deterministic (PyTorch's reproducibility notes)
CUBLAS_WORKSPACE = ":4096:8"


def resolve_device(device) -> torch.device:
    """``"cpu"`` or ``"cuda"`` / ``"cuda:N"`` (the latter only when a GPU is visible).

    Raises
    ------
    ValueError
        Naming ``device`` for anything else, or when CUDA is asked for but not visible.
    """
    name = str(device)
    if name != "cpu" and name != "cuda" and not name.startswith("cuda:"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={name!r} was asked for but torch sees no CUDA GPU")
    return torch.device(name)


def enable_determinism(device="cpu", *, warn_only: bool = False) -> None:
    """Switch deterministic algorithms on for the rest of the process (scripts).

    Sets ``CUBLAS_WORKSPACE_CONFIG`` (:data:`CUBLAS_WORKSPACE`) first when ``device`` is a GPU
    and the variable is unset, then calls ``torch.use_deterministic_algorithms(True,
    warn_only=warn_only)``.
    """
    if not str(device).startswith("cpu"):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.use_deterministic_algorithms(True, warn_only=warn_only)


@contextmanager
def deterministic(device="cpu", num_threads: int | None = None):
    """Deterministic algorithms (and optionally ``num_threads`` threads) inside a ``with``.

    On the CPU deterministic algorithms are enforced; on a GPU they are requested with
    ``warn_only=True`` (an operation without a deterministic kernel warns instead of failing)
    and ``CUBLAS_WORKSPACE_CONFIG`` is set if unset.  The previous thread count and setting
    are restored on exit.
    """
    old_threads = torch.get_num_threads()
    old_det = torch.are_deterministic_algorithms_enabled()
    old_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        if num_threads is not None:
            torch.set_num_threads(check_int("num_threads", num_threads, 1))
        enable_determinism(device, warn_only=not str(device).startswith("cpu"))
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det, warn_only=old_warn)
