"""Attention-only softmax transformers (chapter 6).

Token embedding plus positional embedding (learned or sinusoidal), ``n_layers`` causal
multi-head softmax attention layers written into the residual stream (no MLP, no
LayerNorm), and a linear unembedding.  With ``positional="relative"`` nothing positional
enters the residual stream: each head instead adds a learned bias ``b[l, h, j - k]`` to the
score of query ``j`` and key ``k`` (a relative-position bias, as in T5 and ALiBi, without
buckets), so position can steer where a head looks but can never be *copied* by a head
into the stream.  Per head ``h`` of layer ``l`` the two circuits
(Elhage et al. 2021) are ``d_model x d_model`` matrices of rank at most ``d_head``::

    QK[l, h] = W_Q[l, h]^T W_K[l, h] / sqrt(d_head)     score(j, k) = x_j^T QK x_k
    OV[l, h] = W_O[l, h] W_V[l, h]                      output += sum_k A[j, k] OV x_k

These are what :func:`icllib.nonlinear.circuits.circuit_metrics` is applied to (book
chapter 6, 'Three metrics').
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ...validation import check_choice, check_instance, check_int, check_positive

__all__ = ["POSITIONAL_KINDS", "MAX_LAYERS", "AttentionOnlyConfig", "sinusoidal_positions",
           "AttentionOnlyTransformer"]

POSITIONAL_KINDS = ("learned", "sinusoidal", "relative")
MAX_LAYERS = 4


@dataclass(frozen=True)
class AttentionOnlyConfig:
    """Architecture of an attention-only transformer.

    Parameters
    ----------
    n_layers : int
        Attention layers, 1..4.
    n_heads : int
        Heads per layer, ``>= 1``.
    d_model : int
        Residual-stream width, a multiple of ``n_heads``.
    vocab_size, seq_len : int
        Must match the task.
    positional : {"learned", "sinusoidal", "relative"}
        Positional embedding added to the token embedding, or (``"relative"``) none and a
        learned per-head score bias for each offset ``j - k`` instead, starting at zero.
    init_std : float
        Standard deviation of the Gaussian initialisation of the attention weights
        ``W_Q, W_K, W_V, W_O``, in units of ``1/sqrt(fan_in)``.  Embeddings are drawn
        with standard deviation 1 and the unembedding with ``1/sqrt(d_model)``.  A small
        ``init_std`` starts the circuits near zero, so that what training writes into them
        dominates what the initialisation put there (the small-initialisation regime of
        the linear model).
    """

    n_layers: int = 2
    n_heads: int = 2
    d_model: int = 32
    vocab_size: int = 16
    seq_len: int = 24
    positional: str = "learned"
    init_std: float = 1.0

    def __post_init__(self):
        check_int("n_layers", self.n_layers, 1, MAX_LAYERS)
        check_int("n_heads", self.n_heads, 1)
        check_int("d_model", self.d_model, 1)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be a multiple of n_heads={self.n_heads}, got {self.d_model}"
            )
        check_int("vocab_size", self.vocab_size, 2)
        check_int("seq_len", self.seq_len, 2)
        check_choice("positional", self.positional, POSITIONAL_KINDS)
        check_positive("init_std", self.init_std)

    @property
    def d_head(self) -> int:
        """Width of one head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads


def sinusoidal_positions(seq_len: int, d_model: int) -> torch.Tensor:
    """Fixed sinusoidal positional embedding (Vaswani et al. 2017), shape (seq_len, d_model)."""
    pos = torch.arange(seq_len, dtype=torch.float32).unsqueeze(1)
    i = torch.arange(d_model, dtype=torch.float32)
    freq = torch.exp(-math.log(10_000.0) * (2 * (i // 2)) / d_model)
    ang = pos * freq
    return torch.where(i % 2 == 0, torch.sin(ang), torch.cos(ang))


class AttentionOnlyTransformer(nn.Module):
    """Causal attention-only transformer; see the module docstring.

    The query, key and value weights of every layer are one parameter ``W_QKV`` of shape
    ``(n_layers, 3, n_heads, d_head, d_model)`` (views ``W_Q``, ``W_K``, ``W_V``); ``W_O``
    has shape ``(n_layers, n_heads, d_model, d_head)``.  Initialisation uses the given
    ``torch.Generator`` only (no global RNG).
    """

    def __init__(self, config: AttentionOnlyConfig, generator: torch.Generator):
        super().__init__()
        check_instance("config", config, AttentionOnlyConfig, "an AttentionOnlyConfig")
        self.config = c = config
        L, H, d, e, V, T = c.n_layers, c.n_heads, c.d_model, c.d_head, c.vocab_size, c.seq_len

        def gauss(*shape, fan_in, gain=1.0):
            return nn.Parameter(torch.randn(*shape, generator=generator)
                                * (gain / math.sqrt(fan_in)))

        self.W_E = gauss(V, d, fan_in=1)
        if c.positional == "learned":
            self.W_pos = gauss(T, d, fan_in=1)
        elif c.positional == "sinusoidal":
            self.register_buffer("W_pos", sinusoidal_positions(T, d))
        else:  # relative: no positions in the stream, a score bias per (layer, head, offset)
            self.register_buffer("W_pos", torch.zeros(T, d))
            self.W_rel = nn.Parameter(torch.zeros(L, H, T))
        self.W_QKV = gauss(L, 3, H, e, d, fan_in=d, gain=c.init_std)
        self.W_O = gauss(L, H, d, e, fan_in=H * e, gain=c.init_std)
        self.W_U = gauss(d, V, fan_in=d)

    @property
    def W_Q(self):
        """``W_Q[l, h]`` of shape (d_head, d_model), a view of ``W_QKV``."""
        return self.W_QKV[:, 0]

    @property
    def W_K(self):
        """``W_K[l, h]`` of shape (d_head, d_model), a view of ``W_QKV``."""
        return self.W_QKV[:, 1]

    @property
    def W_V(self):
        """``W_V[l, h]`` of shape (d_head, d_model), a view of ``W_QKV``."""
        return self.W_QKV[:, 2]

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        """Logits of shape (batch, seq, vocab).

        With ``return_attention=True`` also the attention patterns, a list (one per layer)
        of tensors of shape (batch, n_heads, seq, seq).
        """
        c = self.config
        B, T = tokens.shape
        if T > c.seq_len:
            raise ValueError(f"tokens has {T} positions, more than seq_len={c.seq_len}")
        H, e, d = c.n_heads, c.d_head, c.d_model
        x = self.W_E[tokens] + self.W_pos[:T]
        patterns = []
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if c.positional == "relative":
            idx = torch.arange(T, device=x.device)
            offset = (idx[:, None] - idx[None, :]).clamp(min=0)   # j - k on and below the diagonal
        for l in range(c.n_layers):
            qkv = (x @ self.W_QKV[l].reshape(3 * H * e, d).T).view(B, T, 3, H, e)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)             # each (B, H, T, e)
            bias = None
            if c.positional == "relative":                   # (H, T, T), -inf above the diagonal
                bias = self.W_rel[l][:, offset].masked_fill(~causal, float("-inf"))
            if return_attention:
                scores = (q @ k.transpose(-1, -2)) / math.sqrt(e)
                if bias is not None:
                    scores = scores + bias
                attn = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
                patterns.append(attn)
                z = attn @ v
            elif bias is not None:
                z = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            else:
                z = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            w_o = self.W_O[l].permute(1, 0, 2).reshape(d, H * e)   # heads side by side
            x = x + z.transpose(1, 2).reshape(B, T, H * e) @ w_o.T
        logits = x @ self.W_U
        return (logits, patterns) if return_attention else logits

    @torch.no_grad()
    def circuits(self) -> tuple[np.ndarray, np.ndarray]:
        """QK and OV circuits of every head, float64, shape (n_layers, n_heads, d_model, d_model).

        ``QK = W_Q^T W_K / sqrt(d_head)`` (so that ``score = x_q^T QK x_k``) and
        ``OV = W_O W_V``; both have rank at most ``d_head``.  The products are formed in
        float64 so that the ``d_model - d_head`` zero singular values are zero to float64
        round-off, which the rank cut-off of :mod:`icllib.metrics` expects.
        """
        W_Q, W_K = self.W_Q.double(), self.W_K.double()
        W_V, W_O = self.W_V.double(), self.W_O.double()
        qk = torch.einsum("lhed,lhef->lhdf", W_Q, W_K) / math.sqrt(self.config.d_head)
        ov = torch.einsum("lhde,lhef->lhdf", W_O, W_V)
        return qk.cpu().numpy(), ov.cpu().numpy()

