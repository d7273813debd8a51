"""The modular-arithmetic task of chapter 7 (after Nanda et al. 2023).

For a modulus ``p >= 2`` and an operation ``op``, the input is the three tokens
``(a, b, "=")`` with ``a, b`` in ``0 .. p-1`` and the "=" token numbered ``p``; the label is
``a op b mod p``.  All ``p**2`` pairs exist once; a seeded random fraction of them is the
training set and the rest the test set (book chapter 7, 'The task and the model').
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np

from ...validation import check_int

__all__ = ["OPERATIONS", "check_p", "check_op", "check_train_frac", "ModularDataset",
           "modular_dataset", "with_random_labels"]

OPERATIONS = {
    "add": lambda a, b, p: (a + b) % p,
    "sub": lambda a, b, p: (a - b) % p,
    "mul": lambda a, b, p: (a * b) % p,
}
"""The supported operations ``a op b mod p``."""


def check_p(p) -> int:
    """The modulus: an integer ``>= 2`` (ValueError naming ``p`` otherwise)."""
    return check_int("p", p, 2)


def check_train_frac(train_frac) -> float:
    """The train fraction: a number in the open interval (0, 1)."""
    if isinstance(train_frac, bool) or not isinstance(train_frac, Real) or not (
        0.0 < float(train_frac) < 1.0
    ):
        raise ValueError(f"train_frac must be a number in the open interval (0, 1), "
                         f"got {train_frac!r}")
    return float(train_frac)


def check_op(op) -> str:
    """One of :data:`OPERATIONS`."""
    if op not in OPERATIONS:
        raise ValueError(f"op must be one of {sorted(OPERATIONS)}, got {op!r}")
    return op


@dataclass(frozen=True)
class ModularDataset:
    """All ``p**2`` examples of ``a op b mod p`` and a train/test split.

    Attributes
    ----------
    p, op : int, str
        Modulus and operation.
    inputs : ndarray of int64, shape (p*p, 3)
        Rows ``(a, b, p)``; token ``p`` is "=". Row ``a * p + b`` holds the pair ``(a, b)``.
    labels : ndarray of int64, shape (p*p,)
        ``a op b mod p``.
    train_idx, test_idx : ndarray of int64
        Sorted, disjoint row indices whose union is every row.
    """

    p: int
    op: str
    train_frac: float
    seed: int
    inputs: np.ndarray
    labels: np.ndarray
    train_idx: np.ndarray
    test_idx: np.ndarray


def modular_dataset(p: int, op: str = "add", train_frac: float = 0.3,
                    seed: int = 0) -> ModularDataset:
    """Every pair ``(a, b)`` once, labelled ``a op b mod p``, split at random by ``seed``.

    The number of training pairs is ``round(train_frac * p**2)``, kept between 1 and
    ``p**2 - 1`` so that neither side is empty. The split is a permutation drawn from
    ``numpy.random.default_rng(seed)``, so it is the same for the same ``seed`` on every
    machine.

    Raises
    ------
    ValueError
        If ``p`` is not an integer >= 2, ``train_frac`` is outside (0, 1), ``op`` is not
        one of :data:`OPERATIONS`, or ``seed`` is not an integer >= 0.
    """
    p = check_p(p)
    op = check_op(op)
    train_frac = check_train_frac(train_frac)
    seed = check_int("seed", seed, 0)
    a, b = np.divmod(np.arange(p * p, dtype=np.int64), p)
    inputs = np.stack([a, b, np.full_like(a, p)], axis=1)
    labels = OPERATIONS[op](a, b, p).astype(np.int64)
    n_train = min(max(int(round(train_frac * p * p)), 1), p * p - 1)
    perm = np.random.default_rng(seed).permutation(p * p)
    train_idx = np.sort(perm[:n_train])
    test_idx = np.sort(perm[n_train:])
    return ModularDataset(p, op, train_frac, seed, inputs, labels, train_idx, test_idx)



def with_random_labels(data: ModularDataset, seed: int) -> ModularDataset:
    """The same inputs and split with every label replaced by an independent uniform draw.

    The negative control of book chapter 7: each of the ``p**2`` labels is drawn
    independently and uniformly from ``0 .. p-1`` by ``numpy.random.default_rng([seed,
    1])``.  A test label is then independent of everything a network trained on the
    training pairs sees, so *any* such network's expected test accuracy is exactly ``1/p``
    at every step: it cannot generalise, however long it trains.
    """
    seed = check_int("seed", seed, 0)
    labels = np.random.default_rng([seed, 1]).integers(0, data.p, size=data.labels.shape)
    return ModularDataset(data.p, data.op, data.train_frac, data.seed, data.inputs,
                          labels.astype(np.int64), data.train_idx, data.test_idx)
