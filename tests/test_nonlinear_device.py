"""icllib.nonlinear.device: the determinism switch of both non-linear experiments."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

from icllib.nonlinear.device import deterministic, enable_determinism  # noqa: E402


def test_determinism_switch_sets_the_cublas_workspace(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = torch.are_deterministic_algorithms_enabled()
    try:
        enable_determinism("cpu")
        assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
        enable_determinism("cuda")
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    finally:
        torch.use_deterministic_algorithms(before)
    threads = torch.get_num_threads()
    with deterministic("cpu", num_threads=1):
        assert torch.are_deterministic_algorithms_enabled() and torch.get_num_threads() == 1
    assert torch.are_deterministic_algorithms_enabled() == before
    assert torch.get_num_threads() == threads
