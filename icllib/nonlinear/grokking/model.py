"""The one-layer transformer of Nanda et al. (2023) for chapter 7, read at the "=" token.

Token and position embeddings, ``n_heads`` softmax attention heads, a ReLU MLP, an
unembedding, no LayerNorm, no attention biases.  Its checkpointed matrices
(:data:`CIRCUIT_NAMES`, :meth:`ModularTransformer.circuits`):

* ``"OV"``: the per-head OV circuits ``W_O^h W_V^h`` (``d_model x d_model``, rank
  ``<= d_head``), stacked as ``(n_heads, d_model, d_model)``;
* ``"QK"``: the per-head QK circuits ``W_Q^{h T} W_K^h`` (same shapes);
* ``"W_E"`` (``(p + 1) x d_model``), ``"W_in"`` (``d_mlp x d_model``),
  ``"W_out"`` (``d_model x d_mlp``) and ``"W_U"`` (``d_model x p``).

Only the "=" position's output is read, and there is a single layer, so the forward pass
computes attention from that position only, the keys and values once per possible
(position, token) pair, and the MLP at that position only: the same function (and the same
gradients) as running every position through a causal transformer and reading the last one
(tests/test_nonlinear_grokking.py checks this), at about half the cost on a CPU.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ...validation import check_instance, check_int

__all__ = ["CIRCUIT_NAMES", "ModularTransformer"]

CIRCUIT_NAMES = ("OV", "QK", "W_E", "W_in", "W_out", "W_U")
"""The matrices checkpointed by :func:`train_grokking` (see the module docstring)."""


class ModularTransformer(nn.Module):
    """One-layer transformer without LayerNorm (Nanda et al. 2023), read at the "=" token.

    Parameters (shapes): ``W_E (p+1, d_model)``, ``W_pos (3, d_model)``,
    ``W_Q, W_K, W_V (n_heads, d_head, d_model)``, ``W_O (d_model, n_heads*d_head)``,
    ``W_in (d_mlp, d_model)``, ``b_in (d_mlp)``, ``W_out (d_model, d_mlp)``,
    ``b_out (d_model)``, ``W_U (d_model, p)``. Initialised as Nanda et al.: Gaussian with
    standard deviation ``1/sqrt(d_model)`` (``1/sqrt(p)`` for ``W_U``), biases zero.

    Raises
    ------
    ValueError
        If ``p < 2``, ``d_model``, ``n_heads`` or ``d_mlp < 1``, or ``d_model`` is not a
        multiple of ``n_heads`` (each head has ``d_head = d_model / n_heads`` dimensions).
    TypeError
        If a size is not an integer or ``generator`` is not a ``torch.Generator``.
    """

    def __init__(self, p: int, d_model: int, n_heads: int, d_mlp: int,
                 generator: torch.Generator):
        super().__init__()
        p = check_int("p", p, 2)
        d_model, n_heads = check_int("d_model", d_model, 1), check_int("n_heads", n_heads, 1)
        d_mlp = check_int("d_mlp", d_mlp, 1)
        if d_model % n_heads:
            raise ValueError(f"d_model must be a multiple of n_heads = {n_heads} (each head has "
                             f"d_model / n_heads dimensions), got d_model = {d_model}")
        check_instance("generator", generator, torch.Generator, "a torch.Generator")
        d_head = d_model // n_heads
        self.p, self.d_model, self.n_heads = p, d_model, n_heads
        self.d_head, self.d_mlp = d_head, d_mlp

        def gauss(*shape, scale):
            return nn.Parameter(torch.randn(*shape, generator=generator) * scale)

        s = 1.0 / math.sqrt(d_model)
        self.W_E = gauss(p + 1, d_model, scale=s)
        self.W_pos = gauss(3, d_model, scale=s)
        self.W_Q = gauss(n_heads, d_head, d_model, scale=s)
        self.W_K = gauss(n_heads, d_head, d_model, scale=s)
        self.W_V = gauss(n_heads, d_head, d_model, scale=s)
        self.W_O = gauss(d_model, n_heads * d_head, scale=s)
        self.W_in = gauss(d_mlp, d_model, scale=s)
        self.b_in = nn.Parameter(torch.zeros(d_mlp))
        self.W_out = gauss(d_model, d_mlp, scale=s)
        self.b_out = nn.Parameter(torch.zeros(d_model))
        self.W_U = gauss(d_model, p, scale=1.0 / math.sqrt(p))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, p)`` at the "=" position for ``tokens`` of shape ``(batch, 3)``.

        The residual stream at position ``s`` before attention is ``W_E[t] + W_pos[s]`` and
        depends only on the pair ``(s, t)``, so keys and values are computed once for the
        ``3 (p + 1)`` possible pairs and gathered per example: the same function (and
        gradients) as a causal one-layer transformer read at its last position.
        """
        if tokens.ndim != 2 or tokens.shape[1] != 3:
            raise ValueError(f"tokens must have shape (batch, 3), got {tuple(tokens.shape)}")
        n_tok, d, h, dh = self.p + 1, self.d_model, self.n_heads, self.d_head
        table = (self.W_E.unsqueeze(0) + self.W_pos.unsqueeze(1)).reshape(3 * n_tok, d)
        k = (table @ self.W_K.reshape(h * dh, d).T).reshape(3 * n_tok, h, dh)
        v = (table @ self.W_V.reshape(h * dh, d).T).reshape(3 * n_tok, h, dh)
        idx = tokens + torch.arange(3, device=tokens.device) * n_tok  # row of (position, token)
        x_last = table.index_select(0, idx[:, 2])  # (B, d): residual stream at "="
        q = (x_last @ self.W_Q.reshape(h * dh, d).T).reshape(-1, 1, h, dh)
        k_b = k.index_select(0, idx.reshape(-1)).reshape(-1, 3, h, dh)
        v_b = v.index_select(0, idx.reshape(-1)).reshape(-1, 3, h, dh)
        # (B, 3, h): attention over the three positions
        attn = torch.softmax((q * k_b).sum(-1) / math.sqrt(dh), dim=1)
        z = (attn.unsqueeze(-1) * v_b).sum(1).reshape(tokens.shape[0], h * dh)
        resid = x_last + z @ self.W_O.T
        hidden = torch.relu(resid @ self.W_in.T + self.b_in)
        resid = resid + hidden @ self.W_out.T + self.b_out
        return resid @ self.W_U

    @torch.no_grad()
    def circuits(self) -> dict[str, np.ndarray]:
        """The checkpointed matrices (float32 numpy copies), named as :data:`CIRCUIT_NAMES`."""
        h, dh = self.n_heads, self.d_head
        W_O = self.W_O.reshape(self.d_model, h, dh).permute(1, 0, 2)  # (h, d, dh)
        out = {
            "OV": W_O @ self.W_V,  # (h, d, d)
            "QK": self.W_Q.transpose(1, 2) @ self.W_K,  # (h, d, d)
            "W_E": self.W_E,
            "W_in": self.W_in,
            "W_out": self.W_out,
            "W_U": self.W_U,
        }
        return {k: v.detach().to("cpu", torch.float32).numpy().copy() for k, v in out.items()}
