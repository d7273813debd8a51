"""Training the grokking transformer of chapter 7, and the chapter's settings.

Full-batch AdamW with weight decay on the training pairs (:func:`train_grokking`), recording
losses, accuracies and the parameter norm every ``eval_every`` steps and the matrices of
:data:`~icllib.nonlinear.grokking.model.CIRCUIT_NAMES` every ``checkpoint_every`` steps.  The
chapter's sizes are read through :func:`icllib.scale.pick` (:func:`experiment_config`):
``quick`` is the book's CPU setting (:func:`quick_config`), ``full`` the reference setting
of Nanda et al. (2023) (:func:`full_config`), for a GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from numbers import Real

import numpy as np
import torch
from torch.nn import functional as F

from ...scale import pick
from ...validation import check_instance, check_int, check_nonnegative, check_positive
from ..circuits import parameter_norm
from ..device import deterministic
from .model import CIRCUIT_NAMES, ModularTransformer
from .task import check_op, check_p, check_train_frac, modular_dataset

__all__ = ["GrokkingConfig", "quick_config", "full_config", "experiment_config",
           "experiment_seeds", "WEIGHT_DECAYS", "GrokkingRun", "train_grokking"]

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
        check_p(self.p)
        check_op(self.op)
        check_train_frac(self.train_frac)
        check_int("d_model", self.d_model, 1)
        check_int("n_heads", self.n_heads, 1)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model must be a multiple of n_heads, got d_model={self.d_model}, "
                             f"n_heads={self.n_heads}")
        check_int("d_mlp", self.d_mlp, 1)
        check_positive("lr", self.lr)
        check_nonnegative("weight_decay", self.weight_decay)
        if len(self.betas) != 2 or not all(isinstance(x, Real) and 0 <= x < 1
                                           for x in self.betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas!r}")
        check_int("n_steps", self.n_steps, 1)
        check_int("eval_every", self.eval_every, 1)
        check_int("checkpoint_every", self.checkpoint_every, 1)
        check_int("seed", self.seed, 0)
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


def experiment_config(scale: str | None = None, **overrides) -> GrokkingConfig:
    """The chapter's setting at ``scale`` (default: ``ICLLIB_SCALE``), with ``overrides``.

    :func:`quick_config` or :func:`full_config`, chosen by :func:`icllib.scale.pick`.
    """
    return pick(quick=quick_config, full=full_config, scale=scale)(**overrides)


def experiment_seeds(scale: str | None = None) -> tuple[int, ...]:
    """Seeds of the chapter's runs (0, 1, 2 at both scales)."""
    return pick(quick=(0, 1, 2), full=(0, 1, 2), scale=scale)


#: the weight decays of the chapter's runs
WEIGHT_DECAYS = (0.3, 1.0, 3.0)


@dataclass
class GrokkingRun:
    """What :func:`train_grokking` records.

    ``eval_steps`` index ``train_loss, test_loss, train_acc, test_acc, param_norm`` (the
    norm of all parameters, :func:`icllib.nonlinear.circuits.parameter_norm`);
    ``checkpoint_steps`` index the leading axis of every array in ``checkpoints``.
    ``seconds`` is the training loop's wall time (evaluations included),
    ``steps_per_second = n_steps / seconds``.
    """

    config: GrokkingConfig
    eval_steps: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray
    train_acc: np.ndarray
    test_acc: np.ndarray
    param_norm: np.ndarray
    checkpoint_steps: np.ndarray
    checkpoints: dict = field(repr=False)
    seconds: float = 0.0
    steps_per_second: float = 0.0
    model: ModularTransformer | None = field(default=None, repr=False)
    device: str = "cpu"


def _loss(logits, labels):
    # float64 log-softmax: in float32 the loss of a memorised training set underflows and the
    # gradients become noisy ("slingshots"); Nanda et al. do the same.
    return F.cross_entropy(logits.double(), labels)


def train_grokking(config: GrokkingConfig, *, progress: bool = True,
                   num_threads: int | None = None, device: str = "cpu",
                   keep_model: bool = True) -> GrokkingRun:
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
    operation without a deterministic kernel warns instead of failing
    (:func:`icllib.nonlinear.device.deterministic`). The loss is
    the mean cross-entropy over the training pairs (book chapter 7, 'The task and the model').
    """
    check_instance("config", config, GrokkingConfig)
    from tqdm.auto import tqdm

    c = config
    data = modular_dataset(c.p, c.op, c.train_frac, c.seed)
    with deterministic(device, num_threads):
        gen = torch.Generator().manual_seed(c.seed)
        model = ModularTransformer(c.p, c.d_model, c.n_heads, c.d_mlp, gen).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay,
                                betas=c.betas)
        inputs = torch.as_tensor(data.inputs, device=device)
        labels = torch.as_tensor(data.labels, device=device)
        tr = torch.as_tensor(data.train_idx, device=device)
        te = torch.as_tensor(data.test_idx, device=device)
        x_tr, y_tr = inputs[tr], labels[tr]

        rec = {k: [] for k in ("step", "train_loss", "test_loss", "train_acc", "test_acc",
                               "param_norm")}
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
                rec["param_norm"].append(parameter_norm(model))

        def checkpoint(step):
            ck_steps.append(step)
            for k, v in model.circuits().items():
                ck[k].append(v)

        bar = tqdm(total=c.n_steps, disable=not progress,
                   desc=f"grokking p={c.p} seed={c.seed}", mininterval=0.5)
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
                    bar.set_postfix(train=f"{rec['train_acc'][-1]:.3f}",
                                    test=f"{rec['test_acc'][-1]:.3f}", refresh=False)
            if step % c.checkpoint_every == 0 or step == c.n_steps:
                checkpoint(step)
            bar.update(1)
        wall = time.perf_counter() - t0
        bar.close()

    arr = {k: np.asarray(v, dtype=np.int64 if k == "step" else np.float64) for k, v in rec.items()}
    return GrokkingRun(
        config=c, eval_steps=arr["step"], train_loss=arr["train_loss"],
        test_loss=arr["test_loss"], train_acc=arr["train_acc"], test_acc=arr["test_acc"],
        param_norm=arr["param_norm"],
        checkpoint_steps=np.asarray(ck_steps, dtype=np.int64),
        checkpoints={k: np.stack(v) for k, v in ck.items()},
        seconds=wall, steps_per_second=c.n_steps / wall,
        model=model.cpu() if keep_model else None, device=str(device),
    )
