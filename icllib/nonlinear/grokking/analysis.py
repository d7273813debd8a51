"""What chapter 7 reads off a grokking run: when it settles, turns and groks.

* :func:`settle_step`: from when a distance to the final matrix stays below a threshold;
* :func:`rotation_peak`: the most prominent bump of a rotation curve (how fast a subspace
  still turns, :func:`icllib.nonlinear.circuits.circuit_metrics`);
* :func:`embedding_fourier_power`: the Fourier spectrum of the number embeddings
  (Nanda et al. 2023);
* :func:`grokking_timing`: the events of one run, in steps (book chapter 7, 'The metrics').
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ...metrics import first_crossing
from .model import CIRCUIT_NAMES
from .task import check_p

__all__ = ["settle_step", "rotation_peak", "embedding_fourier_power", "grokking_timing"]


def settle_step(steps, values, threshold: float) -> float:
    """First step from which ``values`` stay ``<= threshold`` for good; NaN if never.

    Used for a distance to the final matrix: it ends at 0 by construction, so the question is
    when it comes down and stays down. NaN entries (undefined values) are ignored.
    """
    steps, values = np.asarray(steps), np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    steps, values = steps[ok], values[ok]
    above = np.flatnonzero(values > threshold)
    if above.size == 0:
        return float(steps[0]) if steps.size else float("nan")
    if above[-1] == values.size - 1:
        return float("nan")
    return float(steps[above[-1] + 1])


def rotation_peak(steps, values) -> tuple[float, float]:
    """Step and prominence of the most prominent interior local maximum of ``values``.

    Used on a ``"<name>/rotation"`` curve: it starts high (the random initialisation moves
    fast) and decays; a grokking run shows a bump on top of that decay. The bump is found
    with :func:`scipy.signal.find_peaks` (interior maxima only, so the initial decay is never
    a peak) and the one of largest prominence is returned. ``(nan, 0.0)`` if there is none.
    """
    from scipy.signal import find_peaks

    steps, values = np.asarray(steps), np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    steps, values = steps[ok], values[ok]
    peaks, props = find_peaks(values, prominence=0.0)
    if peaks.size == 0:
        return float("nan"), 0.0
    j = int(np.argmax(props["prominences"]))
    return float(steps[peaks[j]]), float(props["prominences"][j])


def embedding_fourier_power(W_E, p: int | None = None) -> np.ndarray:
    """Power of the number embeddings in each Fourier frequency (Nanda et al. 2023).

    With ``E = W_E[:p]`` (rows = the numbers ``0 .. p-1``, the "=" row dropped when present),
    take the discrete Fourier transform along the number axis,
    ``F_k = sum_a E[a] exp(-2 pi i k a / p)``, and sum ``|F_k|^2`` over the ``d_model``
    columns. Frequencies ``k`` and ``p - k`` carry the same cosine/sine pair, so they are
    combined: entry ``k`` of the result (``k = 0 .. p // 2``) is the power at frequency ``k``
    (both signs), normalised so that the entries sum to 1.

    Parameters
    ----------
    W_E : array_like, shape (p, d_model) or (p + 1, d_model)
    p : int, optional
        Modulus; default ``W_E.shape[0]``. Rows past ``p`` are ignored.

    Returns
    -------
    ndarray, shape (p // 2 + 1,)
        Non-negative, sums to 1.
    """
    E = np.asarray(W_E, dtype=float)
    if E.ndim != 2:
        raise ValueError(f"W_E must be a 2-D array (numbers x d_model), got shape {E.shape}")
    p = E.shape[0] if p is None else check_p(p)
    if E.shape[0] < p:
        raise ValueError(f"W_E must have at least p = {p} rows, got {E.shape[0]}")
    F = np.fft.fft(E[:p], axis=0)
    power = (np.abs(F) ** 2).sum(axis=1)  # (p,)
    k = np.arange(p // 2 + 1)
    combined = power[k] + np.where((k > 0) & (2 * k != p), power[(p - k) % p], 0.0)
    total = combined.sum()
    if total == 0:
        raise ValueError("W_E must not be zero on the number rows")
    return combined / total


def grokking_timing(summary, *, matrix: str = "OV", threshold: float = 0.1,
                    reference_step: int | None = None) -> dict[str, float]:
    """The events of one shipped run, in steps (NaN when an event never happens).

    * ``train_100``: first evaluation with 100% train accuracy;
    * ``test_50``, ``test_95``: first evaluation with test accuracy >= 50%, >= 95%
      (:func:`icllib.metrics.first_crossing` without interpolation: an evaluation step);
    * ``distance_settle``: :func:`settle_step` of the head-averaged
      ``"<matrix>/distance_to_<reference_step>"`` curve at ``threshold``, looked at only up
      to ``reference_step`` (default: the last checkpoint);
    * ``rotation_peak``, ``rotation_prominence``: :func:`rotation_peak` of the
      head-averaged ``"<matrix>/rotation"`` curve.

    Parameters
    ----------
    summary : RunSummary or dict
        A run file (:func:`icllib.nonlinear.grokking.runs.load_runs`, or
        :func:`~icllib.nonlinear.grokking.runs.summarize_run`).
    matrix : str
        One of :data:`CIRCUIT_NAMES`.
    threshold : float
        Level of the distance, in ``(0, 1)``.
    reference_step : int, optional
        A reference step stored in the summary.
    """
    if matrix not in CIRCUIT_NAMES:
        raise ValueError(f"matrix must be one of {CIRCUIT_NAMES}, got {matrix!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not 0 < threshold < 1:
        raise ValueError(f"threshold must be a number in (0, 1), got {threshold!r}")
    ck = np.asarray(summary["checkpoint_steps"])
    S = int(ck[-1]) if reference_step is None else int(reference_step)
    key = f"{matrix}/distance_to_{S}"
    if key not in summary:
        stored = sorted(int(k.rsplit("_", 1)[1]) for k in summary
                        if k.startswith(f"{matrix}/distance_to_"))
        raise ValueError(f"reference_step must be one of the stored reference steps {stored}, "
                         f"got {S}")
    upto = ck <= S
    dist = np.asarray(summary[key]).mean(axis=1)
    rot_step, rot_prom = rotation_peak(ck, np.asarray(summary[f"{matrix}/rotation"]).mean(axis=1))
    ev, tr, te = summary["eval_steps"], summary["train_acc"], summary["test_acc"]
    return {
        "train_100": first_crossing(ev, tr, 1.0, interpolate=False),
        "test_50": first_crossing(ev, te, 0.5, interpolate=False),
        "test_95": first_crossing(ev, te, 0.95, interpolate=False),
        "distance_settle": settle_step(ck[upto], dist[upto], threshold),
        "rotation_peak": rot_step,
        "rotation_prominence": rot_prom,
    }
