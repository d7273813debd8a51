"""What the chapter reads off an attention-only run (chapter 6): head scores and emergence.

* Head scores on attention patterns: :func:`previous_token_score`,
  :func:`duplicate_token_score`, :func:`induction_score` (Olsson et al. 2022), all per head
  (:func:`head_scores` on the host, :func:`head_scores_on_device` on a GPU: one
  implementation), and which circuit a trained model built (:func:`circuit_kind`).
* The chapter's explicit criteria: the ICL-emergence window of a run's ICL loss
  (:func:`icl_emergence_window`) and whether a metric dips inside the window (:func:`find_dip`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["previous_token_score", "duplicate_token_score", "induction_score", "head_scores",
           "head_score_masks", "head_scores_on_device",
           "HEAD_SCORE_LEVEL", "CIRCUIT_KINDS", "circuit_kind", "ICL_SUCCESS_LOSS",
           "EmergenceWindow", "icl_emergence_window", "Dip", "find_dip"]


def _check_patterns(attn):
    # a copy: torch.from_numpy needs a writable array (a broadcast view is read-only) and
    # would warn otherwise
    a = np.array(attn, dtype=float)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2] or a.shape[-1] < 2:
        raise ValueError(f"attn must have shape (batch, n_heads, T, T) with T >= 2, "
                         f"got {a.shape}")
    return a


def previous_token_score(attn) -> np.ndarray:
    """Mean attention from each position ``j >= 1`` to ``j - 1``, per head.

    Parameters
    ----------
    attn : array, shape (batch, n_heads, T, T)
        Attention patterns (row ``j`` is the distribution of position ``j`` over keys).

    Returns
    -------
    ndarray, shape (n_heads,), in ``[0, 1]``
    """
    a = _check_patterns(attn)
    return _previous_token(torch.from_numpy(a)).numpy()


def _check_period(period, B, T):
    L = np.asarray(period)
    if L.shape != (B,) or not np.issubdtype(L.dtype, np.integer) or L.min() < 1 or L.max() >= T:
        raise ValueError(f"period must be an integer array of shape ({B},) with values in "
                         f"1..{T - 1}, got {period!r}")
    return L


def _score_masks(period: torch.Tensor, T: int):
    """Duplicate-token keys, induction keys and queries of sequences with periods ``period``:
    float64 tensors of shapes ``(B, T, T)``, ``(B, T, T)``, ``(B, T)`` on its device (the keys
    ``k <= j`` with ``j + offset - k`` a positive multiple of ``L_b``, offset 0 and 1, and
    the queries ``j >= L_b``)."""
    dev = period.device
    j = torch.arange(T, device=dev)[:, None]
    k = torch.arange(T, device=dev)[None, :]
    Lb = period[:, None, None]
    keys = []
    for offset in (0, 1):
        gap = (j + offset - k)[None]
        keys.append(((k <= j)[None] & (gap >= 1) & (gap % Lb == 0)).double())
    queries = (torch.arange(T, device=dev)[None, :] >= period[:, None]).double()
    return keys[0], keys[1], queries


def _previous_token(a: torch.Tensor) -> torch.Tensor:
    """Mean attention of every query ``j >= 1`` on ``j - 1``, per head (float64 ``a``)."""
    return torch.diagonal(a, offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))


def _periodic_mass(a: torch.Tensor, keys: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """Mean attention of the ``queries`` on the ``keys`` (masks of :func:`_score_masks`),
    all sequences together, per head: the one implementation of the duplicate-token and
    induction scores, on the host (:func:`duplicate_token_score`, :func:`head_scores`) and on
    the device (:func:`head_scores_on_device`)."""
    mass = torch.einsum("bhjk,bjk->bhj", a, keys)                  # (B, H, T)
    return (mass * queries[:, None, :]).sum(dim=(0, 2)) / queries.sum()


def _host_mass(attn, period, which):
    a = _check_patterns(attn)
    L = _check_period(period, a.shape[0], a.shape[-1])
    masks = _score_masks(torch.from_numpy(L.astype(np.int64)), a.shape[-1])
    return _periodic_mass(torch.from_numpy(a), masks[which], masks[2]).numpy()


def duplicate_token_score(attn, period) -> np.ndarray:
    """Attention paid to the current token's earlier occurrences, per head.

    In a sequence of period ``L`` the token at position ``j`` occurred before at every
    ``k < j`` with ``k = j (mod L)``: ``j - L``, ``j - 2L``, ...  The score is the attention
    mass of query ``j`` on those keys, averaged over all queries ``j >= L_b`` (the ones that
    have an earlier occurrence) of all sequences ``b`` together.  A perfect duplicate-token
    head (Olsson et al. 2022; book chapter 6, 'Which circuit did each model build?') scores
    1; uniform causal attention scores about ``1 / L``.  Such a head tells the query *where*
    its token appeared before, so a later head can attend one position further on
    (Q-composition): the alternative to a previous-token head (K-composition).

    Parameters
    ----------
    attn : array, shape (batch, n_heads, T, T)
        Attention patterns (row ``j``: the distribution of query ``j`` over the keys).
    period : int array, shape (batch,)
        The period ``L_b`` of each sequence, ``1 <= L_b < T``.

    Returns
    -------
    ndarray, shape (n_heads,), in ``[0, 1]``
    """
    return _host_mass(attn, period, 0)


def induction_score(attn, period) -> np.ndarray:
    """Attention paid to the right continuation's earlier occurrences, per head.

    In a sequence of period ``L`` the token that follows position ``j`` is the one at
    every earlier position ``k <= j`` with ``k = j + 1 (mod L)``: ``j - L + 1``, which
    followed the previous occurrence of the current token, and ``j - 2L + 1``, ... one
    period further back each.  The score is the attention mass of position ``j`` on
    those keys, averaged over all positions ``j >= L_b`` (from the second period on) of
    all sequences ``b`` together.  A perfect induction head (Olsson et al. 2022) scores 1.

    Parameters
    ----------
    attn : array, shape (batch, n_heads, T, T)
        Attention patterns (row ``j``: the distribution of query ``j`` over the keys).
    period : int array, shape (batch,)
        The period ``L_b`` of each sequence, ``1 <= L_b < T``.

    Returns
    -------
    ndarray, shape (n_heads,), in ``[0, 1]``
    """
    return _host_mass(attn, period, 1)


def head_scores(patterns, icl_mask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`previous_token_score`, :func:`duplicate_token_score` and
    :func:`induction_score` of every head, as host arrays.

    :func:`head_scores_on_device` on the patterns' device, copied to the host.

    Parameters
    ----------
    patterns : list of (batch, n_heads, T, T) tensors or arrays, one per layer
    icl_mask : (batch, T - 1) bool tensor from :meth:`InductionTask.sample` (it fixes the
        period of each sequence: ``L_b = 1 + #{j : not icl_mask[b, j]}``).

    Returns
    -------
    (prev, dup, ind), each of shape (n_layers, n_heads)
    """
    patterns = [torch.as_tensor(attn) for attn in patterns]
    mask = torch.as_tensor(icl_mask).to(patterns[0].device)
    prev, dup, ind = head_scores_on_device(patterns, head_score_masks(mask)).cpu().numpy()
    return prev, dup, ind


def head_score_masks(icl_mask: torch.Tensor):
    """The key and query masks of the duplicate-token and induction scores, as tensors.

    For a batch with ``icl_mask`` (:meth:`InductionTask.sample`, shape ``(B, T - 1)``) on its
    device: ``(dup_keys, ind_keys, queries)``, float64 of shapes ``(B, T, T)``, ``(B, T, T)``
    and ``(B, T)``: the keys ``k <= j`` with ``j + offset - k`` a positive multiple of the
    period ``L_b`` (offset 0: duplicate token, 1: induction) and the queries ``j >= L_b``, as
    in :func:`duplicate_token_score` and :func:`induction_score`.
    """
    return _score_masks((~icl_mask).sum(dim=1) + 1, icl_mask.shape[1] + 1)


def head_scores_on_device(patterns, masks) -> torch.Tensor:
    """Previous-token, duplicate-token and induction scores of every head, on the device.

    The same quantities as :func:`head_scores` (which calls this function), in float64 on
    the patterns' device (no copy of the patterns to the host).

    Parameters
    ----------
    patterns : list of (B, n_heads, T, T) tensors, one per layer
    masks : the output of :func:`head_score_masks` for the batch's ``icl_mask``

    Returns
    -------
    torch.Tensor, float64, shape (3, n_layers, n_heads): prev, dup, ind
    """
    dup_keys, ind_keys, queries = masks
    out = []
    for attn in patterns:
        a = attn.detach().double()
        out.append(torch.stack([_previous_token(a), _periodic_mass(a, dup_keys, queries),
                                _periodic_mass(a, ind_keys, queries)]))
    return torch.stack(out, dim=1)


#: a head "is" a previous-token / duplicate-token / induction head when its score exceeds
#: this: most of its attention goes to those keys (uniform causal attention scores 0.1-0.25)
HEAD_SCORE_LEVEL = 0.5

#: the circuits :func:`circuit_kind` tells apart
CIRCUIT_KINDS = ("previous-token + induction", "duplicate-token + induction", "both",
                 "induction only", "no induction head")


def circuit_kind(prev, dup, ind, level: float = HEAD_SCORE_LEVEL) -> str:
    """Which induction circuit a trained model built, from its final head scores.

    Parameters
    ----------
    prev, dup, ind : arrays, shape (n_layers, n_heads)
        Final previous-token, duplicate-token and induction scores (:func:`head_scores`).
    level : float
        Score above which a head counts (default :data:`HEAD_SCORE_LEVEL`).

    Returns
    -------
    str, one of :data:`CIRCUIT_KINDS`
        ``"no induction head"`` when no head's induction score exceeds ``level``; otherwise
        which helpers exist in the layers *below* the first induction head's layer: a
        previous-token head (K-composition), a duplicate-token head (Q-composition), both,
        or neither (``"induction only"``).
    """
    prev, dup, ind = (np.asarray(x, dtype=float) for x in (prev, dup, ind))
    if prev.ndim != 2 or prev.shape != dup.shape or prev.shape != ind.shape:
        raise ValueError(f"prev, dup and ind must have one shape (n_layers, n_heads), got "
                         f"{prev.shape}, {dup.shape}, {ind.shape}")
    level = float(level)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    layers = np.flatnonzero((ind > level).any(axis=1))
    if layers.size == 0:
        return CIRCUIT_KINDS[4]
    below = slice(0, int(layers[0]))
    has_prev = bool((prev[below] > level).any())
    has_dup = bool((dup[below] > level).any())
    return {(True, False): CIRCUIT_KINDS[0], (False, True): CIRCUIT_KINDS[1],
            (True, True): CIRCUIT_KINDS[2], (False, False): CIRCUIT_KINDS[3]}[(has_prev, has_dup)]


#: ICL loss below which we say a model does ICL: the right token gets geometric-mean
#: probability above 1/2 (guessing among the L >= 4 pattern tokens gives at most 1/4)
ICL_SUCCESS_LOSS = math.log(2.0)


@dataclass(frozen=True)
class EmergenceWindow:
    """The ICL-emergence window of one run (see :func:`icl_emergence_window`).

    ``start``, ``mid``, ``end`` are checkpoint steps (all ``None`` when ICL did not
    emerge); ``upper`` and ``lower`` are the loss levels (nats) that define them.
    """

    emerged: bool
    upper: float
    lower: float
    start: int | None
    mid: int | None
    end: int | None

    @property
    def width(self) -> int | None:
        """``end - start`` in steps (``None`` when ICL did not emerge)."""
        return None if not self.emerged else self.end - self.start


def icl_emergence_window(steps, icl_loss, upper: float, lower: float = ICL_SUCCESS_LOSS
                         ) -> EmergenceWindow:
    r"""When the ICL loss leaves its plateau: the chapter's explicit criterion.

    With ``l(t)`` the evaluation ICL loss at the checkpoints:

    * ICL **emerged** iff ``l`` falls below ``lower`` (default ``log 2``: the right token
      gets geometric-mean probability above 1/2);
    * the window ends at ``end``, the first checkpoint with ``l <= lower``, and starts at
      ``start``, the last checkpoint before ``end`` with ``l > upper`` plus one (so
      ``l <= upper`` on all of ``[start, end]``); ``mid`` is the first checkpoint in the
      window with ``l <= (upper + lower) / 2``.

    The chapter uses ``upper = InductionTask.bag_of_tokens_loss()``: the loss of guessing
    uniformly among the pattern's tokens, i.e. of knowing *which* tokens are in the
    context but not their order.  A run's plateau sits above it; induction takes the loss
    from there to below ``log 2`` within a few hundred steps.

    Returns
    -------
    EmergenceWindow
    """
    steps = np.asarray(steps)
    loss = np.asarray(icl_loss, dtype=float)
    if steps.shape != loss.shape or steps.ndim != 1 or steps.size < 2:
        raise ValueError(f"steps and icl_loss must be 1-D of the same length >= 2, got "
                         f"{steps.shape} and {loss.shape}")
    upper, lower = float(upper), float(lower)
    if not (math.isfinite(upper) and math.isfinite(lower) and 0 <= lower < upper):
        raise ValueError(f"lower and upper must satisfy 0 <= lower < upper, got "
                         f"lower={lower}, upper={upper}")
    below = np.flatnonzero(loss <= lower)
    if below.size == 0:
        return EmergenceWindow(False, upper, lower, None, None, None)
    i_end = int(below[0])
    above = np.flatnonzero(loss[:i_end] > upper)
    i_start = int(above[-1]) + 1 if above.size else 0
    i_mid = i_start + int(np.argmax(loss[i_start:i_end + 1] <= (upper + lower) / 2))
    return EmergenceWindow(True, upper, lower, int(steps[i_start]), int(steps[i_mid]),
                           int(steps[i_end]))


@dataclass(frozen=True)
class Dip:
    """Where a metric reaches its minimum after the initial transient (see :func:`find_dip`).

    ``step`` of the minimum, ``fall`` = value at the plateau step minus the minimum,
    ``rise`` = final value minus the minimum, ``in_window`` whether ``step`` lies in the
    emergence window, ``is_dip`` = ``in_window and fall > delta and rise > delta``.
    """

    step: int
    fall: float
    rise: float
    in_window: bool
    is_dip: bool


def find_dip(steps, values, window: EmergenceWindow, *, after_fraction: float = 0.05,
             delta: float = 0.1) -> Dip:
    """Does ``values`` dip in the emergence window?  The chapter's explicit test.

    The minimum is taken over the checkpoints ``t >= after_fraction * T`` (skipping the
    first steps, in which every circuit leaves its random initialisation).  It is a *dip
    in the window* when it lies in ``[window.start, window.end]`` and the metric both fell
    into it and rose out of it by more than ``delta`` (in the metric's units; effective
    ranks here), measured from the value at ``after_fraction * T`` and at the end ``T``.
    """
    steps = np.asarray(steps)
    v = np.asarray(values, dtype=float)
    if v.shape != steps.shape or v.ndim != 1 or v.size < 3:
        raise ValueError(f"steps and values must be 1-D of the same length >= 3, got "
                         f"{steps.shape} and {v.shape}")
    if not window.emerged:
        raise ValueError("window must be an emergence window of a run where ICL emerged")
    i0 = int(np.argmax(steps >= after_fraction * steps[-1]))
    im = i0 + int(np.argmin(v[i0:]))
    fall, rise = float(v[i0] - v[im]), float(v[-1] - v[im])
    inside = bool(window.start <= steps[im] <= window.end)
    return Dip(int(steps[im]), fall, rise, inside, inside and fall > delta and rise > delta)
