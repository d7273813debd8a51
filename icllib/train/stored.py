r"""The book's long SGD runs of the linear model: trained once, stored, reloaded (ch. 2-5b).

Chapters 2-5b compare long full-model SGD runs with the theory (the running example's six
seeds for 6000 steps, the task-set runs of chapter 5b, ...).  Training them every time a
chapter runs would take several minutes, so ``scripts/make_linear_runs.py`` trains each
*group* of runs once and stores it in ``book/data/linear/<scale>/<group>.npz``; a chapter
loads it with :func:`load_group`.  A group is a specification (:class:`SGDGroup`,
:class:`TaskSetGroup`) plus the seeds of its SGD noise streams; the runs are exactly those of
:func:`icllib.train.train_sgd` with ``rng=numpy.random.default_rng(seed)``, and a unit test
retrains a prefix of every run of every shipped group and compares.

What is stored of a run is what the chapters use (:class:`StoredRun`): the diagonals of the
four blocks ``p1, p2, q1, q2`` in the eigenbasis at every recorded step (so every mode's two
pathways, book chapter 2), the batch loss, and the parameters averaged over the late part of
the run.  Curves are stored in float32 (seven significant digits, far below any
seed-to-seed spread the chapters compare with); the averaged parameters in float64.

A stored file carries its group's specification; :func:`load_group` refuses a file whose
specification is not the one the library now asks for, and names the command that remakes it.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..data import DataConfig, sample_task_set
from ..datafiles import chapter_data_dir
from ..examples import RUNNING_EXAMPLE
from ..model import Params
from ..scale import SCALES, current_scale, pick
from ..theory import paper_fixed_point
from ..validation import check_choice, check_int
from .finite_tasks import monte_carlo_loss
from .initialisation import balanced_init, random_init
from .sgd import auto_sampler, mode_products, pathway_products, train_sgd
from .stability import DivergenceError
from .task_fitting import PathwayLosses, mean_pathway_losses

__all__ = ["StoredRun", "SGDGroup", "TaskSetGroup", "TaskSetRun", "PriceGroup", "PriceRun",
           "groups", "group", "data_dir", "make_command", "train_group", "save_group",
           "load_group"]

CHAPTER = "linear"
BLOCKS = ("p1", "p2", "q1", "q2")


def data_dir(scale: str | None = None) -> Path:
    """``book/data/linear/<scale>`` (scale: default the current one): of this checkout, or
    under ``$ICLLIB_DATA`` (:func:`icllib.datafiles.data_root`)."""
    scale = current_scale() if scale is None else check_choice("scale", scale, SCALES)
    return chapter_data_dir(CHAPTER, scale)


def make_command(scale: str, name: str | None = None) -> str:
    """The command line that (re)makes a group's file (all groups when ``name`` is None)."""
    cmd = f"python scripts/make_linear_runs.py --scale {scale}"
    return cmd if name is None else f"{cmd} --group {name}"


@dataclass(frozen=True)
class StoredRun:
    """What the chapters use of one SGD run (a :class:`~icllib.train.sgd.Recording`).

    Attributes
    ----------
    seed : int
        Seed of the SGD noise stream, ``numpy.random.default_rng(seed)``.
    steps : ndarray (T,)
        Recorded steps (0 = the start).
    diagonals : ndarray (T, 4, d)
        Diagonals of ``p1, p2, q1, q2`` in the eigenbasis, float32.
    loss : ndarray (T,)
        Batch loss at the recorded steps (the recording's ``loss``), float32.
    late_from : int
        First step of the late average.
    late_blocks : tuple of four ndarrays (d, d), or None
        ``p1, p2, q1, q2`` (eigenbasis, as recorded) averaged over the records with
        ``steps >= late_from``, float64 (None for a run that ends before ``late_from``).
    """

    seed: int
    steps: np.ndarray
    diagonals: np.ndarray
    loss: np.ndarray
    late_from: int
    late_blocks: tuple

    @classmethod
    def from_recording(cls, rec, seed: int, late_from: int) -> StoredRun:
        late = rec.steps >= late_from
        diagonals = np.stack([np.einsum("tii->ti", getattr(rec, b)) for b in BLOCKS], axis=1)
        return cls(seed=int(seed), steps=rec.steps.copy(),
                   diagonals=diagonals.astype(np.float32),
                   loss=rec.loss.astype(np.float32), late_from=int(late_from),
                   late_blocks=(tuple(getattr(rec, b)[late].mean(axis=0) for b in BLOCKS)
                                if late.any() else None))

    @property
    def p(self) -> np.ndarray:
        """Mode amplitudes ``p_alpha`` = diagonal of ``p2``, float64, (T, d)."""
        return self.diagonals[:, 1].astype(float)

    @property
    def q(self) -> np.ndarray:
        """Mode amplitudes ``q_alpha`` = diagonal of ``q1``, float64, (T, d)."""
        return self.diagonals[:, 2].astype(float)

    @property
    def a(self) -> np.ndarray:
        """Mode products, both pathways (:func:`mode_products`), float64, (T, d)."""
        return mode_products(self)

    @property
    def via_p2q1(self) -> np.ndarray:
        """The ``(p2)_aa (q1)_aa`` pathway alone (:func:`pathway_products`), (T, d)."""
        return pathway_products(self)[0]

    @property
    def via_p1q2(self) -> np.ndarray:
        """The ``(p1)_aa (q2)_aa`` pathway alone (:func:`pathway_products`), (T, d)."""
        return pathway_products(self)[1]

    def late_params(self) -> Params:
        """The late-averaged model as :class:`~icllib.model.Params` (eigenbasis)."""
        if self.late_blocks is None:
            raise ValueError(f"this run ends at step {int(self.steps[-1])}, before late_from = "
                             f"{self.late_from}: it has no late average")
        return Params.from_blocks(*self.late_blocks)

    def prefix(self, steps: int) -> StoredRun:
        """The run's records up to ``steps`` (the late average is the stored one)."""
        keep = self.steps <= steps
        return StoredRun(self.seed, self.steps[keep], self.diagonals[keep], self.loss[keep],
                         self.late_from, self.late_blocks)

    def arrays(self, prefix: str) -> dict:
        out = {f"{prefix}/{k}": getattr(self, k)
               for k in ("steps", "diagonals", "loss")}
        if self.late_blocks is not None:
            out[f"{prefix}/late_blocks"] = np.stack(self.late_blocks)
        return out

    @classmethod
    def from_arrays(cls, arrays, prefix: str, seed: int, late_from: int) -> StoredRun:
        late = arrays.get(f"{prefix}/late_blocks")
        return cls(seed=seed, steps=arrays[f"{prefix}/steps"],
                   diagonals=arrays[f"{prefix}/diagonals"], loss=arrays[f"{prefix}/loss"],
                   late_from=late_from, late_blocks=None if late is None else tuple(late))


@dataclass(frozen=True)
class SGDGroup:
    """SGD runs of one setting that differ only in the seed of their noise stream.

    Every run is ``train_sgd(DataConfig(s=s, N=N), balanced_init(d, start), eta=eta, B=B,
    steps=steps, rng=numpy.random.default_rng(seed), record_every=record_every,
    sampler=sampler)``.

    Parameters
    ----------
    s : tuple of float
        Spectrum.
    N, B, steps, record_every, late_from : int
    eta : float
    start : tuple of float
        Balanced starting amplitudes ``p_alpha(0) = q_alpha(0)``, one per mode.
    seeds : tuple of int
    sampler : str
        The sampler of :func:`icllib.train.train_sgd`, the one ``"auto"`` picks for the
        group's size (:func:`icllib.train.auto_sampler`); part of the specification, since
        another sampler is another random stream.
    """

    s: tuple
    N: int
    eta: float
    B: int
    steps: int
    start: tuple
    seeds: tuple
    record_every: int = 1
    late_from: int = 0
    sampler: str = "statistics"
    kind: str = field(default="sgd", init=False)

    def train(self, seed: int, steps: int | None = None) -> StoredRun:
        """Train the run of ``seed`` (``steps``: a prefix, e.g. for a reproduction test)."""
        steps = self.steps if steps is None else check_int("steps", steps, 0, self.steps)
        rec = train_sgd(DataConfig(s=np.array(self.s), N=self.N),
                        balanced_init(len(self.s), np.array(self.start)), eta=self.eta,
                        B=self.B, steps=steps, rng=np.random.default_rng(seed),
                        record_every=self.record_every, sampler=self.sampler)
        return StoredRun.from_recording(rec, seed, self.late_from)


@dataclass(frozen=True)
class TaskSetRun:
    """One run of chapter 5b: SGD on a task set (or fresh tasks) and its Monte Carlo losses.

    Attributes
    ----------
    P : int or None
        Number of tasks (None: a fresh task for every prompt).
    seed : int
    steps : ndarray (T,)
    a : ndarray (T, d)
        Mode amplitudes, both pathways (:func:`mode_products`), float32.
    final : dict
        ``"test"`` (and ``"train"`` when ``P`` is set): (loss, standard error) of the model
        averaged over the steps ``>= burn_in``, on ``n_final`` prompts with fresh tasks
        (test) or tasks of the set (train).
    curve : dict or None
        For the group's first seed: ``"steps"`` and the test (and train) loss of the recorded
        model at about 26 log-spaced steps, ``n_curve`` prompts each.
    """

    P: int | None
    seed: int
    steps: np.ndarray
    a: np.ndarray
    final: dict
    curve: dict | None


@dataclass(frozen=True)
class TaskSetGroup:
    """Chapter 5b's runs: for each ``P``, one task set (seed ``task_seed + P``), SGD seeds.

    For each ``P`` in ``P_values`` (None: fresh tasks) and each seed in ``seeds_for(P)``, SGD
    from the balanced start ``start`` with ``B`` prompts per step for ``steps`` steps; then,
    with the same generator, the Monte Carlo losses of :class:`TaskSetRun`.
    """

    s: tuple
    N: int
    eta: float
    B: int
    steps: int
    start: float
    P_values: tuple
    seeds: tuple                 # for the P in many_seeds_P
    many_seeds_P: tuple
    task_seed: int = 7000
    record_every: int = 4
    burn_in: int = 11000
    n_curve: int = 2000
    n_final: int = 30000
    curve_points: int = 26
    sampler: str = "statistics"
    kind: str = field(default="task-set", init=False)

    def seeds_for(self, P) -> tuple:
        return self.seeds if P in self.many_seeds_P else self.seeds[:1]

    def config(self, P) -> DataConfig:
        return DataConfig(s=np.array(self.s), N=self.N, P=P)

    def tasks(self, P):
        """The task set of ``P`` (None for fresh tasks)."""
        return (sample_task_set(self.config(P), np.random.default_rng(self.task_seed + P))
                if P else None)

    def train(self, P, seed: int, steps: int | None = None) -> TaskSetRun:
        """Train and evaluate one run (``steps``: a prefix, trajectory only, no losses)."""
        config, tasks = self.config(P), self.tasks(P)
        short = steps is not None
        steps = self.steps if steps is None else check_int("steps", steps, 0, self.steps)
        rng = np.random.default_rng(seed)
        rec = train_sgd(config, balanced_init(len(self.s), self.start), eta=self.eta,
                        B=self.B, steps=steps, rng=rng, tasks=tasks,
                        record_every=self.record_every, sampler=self.sampler)
        a = mode_products(rec).astype(np.float32)
        if short:
            return TaskSetRun(P, seed, rec.steps.copy(), a, {}, None)
        late = rec.steps >= self.burn_in          # parameters averaged over the late steps
        mean_params = Params.from_blocks(*(getattr(rec, b)[late].mean(axis=0) for b in BLOCKS))
        final = {"test": monte_carlo_loss(mean_params, config, self.n_final, rng)}
        if P:
            final["train"] = monte_carlo_loss(mean_params, config, self.n_final, rng,
                                              tasks=tasks)
        curve = None
        if seed == self.seeds[0]:                 # loss curves of the first seed
            idx = np.unique(np.r_[0, np.geomspace(1, len(rec.steps) - 1,
                                                  self.curve_points).astype(int)])
            curve = {"steps": rec.steps[idx].astype(float), "test": [], "train": []}
            for j in idx:
                prm = Params.from_blocks(*(getattr(rec, b)[j] for b in BLOCKS))
                curve["test"].append(monte_carlo_loss(prm, config, self.n_curve, rng)[0])
                if P:
                    curve["train"].append(
                        monte_carlo_loss(prm, config, self.n_curve, rng, tasks=tasks)[0])
            curve = {k: np.array(v, dtype=float) for k, v in curve.items()}
        return TaskSetRun(P, seed, rec.steps.copy(), a,
                          {k: np.array(v, dtype=float) for k, v in final.items()}, curve)


@dataclass(frozen=True)
class PriceRun:
    """One run of chapter 5b's price of a finite set (:class:`PriceGroup`).

    Attributes
    ----------
    P : int or None
        Number of tasks (None: a fresh task for every prompt).
    task_set : int
        Which of the group's sets of this ``P`` (0 for fresh tasks).
    start : str
        ``"balanced"`` or ``"random"``.
    seed : int
        Seed of the SGD noise stream.
    steps : ndarray (T,)
        Stored steps (every ``store_every``).
    diagonals : ndarray (T, 4, d)
        Diagonals of ``p1, p2, q1, q2`` in the eigenbasis at ``steps``, float32.
    late_blocks : ndarray (4, d, d)
        ``p1, p2, q1, q2`` at the last step, float32.
    test, train : PathwayLosses or None
        :func:`icllib.train.task_fitting.mean_pathway_losses` of the iterates at the
        ``n_late`` evenly spaced steps from ``burn_in`` to the end, on ``n_eval`` prompts with
        fresh tasks (the same prompts for every run of the group) and from the task set (None
        for fresh tasks, and for a run that diverged).
    diverged_at : int or None
        The step at which SGD diverged (:class:`~icllib.train.stability.DivergenceError`),
        None for a run that finished; a diverged run keeps its trajectory up to that step.
    """

    P: int | None
    task_set: int
    start: str
    seed: int
    steps: np.ndarray
    diagonals: np.ndarray
    late_blocks: np.ndarray
    test: PathwayLosses | None
    train: PathwayLosses | None
    diverged_at: int | None = None

    @property
    def a(self) -> np.ndarray:
        """Mode products, both pathways (:func:`mode_products`), at ``steps``, float64, (T, d)."""
        return mode_products(self)

    @property
    def via_p2q1(self) -> np.ndarray:
        """The ``(p2)_aa (q1)_aa`` pathway alone (:func:`pathway_products`), (T, d)."""
        return pathway_products(self)[0]

    @property
    def via_p1q2(self) -> np.ndarray:
        """The ``(p1)_aa (q2)_aa`` pathway alone (:func:`pathway_products`), (T, d)."""
        return pathway_products(self)[1]

    def last_params(self) -> Params:
        """The model at the last step (eigenbasis)."""
        return Params.from_blocks(*self.late_blocks.astype(float))


_LOSS_FIELDS = ("loss", "loss_se", "ablated", "ablated_se", "rms", "target_rms")


@dataclass(frozen=True)
class PriceGroup:
    """Chapter 5b's price of a finite task set: the full model on many sets, two starts.

    For each ``P`` in ``P_values`` and each ``k < n_sets`` the task set is
    ``sample_task_set(config, default_rng(task_seed + P + 1000 k))`` (``k = 0`` is the set of
    the ``"task-sets"`` group); for each start and SGD seed in ``seeds`` (``fresh_seeds`` for
    fresh tasks) the run is ``train_sgd(config, start, eta, B, steps, tasks=...,
    rng=default_rng(seed), record_every=record_every)``, from ``balanced_init(d, start)`` or
    ``random_init(d, random_scale, default_rng(init_seed + seed))`` (the same SGD noise stream
    for both starts).  The iterates at ``n_late`` evenly spaced steps from ``burn_in`` to the
    end are evaluated by :func:`~icllib.train.task_fitting.mean_pathway_losses` (losses
    averaged over iterates, not parameters: a mode that changes pathway inside the window,
    book chapter 2, would make an averaged model that SGD never visited) on ``n_eval``
    prompts: the test
    prompts come from ``default_rng(eval_seed)`` for every run (common random numbers: the
    differences between runs carry no sampling noise of the prompts), the training prompts
    from ``default_rng([eval_seed, P, k])``.
    """

    s: tuple
    N: int
    eta: float
    B: int
    steps: int
    start: float
    random_scale: float
    P_values: tuple
    n_sets: int
    seeds: tuple
    fresh_seeds: tuple
    starts: tuple = ("balanced", "random")
    task_seed: int = 7000
    init_seed: int = 9000
    eval_seed: int = 8000
    record_every: int = 4
    store_every: int = 500
    burn_in: int = 11000
    n_late: int = 5
    n_eval: int = 50000
    sampler: str = "statistics"
    kind: str = field(default="price", init=False)

    def keys(self) -> list:
        """Every run as ``(P, task_set, start, seed)``, fresh tasks first."""
        out = [(None, 0, st, sd) for st in self.starts for sd in self.fresh_seeds]
        return out + [(P, k, st, sd) for P in self.P_values for k in range(self.n_sets)
                      for st in self.starts for sd in self.seeds]

    def config(self, P) -> DataConfig:
        return DataConfig(s=np.array(self.s), N=self.N, P=P)

    def tasks(self, P, k: int = 0):
        """Task set ``k`` of ``P`` tasks (None for fresh tasks)."""
        if P is None:
            return None
        return sample_task_set(self.config(P),
                               np.random.default_rng(self.task_seed + P + 1000 * k))

    def init(self, start: str, seed: int) -> Params:
        d = len(self.s)
        if start == "balanced":
            return balanced_init(d, self.start)
        check_choice("start", start, self.starts)
        return random_init(d, self.random_scale, np.random.default_rng(self.init_seed + seed))

    def train(self, P, task_set: int, start: str, seed: int,
              steps: int | None = None) -> PriceRun:
        """Train and evaluate one run (``steps``: a prefix, trajectory only, no losses)."""
        config, tasks = self.config(P), self.tasks(P, task_set)
        short = steps is not None
        steps = self.steps if steps is None else check_int("steps", steps, 0, self.steps)

        def run(n):
            return train_sgd(config, self.init(start, seed), eta=self.eta, B=self.B, steps=n,
                             rng=np.random.default_rng(seed), tasks=tasks,
                             record_every=self.record_every, sampler=self.sampler)

        diverged_at = None
        try:
            rec = run(steps)
        except DivergenceError as err:          # kept, with its trajectory up to that step
            diverged_at = err.step
            rec = run(diverged_at - 1)
        keep = rec.steps % self.store_every == 0
        diagonals = np.stack([np.einsum("tii->ti", getattr(rec, b)[keep]) for b in BLOCKS],
                             axis=1).astype(np.float32)
        late = rec.steps >= self.burn_in
        if short or diverged_at is not None or not late.any():
            return PriceRun(P, task_set, start, seed, rec.steps[keep], diagonals,
                            np.zeros((4, len(self.s), len(self.s)), np.float32), None, None,
                            diverged_at)
        at = np.linspace(self.burn_in, steps, self.n_late)      # the nearest recorded steps
        idx = [int(np.argmin(np.abs(rec.steps - t))) for t in at]
        models = [Params.from_blocks(*(getattr(rec, b)[j] for b in BLOCKS)) for j in idx]
        test = mean_pathway_losses(models, config, self.n_eval, self.eval_seed)
        train = (None if P is None else
                 mean_pathway_losses(models, config, self.n_eval,
                                     [self.eval_seed, P, task_set], tasks=tasks))
        last = np.stack([getattr(rec, b)[-1] for b in BLOCKS]).astype(np.float32)
        return PriceRun(P, task_set, start, seed, rec.steps[keep], diagonals, last, test,
                        train)

    @staticmethod
    def prefix(key) -> str:
        P, k, start, seed = key
        where = "fresh" if P is None else f"P{P}/set{k}"
        return f"{where}/{start}/seed{seed}"

    def to_arrays(self, runs: dict) -> dict:
        arrays = {}
        for key, run in runs.items():
            pre = self.prefix(key)
            arrays[f"{pre}/steps"], arrays[f"{pre}/diagonals"] = run.steps, run.diagonals
            arrays[f"{pre}/late_blocks"] = run.late_blocks
            if run.diverged_at is not None:
                arrays[f"{pre}/diverged_at"] = np.array(run.diverged_at)
            for which in ("test", "train"):
                res = getattr(run, which)
                if res is not None:
                    arrays[f"{pre}/{which}"] = np.concatenate(
                        [np.atleast_1d(np.asarray(getattr(res, f), float))
                         for f in _LOSS_FIELDS])
        return arrays

    def from_arrays(self, arrays) -> dict:
        def losses(v):
            if v is None:
                return None
            v = np.asarray(v, float)
            return PathwayLosses(loss=float(v[0]), loss_se=float(v[1]), ablated=v[2:6],
                                 ablated_se=v[6:10], rms=v[10:14], target_rms=float(v[14]))

        out = {}
        for key in self.keys():
            pre = self.prefix(key)
            out[key] = PriceRun(*key, steps=arrays[f"{pre}/steps"],
                                diagonals=arrays[f"{pre}/diagonals"],
                                late_blocks=arrays[f"{pre}/late_blocks"],
                                test=losses(arrays.get(f"{pre}/test")),
                                train=losses(arrays.get(f"{pre}/train")),
                                diverged_at=(int(arrays[f"{pre}/diverged_at"])
                                             if f"{pre}/diverged_at" in arrays else None))
        return out


def groups(scale: str | None = None) -> dict:
    """Every stored group of the book at ``scale`` (default: the current scale), by name.

    ``"running-example"``: intro, chapters 2, 4 and 5 (N = 10, B = 2048, seeds 400, 401, ...);
    ``"floor-N40"``: chapter 5's floor at N = 40; ``"fixed-point-B<B>"``: chapter 3's runs
    from the paper's fixed point at two batch sizes; ``"task-sets"``: chapter 5b;
    ``"task-set-price"``: chapter 5b's full-model price of a finite set (:class:`PriceGroup`).
    """
    scale = current_scale() if scale is None else check_choice("scale", scale, SCALES)
    ex = RUNNING_EXAMPLE
    s, d = tuple(float(v) for v in ex.s), ex.d
    balanced = (ex.p0,) * d
    out = {
        "running-example": SGDGroup(
            s=s, N=ex.N, eta=ex.eta, B=2048, steps=6000, start=balanced,
            seeds=tuple(range(400, 400 + pick(quick=6, full=12, scale=scale))),
            record_every=1, late_from=5000, sampler=auto_sampler(ex.N, d, True)),
        "floor-N40": SGDGroup(
            s=s, N=40, eta=ex.eta, B=2048, steps=6000, start=balanced, seeds=(700, 701),
            record_every=10, late_from=5000, sampler=auto_sampler(40, d, True)),
    }
    # chapter 3's runs start at the paper's fixed point, balanced
    fixed_start = tuple(float(v) for v in np.sqrt(paper_fixed_point(ex.s, ex.N)))
    for j, B in enumerate(pick(quick=(256, 1024), full=(1024, 4096), scale=scale)):
        out[f"fixed-point-B{B}"] = SGDGroup(
            s=s, N=ex.N, eta=ex.eta, B=B, steps=4000, start=fixed_start,
            seeds=tuple(200 + 10 * j + k for k in range(5)), record_every=5, late_from=2500,
            sampler=auto_sampler(ex.N, d, True))
    out["task-sets"] = TaskSetGroup(
        s=s, N=ex.N, eta=ex.eta, B=128, steps=12000, start=ex.p0,
        P_values=(4, 8, 16, 64, 256, None), many_seeds_P=(4, 16, 64, 256),
        seeds=tuple(range(1, 1 + pick(quick=3, full=9, scale=scale))),
        n_curve=pick(quick=2000, full=20000, scale=scale),
        n_final=pick(quick=30000, full=200000, scale=scale),
        sampler=auto_sampler(ex.N, d, True))    # task sets share the eigenbasis
    # chapter 5b's price of a finite set: P = 1 .. 256, several sets, two starts; the random
    # start has the balanced start's norm on the blocks that reach the prediction
    # (W^P_y, W^Q_x: 4 d^2 entries of size r against 2 d of size p0, so r = p0 / sqrt(2 d))
    out["task-set-price"] = PriceGroup(
        s=s, N=ex.N, eta=ex.eta, B=128, steps=12000, start=ex.p0,
        random_scale=ex.p0 / float(np.sqrt(2 * d)),
        P_values=(1, 2, 4, 8, 16, 32, 64, 128, 256),
        n_sets=pick(quick=4, full=8, scale=scale),
        seeds=pick(quick=(0, 1), full=(0, 1, 2, 3), scale=scale),
        fresh_seeds=tuple(range(pick(quick=8, full=16, scale=scale))),
        sampler=auto_sampler(ex.N, d, True))
    return out


def group(name: str, scale: str | None = None):
    """The specification of one group (see :func:`groups`)."""
    available = groups(scale)
    return available[check_choice("name", name, tuple(available))]


def _spec(g) -> dict:
    return json.loads(json.dumps(asdict(g)))     # tuples -> lists, as stored


def train_group(name: str, scale: str | None = None) -> dict:
    """Train every run of a group: ``{seed: StoredRun}`` or ``{(P, seed): TaskSetRun}``."""
    g = group(name, scale)
    if g.kind == "sgd":
        return {seed: g.train(seed) for seed in g.seeds}
    if g.kind == "price":
        return {key: g.train(*key) for key in g.keys()}
    return {(P, seed): g.train(P, seed) for P in g.P_values for seed in g.seeds_for(P)}


def _key(P) -> str:
    return "fresh" if P is None else f"P{P}"


def save_group(name: str, runs: dict, scale: str | None = None, *, seconds: float = 0.0,
               path: Path | None = None) -> Path:
    """Store a group's runs (as made by :func:`train_group`) with its specification."""
    scale = current_scale() if scale is None else scale
    g = group(name, scale)
    arrays = g.to_arrays(runs) if g.kind == "price" else {}
    for key, run in runs.items() if g.kind != "price" else ():
        if g.kind == "sgd":
            arrays.update(run.arrays(f"seed{key}"))
        else:
            pre = f"{_key(run.P)}/seed{run.seed}"
            arrays[f"{pre}/steps"], arrays[f"{pre}/a"] = run.steps, run.a
            for k, v in run.final.items():
                arrays[f"{pre}/final/{k}"] = v
            for k, v in (run.curve or {}).items():
                arrays[f"{pre}/curve/{k}"] = v
    meta = dict(group=name, scale=scale, spec=_spec(g), command=make_command(scale, name),
                seconds=round(float(seconds), 1), numpy_version=np.__version__,
                made=time.strftime("%Y-%m-%d"))
    path = data_dir(scale) / f"{name}.npz" if path is None else Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, meta=json.dumps(meta), **arrays)
    return path


def load_group(name: str, scale: str | None = None, *, path: Path | None = None):
    """Load a stored group: a list of :class:`StoredRun` (seed order), for
    ``"task-sets"`` a dict ``{P: [TaskSetRun, ...]}``, for ``"task-set-price"`` a dict
    ``{(P, task_set, start, seed): PriceRun}``.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names the command that makes it.
    ValueError
        If the file was made with another specification than the library's now.
    """
    scale = current_scale() if scale is None else check_choice("scale", scale, SCALES)
    g = group(name, scale)
    path = data_dir(scale) / f"{name}.npz" if path is None else Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no stored runs {path}; make them with "
                                f"`{make_command(scale, name)}`")
    with np.load(path) as z:
        meta = json.loads(str(z["meta"]))
        arrays = {k: z[k] for k in z.files if k != "meta"}
    if meta.get("spec") != _spec(g):
        raise ValueError(f"{path} was made with {meta.get('spec')}, but the group {name!r} is "
                         f"now {_spec(g)}; remake it with `{make_command(scale, name)}`")
    if g.kind == "sgd":
        return [StoredRun.from_arrays(arrays, f"seed{seed}", seed, g.late_from)
                for seed in g.seeds]
    if g.kind == "price":
        return g.from_arrays(arrays)
    out = {}
    for P in g.P_values:
        out[P] = []
        for seed in g.seeds_for(P):
            pre = f"{_key(P)}/seed{seed}"
            final, curve = ({k.split("/")[-1]: v for k, v in arrays.items()
                             if k.startswith(f"{pre}/{part}/")} for part in ("final", "curve"))
            out[P].append(TaskSetRun(P, seed, arrays[f"{pre}/steps"], arrays[f"{pre}/a"],
                                     final, curve or None))
    return out
