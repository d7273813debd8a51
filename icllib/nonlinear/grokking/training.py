"""Training the grokking transformer of chapter 7, and the chapter's settings.

Full-batch AdamW with weight decay on the training pairs (:func:`train_grokking`), recording
losses, accuracies and the parameter norm every ``eval_every`` steps and the matrices of
:data:`~icllib.nonlinear.grokking.model.CIRCUIT_NAMES` every ``checkpoint_every`` steps.  The
chapter's sizes are read through :func:`icllib.scale.pick` (:func:`experiment_settings`):
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
from ..circuits import parameters_norm
from ..device import deterministic
from .model import CIRCUIT_NAMES, ModularTransformer
from .task import check_op, check_p, check_train_frac, modular_dataset, with_random_labels

__all__ = ["GrokkingConfig", "quick_config", "medium_config", "full_config", "experiment_settings",
           "experiment_seeds", "experiment_plan", "WEIGHT_DECAYS", "GrokkingRun",
           "CURVE_NAMES", "grokking_loss", "train_grokking"]

@dataclass(frozen=True)
class GrokkingConfig:
    """Settings of one grokking run.

    ``seed`` sets both the train/test split (:func:`modular_dataset`) and the weight
    initialisation (a ``torch.Generator`` seeded with it). ``n_steps`` full-batch AdamW steps
    are taken; losses and accuracies are recorded every ``eval_every`` steps, checkpoints of
    the circuits every ``checkpoint_every`` steps (both also at step 0 and at ``n_steps``).
    ``random_labels=True`` makes the negative control: every label an independent uniform
    draw (:func:`~icllib.nonlinear.grokking.task.with_random_labels`), so the test accuracy
    cannot rise above chance.  The defaults are the reference setting of Nanda et al. (2023)
    (book chapter 7).
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
    random_labels: bool = False

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
        if not isinstance(self.random_labels, bool):
            raise ValueError(f"random_labels must be True or False, got {self.random_labels!r}")
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


def medium_config(**overrides) -> GrokkingConfig:
    """The medium setting: Nanda et al.'s reference setting (:func:`full_config`) on the CPU.

    ``p = 113``, ``a + b``, 30 % of the pairs, ``d_model = 128``, 4 heads, MLP width 512,
    full batch, AdamW lr 1e-3, weight decay 1, betas (0.9, 0.98), as in :func:`full_config`,
    but 20 000 steps instead of 25 000 (Nanda et al.'s clean-up phase ends near step 13 000;
    the last 7 000 steps let the distances to the final checkpoint settle), evaluated every 50
    and checkpointed every 250 steps.  About 17 steps/s on one core of the 2-core machine
    (about 25 minutes per run with the metrics).
    """
    base = GrokkingConfig(n_steps=20_000, eval_every=50, checkpoint_every=250)
    return replace(base, **overrides)


def experiment_settings(scale: str | None = None, **overrides) -> GrokkingConfig:
    """The chapter's setting at ``scale`` (default: ``ICLLIB_SCALE``), with ``overrides``.

    :func:`quick_config` or :func:`full_config`, chosen by :func:`icllib.scale.pick`.  The
    same verb as chapter 6's
    :func:`~icllib.nonlinear.induction.training.experiment_settings` (which returns a
    task, an architecture and an optimiser; here one :class:`GrokkingConfig` holds all three).
    """
    return pick(quick=quick_config, medium=medium_config, full=full_config,
                scale=scale)(**overrides)


def experiment_seeds(scale: str | None = None) -> tuple[int, ...]:
    """Seeds of the chapter's runs at the reference weight decay 1 (0 .. 4 at both scales)."""
    return pick(quick=(0, 1, 2, 3, 4), medium=(0, 1, 2, 3, 4), full=(0, 1, 2, 3, 4),
                scale=scale)


#: the weight decays of the chapter's grokking runs
WEIGHT_DECAYS = (1.0, 3.0)


def experiment_plan(scale: str | None = None) -> tuple[tuple[float, int, bool], ...]:
    """Every run of the chapter as ``(weight_decay, seed, random_labels)``.

    Quick: weight decay 1 with seeds 0-4, weight decay 3 with seeds 0-2, and the negative
    control (weight decay 1, random labels) with seeds 0-4 (at least as many runs as the
    setting it controls).  Medium: weight decay 1 and its
    random-label control, five seeds each (the CPU budget of the reference setting).  Full:
    five seeds of each.
    """
    plan = pick(quick={1.0: 5, 3.0: 3, "control": 5}, medium={1.0: 5, 3.0: 0, "control": 5},
                full={1.0: 5, 3.0: 5, "control": 5}, scale=scale)
    runs = [(wd, s, False) for wd in WEIGHT_DECAYS for s in range(plan[wd])]
    return tuple(runs + [(1.0, s, True) for s in range(plan["control"])])


@dataclass
class GrokkingRun:
    """What :func:`train_grokking` records.

    ``eval_steps`` index ``train_loss, test_loss, train_acc, test_acc, param_norm`` (the
    norm of all parameters, :func:`icllib.nonlinear.circuits.parameter_norm`);
    ``checkpoint_steps`` index the leading axis of every array in ``checkpoints`` and of
    ``logits`` (float32, shape ``(T, p * p, p)``: the logits of every pair at each checkpoint,
    for the progress measures of :mod:`~icllib.nonlinear.grokking.progress`).
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
    logits: np.ndarray | None = field(default=None, repr=False)


#: the curves recorded every ``eval_every`` steps, in the order of :class:`GrokkingRun`
CURVE_NAMES = ("train_loss", "test_loss", "train_acc", "test_acc", "param_norm")


def grokking_loss(logits, labels):
    """Mean cross-entropy of ``logits`` against ``labels``, in float64 (book chapter 7, 'The
    task and the model').

    Float64 log-softmax: in float32 the loss of a memorised training set underflows and the
    gradients become noisy ("slingshots"); Nanda et al. do the same.
    """
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
    if c.random_labels:
        data = with_random_labels(data, c.seed)
    with deterministic(device, num_threads):
        gen = torch.Generator().manual_seed(c.seed)
        model = ModularTransformer(c.p, c.d_model, c.n_heads, c.d_mlp, gen).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay,
                                betas=c.betas)
        inputs = torch.as_tensor(data.inputs, device=device)
        labels = torch.as_tensor(data.labels, device=device)
        tr = torch.as_tensor(data.train_idx, device=device)
        te = torch.as_tensor(data.test_idx, device=device)
        x_tr, y_tr, y_te = inputs[tr], labels[tr], labels[te]

        # the curves are accumulated on the device and copied to the host at checkpoints only
        n_eval = len(range(0, c.n_steps + 1, c.eval_every)) + (c.n_steps % c.eval_every != 0)
        curves = torch.empty(n_eval, len(CURVE_NAMES), dtype=torch.float64, device=device)
        host, n_done, n_copied = [], 0, 0
        ck_steps, ck, ck_logits = [], {k: [] for k in CIRCUIT_NAMES}, []
        params = list(model.parameters())

        def evaluate():
            nonlocal n_done
            with torch.no_grad():
                logits = model(inputs)
                ltr, lte = logits[tr], logits[te]
                curves[n_done] = torch.stack([
                    grokking_loss(ltr, y_tr), grokking_loss(lte, y_te),
                    (ltr.argmax(-1) == y_tr).double().mean(),
                    (lte.argmax(-1) == y_te).double().mean(),
                    parameters_norm(params)])
            n_done += 1

        def checkpoint(step):
            nonlocal n_copied
            host.append(curves[n_copied:n_done].cpu())        # one device-to-host copy
            n_copied = n_done
            ck_steps.append(step)
            for k, v in model.circuits().items():
                ck[k].append(v)
            with torch.no_grad():                                # no effect on training
                ck_logits.append(model(inputs).to("cpu", torch.float32).numpy())

        bar = tqdm(total=c.n_steps, disable=not progress,
                   desc=f"grokking p={c.p} seed={c.seed}", mininterval=0.5)
        t0 = time.perf_counter()
        evaluate()
        checkpoint(0)
        for step in range(1, c.n_steps + 1):
            opt.zero_grad(set_to_none=True)
            loss = grokking_loss(model(x_tr), y_tr)
            loss.backward()
            opt.step()
            if step % c.eval_every == 0 or step == c.n_steps:
                evaluate()
            if step % c.checkpoint_every == 0 or step == c.n_steps:
                checkpoint(step)
                if progress:
                    acc = host[-1][-1] if len(host[-1]) else host[-2][-1]
                    bar.set_postfix(train=f"{float(acc[2]):.3f}", test=f"{float(acc[3]):.3f}",
                                    refresh=False)
            bar.update(1)
        wall = time.perf_counter() - t0
        bar.close()

    if n_copied != n_done:
        raise RuntimeError("internal: evaluations after the last checkpoint were not copied")
    values = torch.cat(host).numpy()
    arr = {k: values[:, i].copy() for i, k in enumerate(CURVE_NAMES)}
    eval_steps = np.unique(np.r_[np.arange(0, c.n_steps + 1, c.eval_every), c.n_steps])
    return GrokkingRun(
        config=c, eval_steps=eval_steps.astype(np.int64), train_loss=arr["train_loss"],
        test_loss=arr["test_loss"], train_acc=arr["train_acc"], test_acc=arr["test_acc"],
        param_norm=arr["param_norm"],
        checkpoint_steps=np.asarray(ck_steps, dtype=np.int64),
        checkpoints={k: np.stack(v) for k, v in ck.items()},
        seconds=wall, steps_per_second=c.n_steps / wall,
        model=model.cpu() if keep_model else None, device=str(device),
        logits=np.stack(ck_logits),
    )
