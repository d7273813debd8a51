"""Attention-only softmax transformers on an induction task (chapter 6).

The task (:class:`InductionTask`)
---------------------------------
Each sequence is periodic: a *pattern* of ``L`` distinct tokens drawn without replacement
from a vocabulary of ``vocab_size`` tokens, repeated until the sequence has ``seq_len``
tokens.  The period ``L`` is drawn per sequence, uniformly from
``min_period .. max_period``.  The model predicts every next token.

* Inside the first period (targets at positions ``< L``) the next token is fresh: no
  context can predict it beyond "a token not seen yet".
* From the second period on (targets at positions ``>= L``) the next token is fully
  determined by the context: find the earlier occurrence of the current token and copy
  the token that followed it.  This is the *induction* algorithm of Olsson et al. (2022),
  and the loss on these positions is the **ICL loss**.

Why this task.  A one-layer attention-only model cannot implement induction: the
attention score between the query at position ``j`` and a key at position ``k`` sees only
the token and position *at* ``k``, while induction needs the token at ``k - 1``.  With a
*fixed* period a single layer could cheat with a purely positional head (attend to
``j - L + 1``); drawing ``L`` per sequence removes that shortcut.  What remains for one
layer are context statistics: guess a token of the pattern (loss ``E[log L]``,
:meth:`InductionTask.bag_of_tokens_loss`), better one not among the last few tokens
(:meth:`InductionTask.exclusion_loss`).  A two-layer model composes a previous-token head
with an induction head (K-composition) and drives the ICL loss towards zero.  Distinct
pattern tokens make the induction answer unambiguous.

Quick-scale settings (:func:`experiment_settings`): vocabulary 16, 24 tokens, periods
4..10, ``d_model`` 32, 2 heads, attention weights initialised small (0.1 / sqrt(fan_in)),
Adam lr 1e-3, batch 32, 3000 steps, 121 checkpoints.  ``full``: vocabulary 64, 64 tokens,
periods 8..32, ``d_model`` 128, 4 heads, batch 64, 20 000 steps, 10 seeds (for a GPU).

The model (:class:`AttentionOnlyTransformer`)
---------------------------------------------
Token embedding plus positional embedding (learned or sinusoidal), ``n_layers`` causal
multi-head softmax attention layers written into the residual stream (no MLP, no
LayerNorm), and a linear unembedding.  Per head ``h`` of layer ``l`` the two circuits
(Elhage et al. 2021) are ``d_model x d_model`` matrices of rank at most ``d_head``::

    QK[l, h] = W_Q[l, h]^T W_K[l, h] / sqrt(d_head)     score(j, k) = x_j^T QK x_k
    OV[l, h] = W_O[l, h] W_V[l, h]                      output += sum_k A[j, k] OV x_k

These are what the metrics of :mod:`icllib.metrics` are applied to (book chapter 6,
'Three metrics').
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

POSITIONAL_KINDS = ("learned", "sinusoidal")
MAX_LAYERS = 4


def _check_int(name: str, value, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        rng = f">= {low}" if high is None else f"in {low}..{high}"
        raise ValueError(f"{name} must be an integer {rng}, got {value}")
    return int(value)


def _check_positive(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


# --------------------------------------------------------------------------- task


@dataclass(frozen=True)
class InductionTask:
    """Periodic sequences of distinct random tokens with a random period.

    Parameters
    ----------
    vocab_size : int
        Number of tokens, ``>= max_period`` (the pattern's tokens are distinct).
    seq_len : int
        Tokens per sequence, ``>= 2 * max_period`` so every sequence repeats its pattern
        at least once.
    min_period, max_period : int
        The period ``L`` is uniform on ``min_period .. max_period``; ``2 <= min_period
        <= max_period``.
    """

    vocab_size: int = 16
    seq_len: int = 24
    min_period: int = 4
    max_period: int = 10

    def __post_init__(self):
        _check_int("vocab_size", self.vocab_size, 2)
        _check_int("min_period", self.min_period, 2)
        _check_int("max_period", self.max_period, self.min_period)
        if self.max_period > self.vocab_size:
            raise ValueError(
                f"max_period must be <= vocab_size={self.vocab_size} (pattern tokens are "
                f"distinct), got {self.max_period}"
            )
        _check_int("seq_len", self.seq_len, 2 * self.max_period)

    def sample(self, batch_size: int, generator: torch.Generator):
        """Draw a batch.

        Returns
        -------
        tokens : LongTensor, shape (batch_size, seq_len)
        icl_mask : BoolTensor, shape (batch_size, seq_len - 1)
            ``icl_mask[b, j]`` is True when the target ``tokens[b, j + 1]`` is determined by
            the context (position ``j + 1 >= L_b``).
        """
        batch_size = _check_int("batch_size", batch_size, 1)
        V, T = self.vocab_size, self.seq_len
        perm = torch.rand(batch_size, V, generator=generator).argsort(dim=1)
        period = torch.randint(self.min_period, self.max_period + 1, (batch_size, 1),
                               generator=generator)
        pos = torch.arange(T).unsqueeze(0)
        tokens = perm.gather(1, pos % period)
        icl_mask = pos[:, 1:] >= period
        return tokens, icl_mask

    def bag_of_tokens_loss(self) -> float:
        """Mean ICL loss (nats) of the best "no induction" guess: uniform over the pattern.

        For a target at position ``t >= L`` in period ``L``, guessing uniformly over the
        ``L`` pattern tokens costs ``log L`` nats; this averages that over the positions
        and periods (an upper bound on what one layer can reach, not a lower bound).
        """
        tot, cnt = 0.0, 0
        for L in range(self.min_period, self.max_period + 1):
            n = self.seq_len - L
            tot += n * math.log(L)
            cnt += n
        return tot / cnt

    def exclusion_loss(self, m: int) -> float:
        """Mean ICL loss (nats) of guessing among the context's tokens except the last ``m``.

        Within a period the tokens are distinct, so the next token is never one of the
        last ``L - 1`` tokens, while it *is* the token ``L - 1`` steps back.  A fixed window
        that never excludes the answer therefore has ``m <= min_period - 1``; excluding the
        last ``m`` tokens (the current one included) and guessing uniformly among the other
        ``L - m`` pattern tokens costs ``log(L - m)``, averaged over targets and periods.
        No induction is needed: one attention layer can copy the context's tokens and
        suppress the recent ones.  ``m = 0`` is :meth:`bag_of_tokens_loss`.
        """
        m = _check_int("m", m, 0, self.min_period - 1)
        tot, cnt = 0.0, 0
        for L in range(self.min_period, self.max_period + 1):
            n = self.seq_len - L
            tot += n * math.log(L - m)
            cnt += n
        return tot / cnt


# --------------------------------------------------------------------------- model


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
    positional : {"learned", "sinusoidal"}
        Positional embedding added to the token embedding.
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
        _check_int("n_layers", self.n_layers, 1, MAX_LAYERS)
        _check_int("n_heads", self.n_heads, 1)
        _check_int("d_model", self.d_model, 1)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model must be a multiple of n_heads={self.n_heads}, got {self.d_model}"
            )
        _check_int("vocab_size", self.vocab_size, 2)
        _check_int("seq_len", self.seq_len, 2)
        if self.positional not in POSITIONAL_KINDS:
            raise ValueError(
                f"positional must be one of {POSITIONAL_KINDS}, got {self.positional!r}"
            )
        _check_positive("init_std", self.init_std)

    @property
    def d_head(self) -> int:
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
        if not isinstance(config, AttentionOnlyConfig):
            raise ValueError(f"config must be an AttentionOnlyConfig, got {type(config).__name__}")
        self.config = c = config
        L, H, d, e, V, T = c.n_layers, c.n_heads, c.d_model, c.d_head, c.vocab_size, c.seq_len

        def gauss(*shape, fan_in, gain=1.0):
            return nn.Parameter(torch.randn(*shape, generator=generator)
                                * (gain / math.sqrt(fan_in)))

        self.W_E = gauss(V, d, fan_in=1)
        if c.positional == "learned":
            self.W_pos = gauss(T, d, fan_in=1)
        else:
            self.register_buffer("W_pos", sinusoidal_positions(T, d))
        self.W_QKV = gauss(L, 3, H, e, d, fan_in=d, gain=c.init_std)
        self.W_O = gauss(L, H, d, e, fan_in=H * e, gain=c.init_std)
        self.W_U = gauss(d, V, fan_in=d)

    @property
    def W_Q(self):
        return self.W_QKV[:, 0]

    @property
    def W_K(self):
        return self.W_QKV[:, 1]

    @property
    def W_V(self):
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
        for l in range(c.n_layers):
            qkv = (x @ self.W_QKV[l].reshape(3 * H * e, d).T).view(B, T, 3, H, e)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)             # each (B, H, T, e)
            if return_attention:
                scores = (q @ k.transpose(-1, -2)) / math.sqrt(e)
                causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
                attn = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
                patterns.append(attn)
                z = attn @ v
            else:
                z = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            w_o = self.W_O[l].permute(1, 0, 2).reshape(d, H * e)   # heads side by side
            x = x + z.transpose(1, 2).reshape(B, T, H * e) @ w_o.T
        logits = x @ self.W_U
        return (logits, patterns) if return_attention else logits

    @torch.no_grad()
    def circuits(self) -> tuple[np.ndarray, np.ndarray]:
        """QK and OV circuits of every head, float64 arrays of shape (n_layers, n_heads, d_model, d_model).

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

    @torch.no_grad()
    def parameter_norm(self) -> float:
        """Frobenius norm of all trained parameters together."""
        return float(torch.sqrt(sum((p.double() ** 2).sum() for p in self.parameters())))


def _token_losses(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy (nats) per position, shape (batch, seq_len - 1)."""
    V = logits.shape[-1]
    return nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1),
                                       reduction="none").view(tokens.shape[0], -1)


def sequence_losses(logits: torch.Tensor, tokens: torch.Tensor, icl_mask: torch.Tensor):
    """Mean next-token cross-entropy (nats) on ICL targets and on first-period targets.

    The ICL loss averages over the targets that the context determines (``icl_mask``);
    the first-period loss over the others (fresh tokens).
    """
    ce = _token_losses(logits, tokens)
    m = icl_mask.to(ce.dtype)
    icl = (ce * m).sum() / m.sum()
    first = (ce * (1 - m)).sum() / (1 - m).sum()
    return icl, first


def _check_patterns(attn):
    a = np.asarray(attn, dtype=float)
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
    return np.diagonal(a, offset=-1, axis1=-2, axis2=-1).mean(axis=(0, 2))


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
    a = _check_patterns(attn)
    B, H, T, _ = a.shape
    L = np.asarray(period)
    if L.shape != (B,) or not np.issubdtype(L.dtype, np.integer) or L.min() < 1 or L.max() >= T:
        raise ValueError(f"period must be an integer array of shape ({B},) with values in "
                         f"1..{T - 1}, got {period!r}")
    j = np.arange(T)[:, None]
    k = np.arange(T)[None, :]
    Lb = L[:, None, None]
    keys = (k <= j) & ((j + 1 - k) % Lb == 0)                    # (B, T, T)
    queries = (np.arange(T)[None, :] >= L[:, None])              # (B, T)
    mass = np.einsum("bhjk,bjk->bhj", a, keys.astype(float))     # (B, H, T)
    return (mass * queries[:, None, :]).sum(axis=(0, 2)) / queries.sum()


def head_scores(patterns, icl_mask) -> tuple[np.ndarray, np.ndarray]:
    """:func:`previous_token_score` and :func:`induction_score` of every head.

    Parameters
    ----------
    patterns : list of (batch, n_heads, T, T) tensors, one per layer
    icl_mask : (batch, T - 1) bool tensor from :meth:`InductionTask.sample` (it fixes the
        period of each sequence: ``L_b = 1 + #{j : not icl_mask[b, j]}``).

    Returns
    -------
    (prev, ind), each of shape (n_layers, n_heads)
    """
    mask = np.asarray(icl_mask.cpu() if isinstance(icl_mask, torch.Tensor) else icl_mask)
    period = (~mask).sum(axis=1).astype(np.int64) + 1
    prev, ind = [], []
    for attn in patterns:
        a = attn.detach().double().cpu().numpy() if isinstance(attn, torch.Tensor) else attn
        prev.append(previous_token_score(a))
        ind.append(induction_score(a, period))
    return np.array(prev), np.array(ind)


def _sample_pattern_inputs(rng):
    B, H, T = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(3, 13))
    logits = rng.standard_normal((B, H, T, T)) * 2
    logits = np.where(np.tril(np.ones((T, T), bool)), logits, -np.inf)
    attn = np.exp(logits - logits.max(-1, keepdims=True))
    attn /= attn.sum(-1, keepdims=True)
    return {"attn": attn, "period": rng.integers(1, T, size=B)}


def check_induction_score(candidate, *, trials: int = 20, seed: int = 0):
    """Check ``candidate(attn, period) -> (n_heads,)`` against :func:`induction_score`.

    Random causal softmax patterns (batch 1..5, 1..3 heads, ``T`` 3..12) with random
    periods; relative tolerance ``1e-9``.  Returns :class:`icllib.exercises.CheckResult`
    (truthy when passed) and prints a verdict.
    """
    from icllib.exercises import check_function

    return check_function(candidate, induction_score, _sample_pattern_inputs, trials=trials,
                          seed=seed, rtol=1e-9, atol=1e-12, name="induction_score")


# --------------------------------------------------------------------------- training


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings.

    Parameters
    ----------
    steps : int
        Adam steps, each on a fresh batch (online learning: no sequence is seen twice).
    batch_size : int
        Sequences per step.
    lr : float
        Adam learning rate (betas 0.9, 0.999, no weight decay).
    n_checkpoints : int
        Circuits and evaluation losses are recorded at this many steps, evenly spaced
        from 0 to ``steps`` (both included).
    eval_size : int
        Size of the fixed evaluation batch on which the losses and head scores are
        measured (drawn from its own seed, the same for every run).
    """

    steps: int = 3000
    batch_size: int = 32
    lr: float = 1e-3
    n_checkpoints: int = 121
    eval_size: int = 512

    def __post_init__(self):
        _check_int("steps", self.steps, 1)
        _check_int("batch_size", self.batch_size, 1)
        _check_positive("lr", self.lr)
        _check_int("n_checkpoints", self.n_checkpoints, 2)
        _check_int("eval_size", self.eval_size, 1)


#: seed of the evaluation batch, shared by every run so that runs are compared on the same data
EVAL_SEED = 12345


@dataclass
class AttentionOnlyRun:
    """A training run: evaluation curves and checkpoints of every head's circuits.

    Attributes
    ----------
    steps : (C,) int array
        Checkpoint steps (number of Adam updates applied).
    icl_loss, first_period_loss : (C,) arrays
        Evaluation losses (nats) at the checkpoints (:func:`sequence_losses`).
    param_norm : (C,) array
        Frobenius norm of all parameters.
    qk, ov : (C, n_layers, n_heads, d_model, d_model) float64 arrays
        The circuits (:meth:`AttentionOnlyTransformer.circuits`).
    prev_token_score, induction_score : (C, n_layers, n_heads) arrays
        :func:`head_scores` on the evaluation batch.
    train_loss : (steps,) array
        Training loss (all targets) of each step's batch, before the update.
    seconds : float
        Wall time of the training loop (including the checkpoints).
    """

    model_config: AttentionOnlyConfig
    task: InductionTask
    train_config: TrainConfig
    seed: int
    steps: np.ndarray
    icl_loss: np.ndarray
    first_period_loss: np.ndarray
    param_norm: np.ndarray
    qk: np.ndarray
    ov: np.ndarray
    prev_token_score: np.ndarray
    induction_score: np.ndarray
    train_loss: np.ndarray
    seconds: float = 0.0
    model: AttentionOnlyTransformer | None = field(default=None, repr=False)

    @property
    def steps_per_second(self) -> float:
        """Adam steps per second of wall time (checkpointing included)."""
        return self.train_config.steps / self.seconds if self.seconds > 0 else float("nan")


def checkpoint_steps(steps: int, n_checkpoints: int) -> np.ndarray:
    """Evenly spaced integer steps from 0 to ``steps`` (unique, both ends included)."""
    steps = _check_int("steps", steps, 1)
    n_checkpoints = _check_int("n_checkpoints", n_checkpoints, 2)
    return np.unique(np.round(np.linspace(0, steps, n_checkpoints)).astype(int))


def resolve_device(device) -> torch.device:
    """``"cpu"`` or ``"cuda"`` / ``"cuda:N"`` (the latter only when a GPU is visible)."""
    name = str(device)
    if name != "cpu" and name != "cuda" and not name.startswith("cuda:"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={name!r} was asked for but torch sees no CUDA GPU")
    return torch.device(name)


def _check_configs(model_config, task, train_config):
    if not isinstance(model_config, AttentionOnlyConfig):
        raise ValueError(f"model_config must be an AttentionOnlyConfig, "
                         f"got {type(model_config).__name__}")
    if not isinstance(task, InductionTask):
        raise ValueError(f"task must be an InductionTask, got {type(task).__name__}")
    if not isinstance(train_config, TrainConfig):
        raise ValueError(f"train_config must be a TrainConfig, "
                         f"got {type(train_config).__name__}")
    if model_config.vocab_size != task.vocab_size:
        raise ValueError(f"model_config.vocab_size must equal task.vocab_size="
                         f"{task.vocab_size}, got {model_config.vocab_size}")
    if model_config.seq_len != task.seq_len:
        raise ValueError(f"model_config.seq_len must equal task.seq_len={task.seq_len}, "
                         f"got {model_config.seq_len}")


def train_attention_only(model_config: AttentionOnlyConfig, task: InductionTask,
                         train_config: TrainConfig, *, seed: int, device: str = "cpu",
                         progress: bool = True, keep_model: bool = False) -> AttentionOnlyRun:
    """Train an attention-only transformer on the induction task with Adam.

    Deterministic given ``seed`` on a given device and thread count: the initialisation
    and the training batches use their own ``torch.Generator`` (seeded ``seed`` and
    ``seed + 1``), the evaluation batch a fixed one (:data:`EVAL_SEED`); the global RNG is
    never touched.  For bitwise reproducibility on CPU also call
    ``torch.use_deterministic_algorithms(True)`` and ``torch.set_num_threads(1)``.

    Parameters
    ----------
    model_config, task, train_config
        Architecture, data and optimisation; ``vocab_size`` and ``seq_len`` must agree.
    seed : int
        ``>= 0``.
    device : {"cpu", "cuda"}
        ``"cuda"`` raises ValueError when no GPU is visible.
    progress : bool
        Show a tqdm progress bar.
    keep_model : bool
        Keep the trained module in the result (``run.model``).

    Returns
    -------
    AttentionOnlyRun
    """
    _check_configs(model_config, task, train_config)
    seed = _check_int("seed", seed, 0)
    dev = resolve_device(device)

    g_init = torch.Generator().manual_seed(seed)
    g_data = torch.Generator().manual_seed(seed + 1)
    g_eval = torch.Generator().manual_seed(EVAL_SEED)
    model = AttentionOnlyTransformer(model_config, g_init).to(dev)
    eval_tokens, eval_mask = task.sample(train_config.eval_size, g_eval)
    eval_tokens, eval_mask = eval_tokens.to(dev), eval_mask.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=train_config.lr)

    ck = checkpoint_steps(train_config.steps, train_config.n_checkpoints)
    C = len(ck)
    Lyr, H, d = model_config.n_layers, model_config.n_heads, model_config.d_model
    qk = np.empty((C, Lyr, H, d, d))
    ov = np.empty((C, Lyr, H, d, d))
    prev = np.empty((C, Lyr, H))
    ind = np.empty((C, Lyr, H))
    icl = np.empty(C)
    first = np.empty(C)
    pnorm = np.empty(C)
    train_loss = torch.empty(train_config.steps)

    def record(i):
        qk[i], ov[i] = model.circuits()
        pnorm[i] = model.parameter_norm()
        with torch.no_grad():
            logits, patterns = model(eval_tokens, return_attention=True)
            a, b = sequence_losses(logits, eval_tokens, eval_mask)
            prev[i], ind[i] = head_scores(patterns, eval_mask)
        icl[i], first[i] = float(a), float(b)

    from tqdm.auto import tqdm
    bar = tqdm(range(train_config.steps), desc=f"{Lyr}-layer, seed {seed}",
               disable=not progress, leave=False)
    t0 = time.perf_counter()
    record(0)
    nxt = 1
    for step in bar:
        tokens, _ = task.sample(train_config.batch_size, g_data)
        tokens = tokens.to(dev)
        loss = _token_losses(model(tokens), tokens).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        train_loss[step] = loss.detach()
        if nxt < C and ck[nxt] == step + 1:
            record(nxt)
            nxt += 1
    seconds = time.perf_counter() - t0
    if not np.all(np.isfinite(icl)):
        raise FloatingPointError(f"training diverged (non-finite ICL loss) with lr="
                                 f"{train_config.lr}; lower lr")
    return AttentionOnlyRun(model_config, task, train_config, seed, ck, icl, first, pnorm,
                            qk, ov, prev, ind, train_loss.double().numpy(), seconds,
                            model if keep_model else None)


# --------------------------------------------------------------------------- metrics


def circuit_metrics(circuits, *, ks=(1, 2, 3)) -> dict[str, np.ndarray]:
    """The chapter's metrics of one circuit type at every checkpoint, layer and head.

    Parameters
    ----------
    circuits : array, shape (C, n_layers, n_heads, d, d)
        QK or OV circuits at ``C`` checkpoints (the last one is the reference "final"
        matrix of the subspace distance).
    ks : sequence of int
        Numbers of leading singular values removed by the marginal effective rank, each
        ``>= 1`` and below the circuits' rank.

    Returns
    -------
    dict of arrays
        ``"effective_rank"`` (C, n_layers, n_heads); ``"marginal_effective_rank"``
        (C, n_layers, n_heads, len(ks)), one slice per ``k``; ``"subspace_distance"``
        (C, n_layers, n_heads) to the final circuit of the same head, without truncation
        (per-head circuits have rank ``<= d_head < d_model``, so the row space is a proper
        subspace); ``"norm"`` (C, n_layers, n_heads), the Frobenius norm.  All from
        :mod:`icllib.metrics` (book chapter 6, 'Three metrics').
    """
    from icllib.metrics import effective_rank, marginal_effective_rank, subspace_distance

    M = np.asarray(circuits, dtype=float)
    if M.ndim != 5 or M.shape[-1] != M.shape[-2]:
        raise ValueError(f"circuits must have shape (C, n_layers, n_heads, d, d), "
                         f"got {M.shape}")
    ks = tuple(_check_int("ks", k, 1) for k in ks)
    if not ks:
        raise ValueError("ks must hold at least one integer >= 1, got ()")
    C, L, H = M.shape[:3]
    out = {"effective_rank": np.empty((C, L, H)),
           "marginal_effective_rank": np.empty((C, L, H, len(ks))),
           "subspace_distance": np.empty((C, L, H)),
           "norm": np.linalg.norm(M, axis=(-2, -1))}
    for l in range(L):
        for h in range(H):
            stack = M[:, l, h]
            out["effective_rank"][:, l, h] = effective_rank(stack)
            for i, k in enumerate(ks):
                out["marginal_effective_rank"][:, l, h, i] = marginal_effective_rank(stack, k)
            out["subspace_distance"][:, l, h] = subspace_distance(stack, stack[-1])
    return out


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


def half_time(steps, values) -> int:
    """First checkpoint at which ``values`` has covered half of its change from start to end.

    That is the first ``t`` with ``|v(t) - v(T)| <= |v(0) - v(T)| / 2``.  For a subspace
    distance to the final matrix (``v(T) = 0``) it is the first time the distance is half
    its initial value.
    """
    steps = np.asarray(steps)
    v = np.asarray(values, dtype=float)
    if v.shape != steps.shape or v.ndim != 1 or v.size < 2:
        raise ValueError(f"steps and values must be 1-D of the same length >= 2, got "
                         f"{steps.shape} and {v.shape}")
    gap = np.abs(v - v[-1])
    return int(steps[np.argmax(gap <= gap[0] / 2)])


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


# --------------------------------------------------------------------------- settings


def _settings_table():
    quick = dict(
        task=InductionTask(vocab_size=16, seq_len=24, min_period=4, max_period=10),
        model=dict(n_heads=2, d_model=32, positional="learned", init_std=0.1),
        train=TrainConfig(steps=3000, batch_size=32, lr=1e-3, n_checkpoints=121,
                          eval_size=512),
        seeds=(0, 1, 2, 3, 4),
    )
    full = dict(
        task=InductionTask(vocab_size=64, seq_len=64, min_period=8, max_period=32),
        model=dict(n_heads=4, d_model=128, positional="learned", init_std=0.1),
        train=TrainConfig(steps=20_000, batch_size=64, lr=1e-3, n_checkpoints=201,
                          eval_size=1024),
        seeds=tuple(range(10)),
    )
    return {"quick": quick, "full": full}


def experiment_settings(n_layers: int, scale: str | None = None):
    """Task, architecture and optimiser of the chapter's runs with ``n_layers`` layers.

    Parameters
    ----------
    n_layers : int
        1..4.
    scale : {"quick", "full"}, optional
        Default: :func:`icllib.scale.current_scale` (the ``ICLLIB_SCALE`` variable).
        ``quick`` is sized for a 2-core CPU (a 2-layer run takes ~20 s), ``full`` for a GPU.

    Returns
    -------
    (InductionTask, AttentionOnlyConfig, TrainConfig)
    """
    from icllib.scale import SCALES, current_scale

    scale = current_scale() if scale is None else scale
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    n_layers = _check_int("n_layers", n_layers, 1, MAX_LAYERS)
    s = _settings_table()[scale]
    task = s["task"]
    model = AttentionOnlyConfig(n_layers=n_layers, vocab_size=task.vocab_size,
                                seq_len=task.seq_len, **s["model"])
    return task, model, s["train"]


def experiment_seeds(scale: str | None = None) -> tuple[int, ...]:
    """Seeds of the chapter's runs at the given scale (default: the current scale)."""
    from icllib.scale import SCALES, current_scale

    scale = current_scale() if scale is None else scale
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return _settings_table()[scale]["seeds"]


def demo_settings(n_layers: int = 2):
    """The short live run of the chapter and the tests: quick settings, lr 3e-3, 800 steps.

    Long enough for a 2-layer model to pass its ICL transition (about step 400), short
    enough to run in a few seconds on one CPU core.
    """
    task, model, _ = experiment_settings(n_layers, "quick")
    return task, model, TrainConfig(steps=800, batch_size=32, lr=3e-3, n_checkpoints=41,
                                    eval_size=512)


# --------------------------------------------------------------------------- storage


#: train losses are stored as means over bins of this many steps
TRAIN_LOSS_BIN = 10

_CURVES = ("steps", "icl_loss", "first_period_loss", "param_norm")
_PER_HEAD = ("prev_token_score", "induction_score")
_METRICS = ("effective_rank", "marginal_effective_rank", "subspace_distance", "norm")


@dataclass
class RunSummary:
    """What a data file of ``book/data/ch6`` holds: one run's curves and metrics.

    Attributes (``C`` checkpoints, ``L`` layers, ``H`` heads)
    --------------------------------------------------------
    meta : dict
        ``model_config``, ``task``, ``train_config`` (as dicts), ``seed``, ``command``
        (that regenerates the file), ``ks`` (of the marginal effective rank),
        ``seconds``, ``steps_per_second``, ``torch_version``.
    steps, icl_loss, first_period_loss, param_norm : (C,)
    train_loss : (steps / TRAIN_LOSS_BIN,) binned training loss; ``train_loss_steps``
        the centre step of each bin.
    qk, ov : dict of arrays
        ``effective_rank``, ``subspace_distance``, ``norm`` of shape (C, L, H) and
        ``marginal_effective_rank`` of shape (C, L, H, len(ks)) (see
        :func:`circuit_metrics`).
    prev_token_score, induction_score : (C, L, H)
    """

    meta: dict
    steps: np.ndarray
    icl_loss: np.ndarray
    first_period_loss: np.ndarray
    param_norm: np.ndarray
    train_loss: np.ndarray
    train_loss_steps: np.ndarray
    qk: dict
    ov: dict
    prev_token_score: np.ndarray
    induction_score: np.ndarray

    @property
    def n_layers(self) -> int:
        return int(self.meta["model_config"]["n_layers"])

    @property
    def seed(self) -> int:
        return int(self.meta["seed"])

    def induction_head(self) -> tuple[int, int]:
        """(layer, head) with the largest induction score at the end of training."""
        l, h = np.unravel_index(np.argmax(self.induction_score[-1]),
                                self.induction_score.shape[1:])
        return int(l), int(h)

    @property
    def window(self) -> EmergenceWindow:
        """:func:`icl_emergence_window` of this run's ICL loss (upper level: the task's
        bag-of-tokens loss)."""
        return icl_emergence_window(self.steps, self.icl_loss,
                                    InductionTask(**self.meta["task"]).bag_of_tokens_loss())


def summarize_run(run: AttentionOnlyRun, command: str = "", *, ks=(1, 2, 3)) -> RunSummary:
    """Reduce a run to its curves and per-head metrics (what the book ships)."""
    meta = dict(model_config=asdict(run.model_config), task=asdict(run.task),
                train_config=asdict(run.train_config), seed=int(run.seed),
                command=str(command), ks=[int(k) for k in ks], seconds=float(run.seconds),
                steps_per_second=float(run.steps_per_second),
                torch_version=torch.__version__)
    nb = len(run.train_loss) // TRAIN_LOSS_BIN
    if nb >= 1:
        tl = run.train_loss[:nb * TRAIN_LOSS_BIN].reshape(nb, TRAIN_LOSS_BIN).mean(axis=1)
        tls = np.arange(nb) * TRAIN_LOSS_BIN + (TRAIN_LOSS_BIN - 1) / 2
    else:
        tl, tls = run.train_loss.copy(), np.arange(len(run.train_loss), dtype=float)
    qk = circuit_metrics(run.qk, ks=ks)
    ov = circuit_metrics(run.ov, ks=ks)
    return RunSummary(meta, run.steps.copy(), run.icl_loss.copy(), run.first_period_loss.copy(),
                      run.param_norm.copy(), tl, tls, qk, ov, run.prev_token_score.copy(),
                      run.induction_score.copy())


def save_run_summary(summary: RunSummary, path) -> None:
    """Write a :class:`RunSummary` to a compressed ``.npz`` (float32 curves)."""
    import json

    arrays = {"meta": np.array(json.dumps(summary.meta, sort_keys=True))}
    arrays["steps"] = summary.steps.astype(np.int32)
    for name in _CURVES[1:]:
        arrays[name] = getattr(summary, name).astype(np.float32)
    arrays["train_loss"] = summary.train_loss.astype(np.float32)
    arrays["train_loss_steps"] = summary.train_loss_steps.astype(np.float32)
    for name in _PER_HEAD:
        arrays[name] = getattr(summary, name).astype(np.float32)
    for circ in ("qk", "ov"):
        for name in _METRICS:
            arrays[f"{circ}_{name}"] = getattr(summary, circ)[name].astype(np.float32)
    np.savez_compressed(path, **arrays)


def load_run_summary(path) -> RunSummary:
    """Read a file written by :func:`save_run_summary` (arrays as float64)."""
    import json

    with np.load(path, allow_pickle=False) as f:
        meta = json.loads(str(f["meta"]))
        get = lambda n: np.asarray(f[n], dtype=float)  # noqa: E731
        return RunSummary(
            meta, np.asarray(f["steps"], dtype=int), get("icl_loss"),
            get("first_period_loss"), get("param_norm"), get("train_loss"),
            get("train_loss_steps"),
            {n: get(f"qk_{n}") for n in _METRICS}, {n: get(f"ov_{n}") for n in _METRICS},
            get("prev_token_score"), get("induction_score"))


def run_file_name(n_layers: int, seed: int, prefix: str = "run") -> str:
    """File name of a shipped run: ``run_L{n_layers}_seed{seed}.npz``."""
    return f"{prefix}_L{int(n_layers)}_seed{int(seed)}.npz"


def make_command(n_layers: int, seed: int, scale: str, demo: bool = False) -> str:
    """The command line that regenerates one data file."""
    cmd = f"python scripts/make_ch6_runs.py --scale {scale} --depths {n_layers} --seeds {seed}"
    return cmd + " --demo" if demo else cmd


def make_run(n_layers: int, seed: int, scale: str | None = None, *, demo: bool = False,
             device: str = "cpu", progress: bool = True) -> RunSummary:
    """Train one of the chapter's runs and summarise it (:func:`summarize_run`).

    ``demo=True`` uses :func:`demo_settings` instead of :func:`experiment_settings`.
    On CPU, call ``torch.set_num_threads(1)`` and
    ``torch.use_deterministic_algorithms(True)`` first for runs that reproduce the shipped
    files bit for bit on the same machine.
    """
    from icllib.scale import current_scale

    scale = current_scale() if scale is None else scale
    if demo:
        task, model, train = demo_settings(n_layers)
        scale = "quick"
    else:
        task, model, train = experiment_settings(n_layers, scale)
    run = train_attention_only(model, task, train, seed=seed, device=device,
                               progress=progress)
    return summarize_run(run, make_command(n_layers, seed, scale, demo))


def load_runs(directory, depths, seeds, *, prefix: str = "run"
              ) -> dict[tuple[int, int], RunSummary]:
    """Load ``{(n_layers, seed): RunSummary}`` from the files in ``directory``.

    Raises
    ------
    FileNotFoundError
        Naming the missing files and the command that makes them
        (``scripts/make_ch6_runs.py``).
    """
    from pathlib import Path

    directory = Path(directory)
    paths = {(int(L), int(s)): directory / run_file_name(L, s, prefix)
             for L in depths for s in seeds}
    missing = [p.name for p in paths.values() if not p.exists()]
    if missing:
        raise FileNotFoundError(
            f"{len(missing)} run file(s) missing in {directory} (e.g. {missing[0]}); make "
            f"them with `python scripts/make_ch6_runs.py` (see --help; paper scale: "
            f"--scale full --device cuda, on a GPU)")
    return {key: load_run_summary(path) for key, path in paths.items()}
