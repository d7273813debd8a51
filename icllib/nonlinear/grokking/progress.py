r"""Progress measures of grokking after Nanda et al. (2023): restricted and excluded loss.

The generalising network of modular addition computes logits that are, as functions of the
pair ``(a, b)``, dominated by a few waves ``cos(w_k (a + b))`` and ``sin(w_k (a + b))``,
``w_k = 2 pi k / p``, at its *key frequencies* ``k``.  Nanda et al. (2023, section 5.1) follow
the circuit's formation through two ablations of the logits, which we implement as follows
(book chapter 7, 'Progress measures'):

* write the logits ``z(a, b, c)`` for every pair as a 2D discrete Fourier series in
  ``(a, b)`` (one series per output ``c``); the waves in ``a + b`` at frequency ``k`` are the
  components ``(k, k)`` and ``(-k, -k)``;
* **restricted loss**: keep only the constant and the ``a + b`` waves at the key frequencies,
  and measure the cross-entropy on *all* ``p^2`` pairs;
* **excluded loss**: remove exactly those waves (keep everything else), and measure the
  cross-entropy on the *training* pairs.

The restricted loss falls when the Fourier circuit alone starts to predict the labels; the
excluded loss rises when the network's fit of the training set starts to rest on the circuit
rather than on memorisation.  The key frequencies are read off the final logits
(:func:`key_frequencies`): the strongest ``a + b`` waves that together carry a share
:data:`KEY_SHARE` of their power.  Which set the paper counted on, and which share, are our
choices; Nanda et al. name five key frequencies at ``p = 113``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ...validation import check_array, check_real

__all__ = ["KEY_SHARE", "logit_grid", "sum_frequency_power", "key_frequencies",
           "split_logits", "cross_entropy", "progress_measures", "progress_events"]

#: the key frequencies together carry this share of the final logits' power in a + b waves
KEY_SHARE = 0.9


def logit_grid(logits, p: int) -> np.ndarray:
    """Logits of every pair as a float64 grid ``z[a, b, c]``.

    Parameters
    ----------
    logits : array, shape (p * p, p) or (T, p * p, p)
        Rows in the order of :func:`~.task.modular_dataset` (row ``a * p + b`` is ``(a, b)``).

    Returns
    -------
    ndarray, shape (p, p, p) or (T, p, p, p)
    """
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim not in (2, 3) or z.shape[-2:] != (p * p, p):
        raise ValueError(f"logits must have shape (p*p, p) or (T, p*p, p) with p = {p}, got "
                         f"{z.shape}")
    return z.reshape(*z.shape[:-2], p, p, p)


def sum_frequency_power(grid) -> np.ndarray:
    """Power of the logits in the waves of ``a + b``, per frequency ``k = 1 .. p // 2``.

    With ``F = fft2(z)`` over ``(a, b)``, the power at ``k`` is
    ``sum_c |F[k, k, c]|^2 + |F[-k, -k, c]|^2`` (one term when ``2k = p``).

    Returns
    -------
    ndarray, shape (p // 2,)
        Entry ``k - 1`` is frequency ``k``.
    """
    z = np.asarray(grid, dtype=np.float64)
    if z.ndim != 3 or len(set(z.shape)) != 1:
        raise ValueError(f"grid must have shape (p, p, p), got {z.shape}")
    p = z.shape[0]
    F = np.fft.fft2(z, axes=(0, 1))
    k = np.arange(p)                                   # the (k, k) components
    diag = (np.abs(F[k, k, :]) ** 2).sum(axis=-1)
    ks = np.arange(1, p // 2 + 1)
    return diag[ks] + np.where(2 * ks != p, diag[(p - ks) % p], 0.0)


def key_frequencies(grid, share: float = KEY_SHARE) -> np.ndarray:
    """The strongest ``a + b`` frequencies that together carry ``share`` of their power.

    Frequencies ``k = 1 .. p // 2`` ordered by :func:`sum_frequency_power`, the shortest
    prefix whose power reaches ``share`` of the total; returned sorted.
    """
    share = check_real("share", share, 0.0, 1.0, exclusive_minimum=True)
    power = sum_frequency_power(grid)
    order = np.argsort(power)[::-1]
    cumulative = np.cumsum(power[order]) / power.sum()
    n = int(np.searchsorted(cumulative, share - 1e-12)) + 1
    return np.sort(order[:n] + 1)


def split_logits(grid, keys) -> tuple[np.ndarray, np.ndarray]:
    """The restricted and the excluded logits (module docstring).

    Parameters
    ----------
    grid : array, shape (p, p, p)
        ``z[a, b, c]`` (:func:`logit_grid`).
    keys : sequence of int
        Key frequencies, each in ``1 .. p // 2``.

    Returns
    -------
    restricted, excluded : ndarrays of shape (p, p, p)
        ``restricted``: the constant plus the key ``a + b`` waves; ``excluded``: ``z`` minus
        the key waves.  ``restricted + excluded = z + constant``.
    """
    z = np.asarray(grid, dtype=np.float64)
    if z.ndim != 3 or len(set(z.shape)) != 1:
        raise ValueError(f"grid must have shape (p, p, p), got {z.shape}")
    p = z.shape[0]
    keys = np.asarray(keys, dtype=np.int64)
    if keys.ndim != 1 or keys.size == 0 or keys.min() < 1 or keys.max() > p // 2:
        raise ValueError(f"keys must be a non-empty list of frequencies in 1..{p // 2}, "
                         f"got {keys.tolist()}")
    F = np.fft.fft2(z, axes=(0, 1))
    mask = np.zeros((p, p))
    for k in keys:
        mask[k, k] = mask[(p - k) % p, (p - k) % p] = 1.0
    waves = np.fft.ifft2(F * mask[:, :, None], axes=(0, 1)).real
    constant = z.mean(axis=(0, 1), keepdims=True)
    return constant + waves, z - waves


def cross_entropy(logits, labels) -> float:
    """Mean cross-entropy (nats) of rows of ``logits`` against integer ``labels``, float64."""
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels)
    if z.ndim != 2 or y.shape != z.shape[:1]:
        raise ValueError(f"logits must have shape (n, classes) and labels (n,), got {z.shape} "
                         f"and {y.shape}")
    return float(np.mean(logsumexp(z, axis=1) - z[np.arange(y.size), y]))


def progress_measures(logits, data, keys=None, share: float = KEY_SHARE) -> dict:
    """Restricted and excluded loss at every checkpoint of a run.

    Parameters
    ----------
    logits : array, shape (T, p * p, p)
        The logits of every pair at ``T`` checkpoints.
    data : ModularDataset
        The run's data (labels and train split; :func:`~.task.modular_dataset`).
    keys : sequence of int, optional
        Key frequencies; default :func:`key_frequencies` of the last checkpoint.
    share : float
        Passed to :func:`key_frequencies`.

    Returns
    -------
    dict
        ``"restricted_loss"`` (all pairs) and ``"excluded_loss"`` (training pairs), shape
        ``(T,)``; ``"full_loss"`` (all pairs, no ablation), shape ``(T,)``;
        ``"key_frequencies"``.
    """
    p = data.p
    grids = logit_grid(check_array("logits", logits), p)
    if grids.ndim != 4:
        raise ValueError(f"logits must have shape (T, p*p, p), got {np.shape(logits)}")
    keys = key_frequencies(grids[-1], share) if keys is None else np.asarray(keys)
    labels = data.labels
    out = {"restricted_loss": np.empty(len(grids)), "excluded_loss": np.empty(len(grids)),
           "full_loss": np.empty(len(grids)), "key_frequencies": np.asarray(keys)}
    for t, z in enumerate(grids):
        restricted, excluded = split_logits(z, keys)
        out["restricted_loss"][t] = cross_entropy(restricted.reshape(p * p, p), labels)
        out["excluded_loss"][t] = cross_entropy(excluded.reshape(p * p, p)[data.train_idx],
                                                labels[data.train_idx])
        out["full_loss"][t] = cross_entropy(z.reshape(p * p, p), labels)
    return out


def progress_events(summary) -> dict[str, float]:
    """When the progress measures of a run file move (book chapter 7, 'Progress measures').

    Returns
    -------
    dict
        ``restricted_half``: the half-time of the restricted loss
        (:func:`icllib.metrics.half_way_time`, from its start to its end value: the circuit
        alone predicts the labels half as badly as at the start); ``excluded_half``: the
        first checkpoint after the excluded loss's minimum at which it has risen half-way
        from that minimum to its maximum (the fit of the training set rests half on the
        circuit); ``excluded_peak``: the step of its maximum.  NaN for a file without
        progress measures.
    """
    from ...metrics import half_way_time

    if "progress/restricted_loss" not in summary:
        return dict.fromkeys(("restricted_half", "excluded_half", "excluded_peak"),
                             float("nan"))
    ck = np.asarray(summary["checkpoint_steps"])
    restricted = np.asarray(summary["progress/restricted_loss"], dtype=float)
    excluded = np.asarray(summary["progress/excluded_loss"], dtype=float)
    i_min = int(np.argmin(excluded))
    i_max = i_min + int(np.argmax(excluded[i_min:]))
    level = excluded[i_min] + (excluded[i_max] - excluded[i_min]) / 2
    i_half = i_min + int(np.argmax(excluded[i_min:] >= level))
    return {"restricted_half": float(half_way_time(ck, restricted)),
            "excluded_half": float(ck[i_half]), "excluded_peak": float(ck[i_max])}
