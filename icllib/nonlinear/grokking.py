"""Grokking in modular arithmetic, after Nanda et al. (2023) (book chapter 7).

The task: for a modulus ``p >= 2`` and an operation ``op``, the input is the three
tokens ``(a, b, "=")`` with ``a, b`` in ``0 .. p-1`` and the "=" token numbered ``p``; the
label is ``a op b mod p``. All ``p**2`` pairs exist once; a seeded random fraction of them
is the training set and the rest the test set.

The model is the one-layer transformer of Nanda et al.: token and position embeddings,
``n_heads`` softmax attention heads, a ReLU MLP, an unembedding, no LayerNorm, no attention
biases. It is trained full-batch with AdamW and weight decay. Along the way we record train
and test loss and accuracy, the total weight norm, and checkpoints of

* ``"OV"``: the per-head OV circuits ``W_O^h W_V^h`` (``d_model x d_model``, rank
  ``<= d_head``), stacked as ``(n_heads, d_model, d_model)``;
* ``"QK"``: the per-head QK circuits ``W_Q^{h T} W_K^h`` (same shapes);
* ``"W_E"`` (``(p + 1) x d_model``), ``"W_in"`` (``d_mlp x d_model``),
  ``"W_out"`` (``d_model x d_mlp``) and ``"W_U"`` (``d_model x p``).

Only the "=" position's output is read, and there is a single layer, so the forward pass
computes attention from that position only, the keys and values once per possible
(position, token) pair, and the MLP at that position only: the same function (and the same
gradients) as running every position through a causal transformer and reading the last one
(tests/test_grokking.py checks this), at about half the cost on a CPU.

Chapter 7 of the book uses everything here; ``scripts/make_ch7_runs.py`` makes its shipped runs.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace
from numbers import Integral, Real

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "OPERATIONS",
    "CIRCUIT_NAMES",
    "ModularDataset",
    "modular_dataset",
    "GrokkingConfig",
    "ModularTransformer",
    "GrokkingRun",
    "train_grokking",
    "quick_config",
    "full_config",
    "circuit_metrics",
    "first_crossing",
    "settle_step",
    "rotation_peak",
    "embedding_fourier_power",
    "summarize_run",
    "save_summary",
    "load_summary",
    "grokking_timing",
    "load_shipped_runs",
    "REPRODUCTION_TOLERANCES",
    "reproduction_gaps",
    "check_reproduces",
]

OPERATIONS = {
    "add": lambda a, b, p: (a + b) % p,
    "sub": lambda a, b, p: (a - b) % p,
    "mul": lambda a, b, p: (a * b) % p,
}
"""The supported operations ``a op b mod p``."""

CIRCUIT_NAMES = ("OV", "QK", "W_E", "W_in", "W_out", "W_U")
"""The matrices checkpointed by :func:`train_grokking` (see the module docstring)."""


# ----------------------------------------------------------------------------- checks
def _check_p(p) -> int:
    if isinstance(p, bool) or not isinstance(p, Integral) or p < 2:
        raise ValueError(f"p must be an integer >= 2, got {p!r}")
    return int(p)


def _check_train_frac(train_frac) -> float:
    if isinstance(train_frac, bool) or not isinstance(train_frac, Real) or not (
        0.0 < float(train_frac) < 1.0
    ):
        raise ValueError(f"train_frac must be a number in the open interval (0, 1), got {train_frac!r}")
    return float(train_frac)


def _check_op(op) -> str:
    if op not in OPERATIONS:
        raise ValueError(f"op must be one of {sorted(OPERATIONS)}, got {op!r}")
    return op


def _check_int(name, value, minimum) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_nonneg(name, value, strict=False) -> float:
    bad = isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value))
    if not bad:
        bad = float(value) <= 0 if strict else float(value) < 0
    if bad:
        rel = "> 0" if strict else ">= 0"
        raise ValueError(f"{name} must be a finite number {rel}, got {value!r}")
    return float(value)


# ----------------------------------------------------------------------------- data
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


def modular_dataset(p: int, op: str = "add", train_frac: float = 0.3, seed: int = 0) -> ModularDataset:
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
    p = _check_p(p)
    op = _check_op(op)
    train_frac = _check_train_frac(train_frac)
    seed = _check_int("seed", seed, 0)
    a, b = np.divmod(np.arange(p * p, dtype=np.int64), p)
    inputs = np.stack([a, b, np.full_like(a, p)], axis=1)
    labels = OPERATIONS[op](a, b, p).astype(np.int64)
    n_train = min(max(int(round(train_frac * p * p)), 1), p * p - 1)
    perm = np.random.default_rng(seed).permutation(p * p)
    train_idx = np.sort(perm[:n_train])
    test_idx = np.sort(perm[n_train:])
    return ModularDataset(p, op, train_frac, seed, inputs, labels, train_idx, test_idx)


# ----------------------------------------------------------------------------- config
@dataclass(frozen=True)
class GrokkingConfig:
    """Settings of one grokking run.

    ``seed`` sets both the train/test split (:func:`modular_dataset`) and the weight
    initialisation (a ``torch.Generator`` seeded with it). ``n_steps`` full-batch AdamW steps
    are taken; losses and accuracies are recorded every ``eval_every`` steps, checkpoints of
    the circuits every ``checkpoint_every`` steps (both also at step 0 and at ``n_steps``).
    The defaults are the reference setting of Nanda et al. (2023) (book chapter 7).
    """

    p: int = 113
    op: str = "add"
    train_frac: float = 0.3
    d_model: int = 128
    n_heads: int = 4
    d_mlp: int = 512
    lr: float = 1e-3
    weight_decay: float = 1.0
    betas: tuple = (0.9, 0.98)
    n_steps: int = 25_000
    eval_every: int = 100
    checkpoint_every: int = 500
    seed: int = 0

    def __post_init__(self):
        _check_p(self.p)
        _check_op(self.op)
        _check_train_frac(self.train_frac)
        _check_int("d_model", self.d_model, 1)
        _check_int("n_heads", self.n_heads, 1)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be a multiple of n_heads, got d_model={self.d_model}, n_heads={self.n_heads}"
            )
        _check_int("d_mlp", self.d_mlp, 1)
        _check_nonneg("lr", self.lr, strict=True)
        _check_nonneg("weight_decay", self.weight_decay)
        if len(self.betas) != 2 or not all(isinstance(x, Real) and 0 <= x < 1 for x in self.betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas!r}")
        _check_int("n_steps", self.n_steps, 1)
        _check_int("eval_every", self.eval_every, 1)
        _check_int("checkpoint_every", self.checkpoint_every, 1)
        _check_int("seed", self.seed, 0)
        object.__setattr__(self, "betas", (float(self.betas[0]), float(self.betas[1])))

    @property
    def d_head(self) -> int:
        """Width of one head, ``d_model // n_heads``."""
        return self.d_model // self.n_heads


def quick_config(**overrides) -> GrokkingConfig:
    """The book's quick setting: groks within about two minutes on one CPU core.

    ``p = 59``, ``a + b``, 40% of the pairs for training, ``d_model = 64``, 4 heads,
    MLP width 256, AdamW lr 3e-3, weight decay 1.0, betas (0.9, 0.98), 5000 steps, evaluated
    every 10 and checkpointed every 50 steps. Chosen by trial: the training set is memorised
    within ~100 steps and the test accuracy passes 95% after 2400-3200 steps (seeds 0-2);
    5000 steps took 64 s (78 steps/s) on one core of the 2-core machine with the other core
    busy, 133 s when it was shared more heavily. Keyword arguments
    override single fields.
    """
    base = GrokkingConfig(p=59, op="add", train_frac=0.4, d_model=64, n_heads=4, d_mlp=256,
                          lr=3e-3, weight_decay=1.0, betas=(0.9, 0.98), n_steps=5000,
                          eval_every=10, checkpoint_every=50, seed=0)
    return replace(base, **overrides)


def full_config(**overrides) -> GrokkingConfig:
    """The reference setting of Nanda et al. (2023) (book chapter 7), for a GPU."""
    base = GrokkingConfig(n_steps=25_000, eval_every=50, checkpoint_every=250)
    return replace(base, **overrides)


# ----------------------------------------------------------------------------- model
class ModularTransformer(nn.Module):
    """One-layer transformer without LayerNorm (Nanda et al. 2023), read at the "=" token.

    Parameters (shapes): ``W_E (p+1, d_model)``, ``W_pos (3, d_model)``,
    ``W_Q, W_K, W_V (n_heads, d_head, d_model)``, ``W_O (d_model, n_heads*d_head)``,
    ``W_in (d_mlp, d_model)``, ``b_in (d_mlp)``, ``W_out (d_model, d_mlp)``,
    ``b_out (d_model)``, ``W_U (d_model, p)``. Initialised as Nanda et al.: Gaussian with
    standard deviation ``1/sqrt(d_model)`` (``1/sqrt(p)`` for ``W_U``), biases zero.
    """

    def __init__(self, p: int, d_model: int, n_heads: int, d_mlp: int, generator: torch.Generator):
        super().__init__()
        d_head = d_model // n_heads
        self.p, self.d_model, self.n_heads, self.d_head, self.d_mlp = p, d_model, n_heads, d_head, d_mlp

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
        attn = torch.softmax((q * k_b).sum(-1) / math.sqrt(dh), dim=1)  # (B, 3, h) over positions
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

    @torch.no_grad()
    def weight_norm(self) -> float:
        """Euclidean norm of all parameters together, ``sqrt(sum ||theta||^2)``."""
        return float(torch.sqrt(sum((w.double() ** 2).sum() for w in self.parameters())))


# ----------------------------------------------------------------------------- training
@dataclass
class GrokkingRun:
    """What :func:`train_grokking` records.

    ``eval_steps`` index ``train_loss, test_loss, train_acc, test_acc, weight_norm``;
    ``checkpoint_steps`` index the leading axis of every array in ``checkpoints``.
    ``wall_time_s`` is the training loop's wall time (evaluations included),
    ``steps_per_s = n_steps / wall_time_s``.
    """

    config: GrokkingConfig
    eval_steps: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray
    train_acc: np.ndarray
    test_acc: np.ndarray
    weight_norm: np.ndarray
    checkpoint_steps: np.ndarray
    checkpoints: dict = field(repr=False)
    wall_time_s: float = 0.0
    steps_per_s: float = 0.0
    model: ModularTransformer | None = field(default=None, repr=False)
    device: str = "cpu"


def _loss(logits, labels):
    # float64 log-softmax: in float32 the loss of a memorised training set underflows and the
    # gradients become noisy ("slingshots"); Nanda et al. do the same.
    return F.cross_entropy(logits.double(), labels)


def train_grokking(config: GrokkingConfig, *, progress: bool = True, num_threads: int | None = None,
                   device: str = "cpu", keep_model: bool = True) -> GrokkingRun:
    """Train the one-layer transformer on modular arithmetic, full-batch AdamW.

    Parameters
    ----------
    config : GrokkingConfig
        All settings, seed included.
    progress : bool
        Show a tqdm progress bar with the current train and test accuracy.
    num_threads : int or None
        If given, ``torch.set_num_threads(num_threads)`` for the run (restored afterwards).
    device : str
        ``"cpu"`` (default, deterministic) or e.g. ``"cuda"``.
    keep_model : bool
        Return the trained module in ``run.model``.

    Returns
    -------
    GrokkingRun

    Notes
    -----
    On the CPU a run is deterministic for a given config: the generator for the
    initialisation is seeded with ``config.seed`` and deterministic algorithms are enforced
    for the duration of the call (the previous setting is restored). On a GPU they are
    requested with ``warn_only=True`` (and ``CUBLAS_WORKSPACE_CONFIG`` is set if unset), so an
    operation without a deterministic kernel warns instead of failing. The loss is
    the mean cross-entropy over the training pairs (book chapter 7, 'The task and the model').
    """
    if not isinstance(config, GrokkingConfig):
        raise ValueError(f"config must be a GrokkingConfig, got {type(config).__name__}")
    from tqdm.auto import tqdm

    c = config
    data = modular_dataset(c.p, c.op, c.train_frac, c.seed)
    old_threads = torch.get_num_threads()
    old_det = torch.are_deterministic_algorithms_enabled()
    old_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        if num_threads is not None:
            torch.set_num_threads(_check_int("num_threads", num_threads, 1))
        if str(device).startswith("cpu"):
            torch.use_deterministic_algorithms(True)
        else:
            import os

            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True, warn_only=True)
        gen = torch.Generator().manual_seed(c.seed)
        model = ModularTransformer(c.p, c.d_model, c.n_heads, c.d_mlp, gen).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay, betas=c.betas)
        inputs = torch.as_tensor(data.inputs, device=device)
        labels = torch.as_tensor(data.labels, device=device)
        tr = torch.as_tensor(data.train_idx, device=device)
        te = torch.as_tensor(data.test_idx, device=device)
        x_tr, y_tr = inputs[tr], labels[tr]

        rec = {k: [] for k in ("step", "train_loss", "test_loss", "train_acc", "test_acc", "weight_norm")}
        ck_steps, ck = [], {k: [] for k in CIRCUIT_NAMES}

        def evaluate(step):
            with torch.no_grad():
                logits = model(inputs)
                ltr, lte = logits[tr], logits[te]
                rec["step"].append(step)
                rec["train_loss"].append(float(_loss(ltr, y_tr)))
                rec["test_loss"].append(float(_loss(lte, labels[te])))
                rec["train_acc"].append(float((ltr.argmax(-1) == y_tr).double().mean()))
                rec["test_acc"].append(float((lte.argmax(-1) == labels[te]).double().mean()))
                rec["weight_norm"].append(model.weight_norm())

        def checkpoint(step):
            ck_steps.append(step)
            for k, v in model.circuits().items():
                ck[k].append(v)

        bar = tqdm(total=c.n_steps, disable=not progress, desc=f"grokking p={c.p} seed={c.seed}",
                   mininterval=0.5)
        t0 = time.perf_counter()
        evaluate(0)
        checkpoint(0)
        for step in range(1, c.n_steps + 1):
            opt.zero_grad(set_to_none=True)
            loss = _loss(model(x_tr), y_tr)
            loss.backward()
            opt.step()
            if step % c.eval_every == 0 or step == c.n_steps:
                evaluate(step)
                if progress:
                    bar.set_postfix(train=f"{rec['train_acc'][-1]:.3f}", test=f"{rec['test_acc'][-1]:.3f}",
                                    refresh=False)
            if step % c.checkpoint_every == 0 or step == c.n_steps:
                checkpoint(step)
            bar.update(1)
        wall = time.perf_counter() - t0
        bar.close()
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det, warn_only=old_warn)

    arr = {k: np.asarray(v, dtype=np.int64 if k == "step" else np.float64) for k, v in rec.items()}
    return GrokkingRun(
        config=c, eval_steps=arr["step"], train_loss=arr["train_loss"], test_loss=arr["test_loss"],
        train_acc=arr["train_acc"], test_acc=arr["test_acc"], weight_norm=arr["weight_norm"],
        checkpoint_steps=np.asarray(ck_steps, dtype=np.int64),
        checkpoints={k: np.stack(v) for k, v in ck.items()},
        wall_time_s=wall, steps_per_s=c.n_steps / wall,
        model=model.cpu() if keep_model else None, device=str(device),
    )


# ----------------------------------------------------------------------------- analysis
def _per_head(M: np.ndarray) -> np.ndarray:
    """A checkpoint stack as ``(T, H, m, n)``: per-head circuits keep their head axis, a
    single matrix gets ``H = 1``."""
    M = np.asarray(M, dtype=np.float64)
    return M if M.ndim == 4 else M[:, None]


def circuit_metrics(checkpoint_steps, checkpoints, *, rank: int, reference_steps=None,
                    lag: int = 2) -> dict[str, np.ndarray]:
    """Effective rank, norm and subspace distances of every checkpointed matrix.

    Uses :func:`icllib.metrics.effective_rank` and :func:`icllib.metrics.subspace_distance`
    (book chapter 7, 'The metrics'). For every matrix ``M`` (every head separately for
    ``"OV"`` and
    ``"QK"``) and every checkpoint ``t``:

    * ``"<name>/effective_rank"``: ``EffRank(M(t))``;
    * ``"<name>/norm"``: ``||M(t)||_F``;
    * ``"<name>/distance_to_<S>"``: ``dist(M(t), M(S))`` for each ``S`` in
      ``reference_steps`` (default: the last checkpoint), the fraction of ``M(S)`` outside
      the top-``rank`` row space of ``M(t)``. Only ``M(t)`` is truncated, so at ``t = S``
      the value is the share of ``M(S)`` outside its own top-``rank`` directions: 0 for the
      per-head circuits (rank ``<= d_head``), a positive floor for the other matrices;
    * ``"<name>/rotation"``: ``dist(M(t), M(t + lag))``, between checkpoints ``lag`` apart
      (``NaN`` for the last ``lag`` checkpoints): how fast the subspace still moves, a
      quantity that needs no final matrix.

    Every array has shape ``(T, H)`` (``H`` = heads, or 1).

    Parameters
    ----------
    checkpoint_steps : array of int, shape (T,)
    checkpoints : dict of name -> array (T, m, n) or (T, H, m, n)
    rank : int
        Truncation rank of ``M(t)`` in the subspace distance. For the per-head circuits,
        whose rank is at most ``d_head``, use ``rank = d_head``: the checkpoints are float32,
        so their rounding noise would otherwise count as extra (tiny) directions and make
        every distance zero.
    reference_steps : sequence of int, optional
        Checkpoint steps used as ``M(S)``.
    lag : int
        Checkpoint lag of the rotation, ``>= 1``.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):  # many small SVDs: one thread is fastest
        return _circuit_metrics(checkpoint_steps, checkpoints, rank, reference_steps, lag)


def _circuit_metrics(checkpoint_steps, checkpoints, rank, reference_steps, lag):
    from icllib.metrics import effective_rank, subspace_distance

    rank = _check_int("rank", rank, 1)
    steps = np.asarray(checkpoint_steps)
    T = steps.size
    lag = _check_int("lag", lag, 1)
    if T <= lag:
        raise ValueError(f"need more than lag = {lag} checkpoints, got {T}")
    if reference_steps is None:
        reference_steps = [int(steps[-1])]
    ref_index = {}
    for S in reference_steps:
        hits = np.flatnonzero(steps == S)
        if hits.size == 0:
            raise ValueError(f"reference_steps must be checkpoint steps; {S!r} is not one")
        ref_index[int(S)] = int(hits[0])
    out = {}
    for name, stack in checkpoints.items():
        M = _per_head(stack)
        if M.shape[0] != T:
            raise ValueError(f"checkpoints[{name!r}] has {M.shape[0]} entries, expected {T}")
        r = min(rank, *M.shape[-2:])
        H = M.shape[1]
        out[f"{name}/effective_rank"] = np.stack([effective_rank(M[:, h]) for h in range(H)], axis=1)
        out[f"{name}/norm"] = np.linalg.norm(M, axis=(-2, -1))
        for S, i in ref_index.items():
            out[f"{name}/distance_to_{S}"] = np.stack(
                [subspace_distance(M[:, h], M[i, h], rank=r) for h in range(H)], axis=1)
        rot = np.full((T, H), np.nan)
        for t in range(T - lag):
            for h in range(H):
                rot[t, h] = subspace_distance(M[t, h], M[t + lag, h], rank=r)
        out[f"{name}/rotation"] = rot
    return out


def first_crossing(steps, values, level: float, *, above: bool = True) -> float:
    """First step at which ``values >= level`` (``above=True``) or ``<= level``; NaN if never."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=float)
    hit = np.flatnonzero(values >= level if above else values <= level)
    return float(steps[hit[0]]) if hit.size else float("nan")


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
    p = E.shape[0] if p is None else _check_p(p)
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


# ----------------------------------------------------------------------------- shipped runs
def summarize_run(run: GrokkingRun, *, reference_steps=None, lag: int = 2, rank: int | None = None,
                  command: str = "", top_frequencies: int = 5) -> dict[str, np.ndarray]:
    """Everything a chapter needs from a run, small enough to ship (no full checkpoints).

    Returns a flat dict of arrays: the curves (``eval_steps, train_loss, test_loss,
    train_acc, test_acc, weight_norm``), ``checkpoint_steps``, the output of
    :func:`circuit_metrics` (``rank`` defaults to ``d_head``), ``fourier_top_share`` (the
    share of the embedding's Fourier power in its ``top_frequencies`` strongest frequencies,
    at each checkpoint), the final number embeddings ``W_E_final`` (``p x d_model``), and
    ``meta``: a JSON string with the config, the command that regenerates the run, the wall
    time and steps per second, the torch version and the device.
    """
    import json

    c = run.config
    rank = c.d_head if rank is None else _check_int("rank", rank, 1)
    metrics = circuit_metrics(run.checkpoint_steps, run.checkpoints, rank=rank,
                              reference_steps=reference_steps, lag=lag)
    W_E = run.checkpoints["W_E"]
    share = np.array([np.sort(embedding_fourier_power(W, c.p))[::-1][:top_frequencies].sum() for W in W_E])
    meta = dict(config=asdict(c), command=command, wall_time_s=run.wall_time_s,
                steps_per_s=run.steps_per_s, torch=torch.__version__, device=run.device,
                metric_rank=rank, lag=lag, top_frequencies=top_frequencies)
    out = {
        "meta": np.array(json.dumps(meta)),
        "eval_steps": run.eval_steps.astype(np.int32),
        "checkpoint_steps": run.checkpoint_steps.astype(np.int32),
        "fourier_top_share": share.astype(np.float32),
        "W_E_final": W_E[-1, : c.p].astype(np.float32),
    }
    for k in ("train_loss", "test_loss", "train_acc", "test_acc", "weight_norm"):
        out[k] = getattr(run, k).astype(np.float32)
    out.update({k: v.astype(np.float32) for k, v in metrics.items()})
    return out


def save_summary(path, summary: dict) -> None:
    """Write a :func:`summarize_run` dict as a compressed ``.npz``."""
    np.savez_compressed(path, **summary)


def load_summary(path) -> dict:
    """Read a summary written by :func:`save_summary`; ``meta`` comes back as a dict."""
    import json

    with np.load(path, allow_pickle=False) as z:
        out = {k: z[k] for k in z.files}
    out["meta"] = json.loads(str(out["meta"]))
    return out


def grokking_timing(summary: dict, *, matrix: str = "OV", threshold: float = 0.1,
                    reference_step: int | None = None) -> dict[str, float]:
    """The events of one shipped run, in steps (NaN when an event never happens).

    * ``train_100``: first evaluation with 100% train accuracy;
    * ``test_50``, ``test_95``: first evaluation with test accuracy >= 50%, >= 95%;
    * ``distance_settle``: :func:`settle_step` of the head-averaged
      ``"<matrix>/distance_to_<reference_step>"`` curve at ``threshold``, looked at only up
      to ``reference_step`` (default: the last checkpoint);
    * ``rotation_peak``, ``rotation_prominence``: :func:`rotation_peak` of the
      head-averaged ``"<matrix>/rotation"`` curve.

    Parameters
    ----------
    summary : dict
        As returned by :func:`load_summary` (or :func:`summarize_run`).
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
        stored = sorted(int(k.rsplit("_", 1)[1]) for k in summary if k.startswith(f"{matrix}/distance_to_"))
        raise ValueError(f"reference_step must be one of the stored reference steps {stored}, got {S}")
    upto = ck <= S
    dist = np.asarray(summary[key]).mean(axis=1)
    rot_step, rot_prom = rotation_peak(ck, np.asarray(summary[f"{matrix}/rotation"]).mean(axis=1))
    ev, tr, te = summary["eval_steps"], summary["train_acc"], summary["test_acc"]
    return {
        "train_100": first_crossing(ev, tr, 1.0),
        "test_50": first_crossing(ev, te, 0.5),
        "test_95": first_crossing(ev, te, 0.95),
        "distance_settle": settle_step(ck[upto], dist[upto], threshold),
        "rotation_peak": rot_step,
        "rotation_prominence": rot_prom,
    }


def load_shipped_runs(directory) -> dict[tuple[float, int], dict]:
    """Every ``wd<weight decay>_seed<seed>.npz`` in ``directory``, keyed by (weight decay, seed).

    Raises
    ------
    ValueError
        If there is none (the message says how to generate them).
    """
    from pathlib import Path

    directory = Path(directory)
    runs = {}
    for f in sorted(directory.glob("wd*_seed*.npz")):
        s = load_summary(f)
        cfg = s["meta"]["config"]
        runs[(float(cfg["weight_decay"]), int(cfg["seed"]))] = s
    if not runs:
        raise ValueError(f"no runs in {directory}; generate them with "
                         f"`python scripts/make_ch7_runs.py --out {directory}` (for the full scale: "
                         f"`ICLLIB_SCALE=full python scripts/make_ch7_runs.py --device cuda`)")
    return runs


# ------------------------------------------------------------------------ reproduction
REPRODUCTION_TOLERANCES = {
    "early_rtol": 2e-3,
    "early_steps": 30,
    "event_steps": 1.0,
    "final_weight_norm_rtol": 1e-2,
    "final_accuracy_atol": 0.03,
}
"""What a regenerated start of a run must share with the file it regenerates.

Float32 AdamW training is chaotic: on another CPU (other ATen, oneDNN/MKL or OpenBLAS kernels)
the rounding differs in the last bits and the difference grows about 3-10x every 10 steps, so
whole curves cannot be compared. Measured over five kernel settings (ATen default and AVX2,
oneDNN/MKL AVX2 and SSE4, OpenBLAS and numpy baseline kernels) x 3 seeds, quick setting,
weight decay 1, 400 steps, the largest differences to the native run were:

- losses and weight norm over the first 30 steps: 5e-4 relative (tolerance ``early_rtol``);
- the steps where the train loss first drops below 1 and the train accuracy first passes 50 %
  (interpolated): 0.2 steps (tolerance ``event_steps``; seeds differ by 1-4 steps);
- weight norm at steps 150 and 300: 0.4 % (tolerance ``final_weight_norm_rtol``; seeds differ
  by 1-4 %);
- train and test accuracy at steps 150 and 300: 0.010 (tolerance ``final_accuracy_atol``;
  seeds differ by 0.1-0.24 in test accuracy).

Each tolerance is 2.5-5x the largest cross-kernel difference. On the machine that made a file
the regenerated run is bitwise identical.
"""


def _events(steps, train_loss, train_acc) -> np.ndarray:
    from icllib.metrics import first_crossing as crossing

    return np.array([crossing(steps, train_loss, 1.0, below=True), crossing(steps, train_acc, 0.5)])


def reproduction_gaps(run: GrokkingRun, summary: dict) -> dict:
    """How far a regenerated start of a run is from the shipped ``summary`` of the same config.

    Compares what is stable across CPUs (:data:`REPRODUCTION_TOLERANCES`): the curves over the
    first ``early_steps`` steps, two event steps of memorisation, and the weight norm and
    accuracies at the run's last evaluation.

    Returns
    -------
    dict
        ``early`` (largest relative difference of train/test loss and weight norm over the
        early steps), ``events`` (largest difference of the event steps, in steps),
        ``final_weight_norm`` (relative), ``final_accuracy`` (absolute, train and test).
    """
    n = run.eval_steps.size
    if n < 2 or not np.array_equal(summary["eval_steps"][:n], run.eval_steps):
        raise ValueError("run.eval_steps must be the first evaluation steps of the summary's run")
    early = run.eval_steps <= REPRODUCTION_TOLERANCES["early_steps"]
    gaps = {"early": max(float(np.max(np.abs(summary[k][:n][early] - getattr(run, k)[early])
                                      / np.abs(summary[k][:n][early])))
                         for k in ("train_loss", "test_loss", "weight_norm"))}
    ours = _events(run.eval_steps, run.train_loss, run.train_acc)
    theirs = _events(run.eval_steps, summary["train_loss"][:n], summary["train_acc"][:n])
    if not (np.all(np.isfinite(ours)) and np.all(np.isfinite(theirs))):
        raise ValueError("the run is too short to memorise: regenerate at least 150 steps")
    gaps["events"] = float(np.max(np.abs(ours - theirs)))
    gaps["final_weight_norm"] = float(abs(summary["weight_norm"][n - 1] / run.weight_norm[-1] - 1))
    gaps["final_accuracy"] = float(max(abs(summary[k][n - 1] - getattr(run, k)[-1])
                                       for k in ("train_acc", "test_acc")))
    return gaps


def check_reproduces(run: GrokkingRun, summary: dict) -> dict:
    """Raise AssertionError unless ``run`` regenerates the start of ``summary`` within
    :data:`REPRODUCTION_TOLERANCES`; return the gaps."""
    tol = REPRODUCTION_TOLERANCES
    gaps = reproduction_gaps(run, summary)
    limits = {"early": tol["early_rtol"], "events": tol["event_steps"],
              "final_weight_norm": tol["final_weight_norm_rtol"],
              "final_accuracy": tol["final_accuracy_atol"]}
    bad = {k: (round(gaps[k], 6), limits[k]) for k in limits if not gaps[k] <= limits[k]}
    if bad:
        raise AssertionError(f"the regenerated run differs from the shipped file beyond the "
                             f"cross-CPU tolerances (gap, limit): {bad}")
    return gaps
