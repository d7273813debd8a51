r"""The metrics of a trained network's matrices over training, for both experiments.

One function, :func:`circuit_metrics`, applies the book's three metrics (book chapter 6,
'Three metrics'; :mod:`icllib.metrics`) to a stack of checkpointed matrices, for every head at
once; one function, :func:`parameter_norm`, is the norm of a network's parameters.  Chapter 6
uses them on the QK and OV circuits of attention-only transformers, chapter 7 on the circuits
and weight matrices of the grokking transformer.
"""

from __future__ import annotations

import numpy as np

from ..metrics import effective_rank, marginal_effective_rank, subspace_distance
from ..validation import check_choice, check_int

__all__ = ["circuit_metrics", "parameter_norm", "parameters_norm", "RANKS", "FINAL_RANK_RTOL",
           "float32_rtol", "final_rank", "truncated_metrics"]


def parameters_norm(tensors, *, batch_dims: int = 0):
    """Frobenius norm of several tensors together, as a float64 tensor on their device.

    ``sqrt(sum_theta ||theta||_F^2)``; with ``batch_dims = 1`` every tensor carries a leading
    seed axis (:mod:`icllib.nonlinear.batched`) and the result has one norm per seed. Stays on
    the device, so a training loop can record it every step without a copy to the host.
    """
    import torch

    if batch_dims not in (0, 1):
        raise ValueError(f"batch_dims must be 0 or 1, got {batch_dims!r}")
    if batch_dims:
        return torch.sqrt(sum((t.double() ** 2).flatten(1).sum(1) for t in tensors))
    return torch.sqrt(sum((t.double() ** 2).sum() for t in tensors))


def parameter_norm(module) -> float:
    """Frobenius norm of all parameters of a ``torch.nn.Module`` together.

    ``sqrt(sum_theta ||theta||_F^2)``, accumulated in float64 (book chapters 6 and 7: the
    parameter norm beside the loss curves); :func:`parameters_norm` as a float.
    """
    import torch

    with torch.no_grad():
        return float(parameters_norm(module.parameters()))


def circuit_metrics(stack, *, rank: int | None = None, reference: int = -1, ks=(),
                    lag: int | None = None, rtol: float | None = None) -> dict[str, np.ndarray]:
    r"""Effective rank, norm and subspace distances of a stack of checkpointed matrices.

    For every checkpoint ``t`` and every matrix ``M`` of the stack (e.g. every layer and head
    of a circuit), with the definitions of book chapter 6, 'Three metrics':

    * ``"effective_rank"``: ``EffRank(M(t))`` (:func:`icllib.metrics.effective_rank`);
    * ``"norm"``: ``||M(t)||_F``;
    * ``"subspace_distance"``: ``dist(M(t), M(S))`` to the checkpoint ``S = reference``
      (default: the last one), the share of ``M(S)`` outside the top-``rank`` row space of
      ``M(t)`` (:func:`icllib.metrics.subspace_distance`; only ``M(t)`` is truncated);
    * ``"marginal_effective_rank"`` (only when ``ks`` is given): the effective rank after
      removing the ``k`` leading singular values, one slice per ``k`` on a last axis;
    * ``"rotation"`` (only when ``lag`` is given): ``dist(M(t), M(t + lag))``, how fast the
      subspace still turns (``NaN`` for the last ``lag`` checkpoints).

    The matrices are taken in float64, so the rank cut-off is float64's unless ``rtol`` is
    given.

    Parameters
    ----------
    stack : array_like, shape (T, ..., m, n)
        ``T`` checkpoints of one matrix, or of several (the middle axes: layers, heads).
    rank : int, optional
        Truncation rank of ``M(t)`` in the distances, ``1 <= rank <= min(m, n)``; ``None``
        keeps every direction with a non-zero singular value.  Float32 checkpoints of a
        rank-``d_head`` circuit need ``rank = d_head``: their rounding noise would otherwise
        count as extra directions and make every distance about 0.
    reference : int
        Index (into the checkpoints) of the reference ``M(S)``.
    ks : sequence of int
        Leading singular values removed by the marginal effective rank, each ``>= 1``.
    lag : int, optional
        Checkpoint lag of the rotation, ``>= 1``.
    rtol : float, optional
        Relative cut-off of ``M(t)`` in the distances and the rotation: singular values
        ``<= rtol * sigma_1(M(t))`` never count (:func:`icllib.metrics.subspace_distance`);
        ``None``: float64's.  Chapter 7's truncation-rank levels
        (:func:`icllib.nonlinear.grokking.factors.truncated_metrics`) use float32's.

    Returns
    -------
    dict of ndarray
        Each of shape ``stack.shape[:-2]``; ``"marginal_effective_rank"`` has an extra last
        axis of length ``len(ks)``.
    """
    from threadpoolctl import threadpool_limits

    M = np.asarray(stack, dtype=np.float64)
    if M.ndim < 3:
        raise ValueError(f"stack must have shape (T, ..., m, n), got {M.shape}")
    T = M.shape[0]
    ks = tuple(check_int("ks", k, 1) for k in ks)
    if rank is not None:
        rank = check_int("rank", rank, 1)
    reference = check_int("reference", reference, -T, T - 1)
    if lag is not None:
        lag = check_int("lag", lag, 1)
        if T <= lag:
            raise ValueError(f"need more than lag = {lag} checkpoints, got {T}")
    lead = M.shape[1:-2]
    flat = M.reshape(T, -1, *M.shape[-2:])                         # (T, K, m, n)
    r = None if rank is None else min(rank, *M.shape[-2:])
    K = flat.shape[1]
    out = {"effective_rank": np.empty((T, K)), "norm": np.linalg.norm(flat, axis=(-2, -1)),
           "subspace_distance": np.empty((T, K))}
    if ks:
        out["marginal_effective_rank"] = np.empty((T, K, len(ks)))
    if lag is not None:
        out["rotation"] = np.full((T, K), np.nan)
    with threadpool_limits(limits=1, user_api="blas"):    # many small SVDs: one thread is fastest
        for j in range(K):
            m = flat[:, j]
            out["effective_rank"][:, j] = effective_rank(m)
            out["subspace_distance"][:, j] = subspace_distance(m, m[reference], rank=r,
                                                               rtol=rtol)
            for i, k in enumerate(ks):
                out["marginal_effective_rank"][:, j, i] = marginal_effective_rank(m, k)
            if lag is not None:
                for t in range(T - lag):
                    out["rotation"][t, j] = subspace_distance(m[t], m[t + lag], rank=r,
                                                              rtol=rtol)
    return {name: v.reshape(T, *lead, *v.shape[2:]) for name, v in out.items()}


# ------------------------------------------------------------------ truncation levels
#: the truncation-rank levels of a subspace distance (book chapters 6 and 7): ``"final"``,
#: r = the numerical rank of the reference M(T) at :data:`FINAL_RANK_RTOL` (per matrix);
#: ``"d_head"``, r = d_head; ``"none"``, every direction above float32 rounding
#: (:func:`float32_rtol`)
RANKS = ("final", "d_head", "none")
#: relative cut of the "final" numerical rank: singular values below 1 % of the largest
FINAL_RANK_RTOL = 1e-2


def float32_rtol(shape) -> float:
    """``max(m, n) * eps(float32)``: below this relative size a singular value of a stored
    float32 ``m x n`` matrix is rounding noise (numpy's ``matrix_rank`` convention)."""
    return float(max(shape[-2:]) * np.finfo(np.float32).eps)


def final_rank(M, rtol: float = FINAL_RANK_RTOL) -> int:
    """Number of singular values of ``M`` above ``rtol`` times the largest (at least 1)."""
    sv = np.linalg.svd(np.asarray(M, dtype=np.float64), compute_uv=False)
    return max(1, int(np.count_nonzero(sv > rtol * sv[0])))


def truncated_metrics(stack, rank: str, d_head: int, *, reference: int = -1,
                      lag: int | None = None) -> dict[str, np.ndarray]:
    """Distance to a reference checkpoint and rotation at one truncation-rank level.

    The level only chooses each matrix's truncation rank ``r`` and singular-value cut-off;
    the distances and rotations are those of :func:`circuit_metrics` with that ``rank`` and
    ``rtol`` (one call per distinct ``r``).  Chapter 6 applies it to the per-layer QK views,
    chapter 7 to every checkpointed matrix.

    Parameters
    ----------
    stack : array_like, shape (T, K, m, n)
        ``T`` checkpoints of ``K`` matrices (heads; ``K = 1`` for a weight matrix).
    rank : {"final", "d_head", "none"}
        The level (:data:`RANKS`).  ``"d_head"`` truncates to ``min(d_head, m, n)``
        directions with float64's cut-off, exactly
        :func:`~icllib.nonlinear.circuits.circuit_metrics` with ``rank = d_head``;
        ``"final"`` and ``"none"`` use the float32 cut-off :func:`float32_rtol`.
    d_head : int
    reference : int
        Checkpoint index of ``M(S)``.
    lag : int, optional
        Checkpoint lag of the rotation ``dist(M(t), M(t + lag))``.

    Returns
    -------
    dict
        ``"distance"`` and (with ``lag``) ``"rotation"``, shape ``(T, K)`` (rotation NaN for
        the last ``lag`` checkpoints); ``"rank"``, shape ``(K,)``: the ``r`` used (for
        ``"none"``: the float32 numerical rank of ``M(S)``, for information).
    """
    M = np.asarray(stack, dtype=np.float64)
    if M.ndim != 4:
        raise ValueError(f"stack must have shape (T, K, m, n), got {M.shape}")
    rank = check_choice("rank", rank, RANKS)
    d_head = check_int("d_head", d_head, 1)
    T, K = M.shape[:2]
    reference = check_int("reference", reference, -T, T - 1)
    if lag is not None:
        lag = check_int("lag", lag, 1, T - 1)
    tol32 = float32_rtol(M.shape)
    refs = M[reference]
    if rank == "final":
        ranks, rtol = [final_rank(ref) for ref in refs], tol32
    elif rank == "d_head":
        ranks, rtol = [min(d_head, *M.shape[-2:])] * K, None
    else:
        ranks, rtol = [None] * K, tol32
    out = {"distance": np.empty((T, K)),
           "rank": np.array([final_rank(ref, tol32) if r is None else r
                             for r, ref in zip(ranks, refs)], dtype=np.int64)}
    if lag is not None:
        out["rotation"] = np.full((T, K), np.nan)
    for r in dict.fromkeys(ranks):                 # the heads that share one r, in one call
        heads = [k for k in range(K) if ranks[k] == r]
        m = circuit_metrics(M[:, heads], rank=r, reference=reference, lag=lag, rtol=rtol)
        out["distance"][:, heads] = m["subspace_distance"]
        if lag is not None:
            out["rotation"][:, heads] = m["rotation"]
    return out


