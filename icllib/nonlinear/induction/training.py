"""Training the attention-only transformers of chapter 6, and the chapter's settings.

Adam on fresh batches of the induction task (online learning), with the circuits, losses and
head scores recorded at evenly spaced checkpoints (:func:`train_attention_only`).  The sizes
of the chapter's runs are read through :func:`icllib.scale.pick` (:func:`experiment_settings`):

* ``quick``: vocabulary 16, 24 tokens, periods 4..10, ``d_model`` 32, 2 heads, attention
  weights initialised small (0.1 / sqrt(fan_in)), Adam lr 1e-3, batch 32, 3000 steps, 121
  checkpoints, seeds 0..4;
* ``full``: vocabulary 64, 64 tokens, periods 8..32, ``d_model`` 128, 4 heads, batch 64,
  5000 steps, 101 checkpoints, seeds 0..2 (for a GPU; sized so that the chapter's full plan
  fits a few minutes of one H200, ``bench/bench_ch6_full_scale.py``; it was 20 000 steps,
  201 checkpoints and 10 seeds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ...scale import pick
from ...validation import check_instance, check_int, check_positive
from ..circuits import parameter_norm
from ..device import resolve_device
from .analysis import head_scores
from .model import MAX_LAYERS, AttentionOnlyConfig, AttentionOnlyTransformer
from .task import InductionTask

__all__ = ["token_losses", "sequence_losses", "TrainConfig", "EVAL_SEED", "AttentionOnlyRun",
           "checkpoint_steps", "check_configs",
           "train_attention_only", "experiment_settings", "experiment_seeds", "demo_settings",
           "INIT_STDS", "DEFAULT_INIT_STD", "DEFAULT_POSITIONAL"]


def token_losses(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy (nats) per position, shape (batch, seq_len - 1)."""
    V = logits.shape[-1]
    return nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1),
                                       reduction="none").view(tokens.shape[0], -1)


def sequence_losses(logits: torch.Tensor, tokens: torch.Tensor, icl_mask: torch.Tensor):
    """Mean next-token cross-entropy (nats) on ICL targets and on first-period targets.

    The ICL loss averages over the targets that the context determines (``icl_mask``);
    the first-period loss over the others (fresh tokens).
    """
    ce = token_losses(logits, tokens)
    m = icl_mask.to(ce.dtype)
    icl = (ce * m).sum() / m.sum()
    first = (ce * (1 - m)).sum() / (1 - m).sum()
    return icl, first




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
        check_int("steps", self.steps, 1)
        check_int("batch_size", self.batch_size, 1)
        check_positive("lr", self.lr)
        check_int("n_checkpoints", self.n_checkpoints, 2)
        check_int("eval_size", self.eval_size, 1)


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
        Frobenius norm of all parameters (:func:`icllib.nonlinear.circuits.parameter_norm`).
    qk, ov : (C, n_layers, n_heads, d_model, d_model) float64 arrays
        The circuits (:meth:`AttentionOnlyTransformer.circuits`).
    prev_token_score, duplicate_token_score, induction_score : (C, n_layers, n_heads) arrays
        :func:`head_scores` on the evaluation batch.
    train_loss : (steps,) array
        Training loss (all targets) of each step's batch, before the update.
    seconds : float
        Wall time of the training loop (including the checkpoints).
    model : AttentionOnlyTransformer or None
        The trained module (``keep_model=True``).
    device : str
        Where it was trained.
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
    duplicate_token_score: np.ndarray
    induction_score: np.ndarray
    train_loss: np.ndarray
    seconds: float = 0.0
    model: AttentionOnlyTransformer | None = field(default=None, repr=False)
    device: str = "cpu"

    @property
    def steps_per_second(self) -> float:
        """Adam steps per second of wall time (checkpointing included)."""
        return self.train_config.steps / self.seconds if self.seconds > 0 else float("nan")


def checkpoint_steps(steps: int, n_checkpoints: int) -> np.ndarray:
    """Evenly spaced integer steps from 0 to ``steps`` (unique, both ends included)."""
    steps = check_int("steps", steps, 1)
    n_checkpoints = check_int("n_checkpoints", n_checkpoints, 2)
    return np.unique(np.round(np.linspace(0, steps, n_checkpoints)).astype(int))


def check_configs(model_config, task, train_config):
    """The three configurations of a run, and that they fit together (vocabulary, length)."""
    check_instance("model_config", model_config, AttentionOnlyConfig, "an AttentionOnlyConfig")
    check_instance("task", task, InductionTask, "an InductionTask")
    check_instance("train_config", train_config, TrainConfig)
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
    check_configs(model_config, task, train_config)
    seed = check_int("seed", seed, 0)
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
    dup = np.empty((C, Lyr, H))
    ind = np.empty((C, Lyr, H))
    icl = np.empty(C)
    first = np.empty(C)
    pnorm = np.empty(C)
    # on the device: a GPU step then never waits for a copy to the host
    train_loss = torch.empty(train_config.steps, device=dev)

    def record(i):
        qk[i], ov[i] = model.circuits()
        pnorm[i] = parameter_norm(model)
        with torch.no_grad():
            logits, patterns = model(eval_tokens, return_attention=True)
            a, b = sequence_losses(logits, eval_tokens, eval_mask)
            prev[i], dup[i], ind[i] = head_scores(patterns, eval_mask)
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
        loss = token_losses(model(tokens), tokens).mean()
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
                            qk, ov, prev, dup, ind, train_loss.double().cpu().numpy(), seconds,
                            model if keep_model else None, str(dev))


# --------------------------------------------------------------------------- settings


#: training steps at the medium scale (ICL emerges within the first ~500 steps there)
MEDIUM_STEPS = 2000

#: the chapter's experimental factors besides depth and seed: attention-weight initialisation
#: scale (0.1: small, as in the linear model; 1.0: standard) and positional embedding
INIT_STDS = (0.1, 1.0)
DEFAULT_INIT_STD = 0.1
DEFAULT_POSITIONAL = "learned"


def experiment_settings(n_layers: int, scale: str | None = None, *,
                        init_std: float = DEFAULT_INIT_STD,
                        positional: str = DEFAULT_POSITIONAL):
    """Task, architecture and optimiser of the chapter's runs with ``n_layers`` layers.

    Parameters
    ----------
    n_layers : int
        1..4.
    init_std : float
        Attention-weight initialisation scale (:class:`AttentionOnlyConfig`); the chapter
        varies it over :data:`INIT_STDS`.
    positional : {"learned", "sinusoidal"}
        Positional embedding (:data:`~icllib.nonlinear.induction.model.POSITIONAL_KINDS`).
    scale : {"quick", "full"}, optional
        Default: :func:`icllib.scale.current_scale` (the ``ICLLIB_SCALE`` variable).
        ``quick`` is sized for a 2-core CPU (a 2-layer run takes ~20 s), ``full`` for a GPU.

    Returns
    -------
    (InductionTask, AttentionOnlyConfig, TrainConfig)
    """
    n_layers = check_int("n_layers", n_layers, 1, MAX_LAYERS)
    task = pick(quick=InductionTask(vocab_size=16, seq_len=24, min_period=4, max_period=10),
                medium=InductionTask(vocab_size=64, seq_len=64, min_period=8, max_period=32),
                full=InductionTask(vocab_size=64, seq_len=64, min_period=8, max_period=32),
                scale=scale)
    model = AttentionOnlyConfig(n_layers=n_layers, vocab_size=task.vocab_size,
                                seq_len=task.seq_len, positional=positional,
                                init_std=init_std,
                                **pick(quick=dict(n_heads=2, d_model=32),
                                       medium=dict(n_heads=4, d_model=64),
                                       full=dict(n_heads=4, d_model=128), scale=scale))
    train = pick(quick=TrainConfig(steps=3000, batch_size=32, lr=1e-3, n_checkpoints=121,
                                   eval_size=512),
                 medium=TrainConfig(steps=MEDIUM_STEPS, batch_size=128, lr=1e-3,
                                    n_checkpoints=81, eval_size=512),
                 full=TrainConfig(steps=5000, batch_size=64, lr=1e-3, n_checkpoints=101,
                                  eval_size=1024), scale=scale)
    return task, model, train


def experiment_seeds(scale: str | None = None) -> tuple[int, ...]:
    """Seeds of the chapter's runs at the given scale (default: the current scale).

    Full scale: 3 seeds per factor cell, the most that fits one H200's share of the book's
    10 minutes (``bench/bench_ch6_full_scale.py``).
    """
    return pick(quick=(0, 1, 2, 3, 4), medium=(0, 1, 2, 3, 4), full=(0, 1, 2), scale=scale)


def demo_settings(n_layers: int = 2, *, init_std: float = DEFAULT_INIT_STD,
                  positional: str = DEFAULT_POSITIONAL):
    """The short live run of the chapter and the tests: quick settings, lr 3e-3, 800 steps.

    Long enough for a 2-layer model to pass its ICL transition (about step 400), short
    enough to run in a few seconds on one CPU core.
    """
    task, model, _ = experiment_settings(n_layers, "quick", init_std=init_std,
                                         positional=positional)
    return task, model, TrainConfig(steps=800, batch_size=32, lr=3e-3, n_checkpoints=41,
                                    eval_size=512)
