r"""Groups of the linear model's long SGD runs: what a group specifies, how it trains its runs,
and how they become the arrays of one run file and back (chapters 1-5b).

A *group* is a specification (:class:`SGDGroup`, :class:`TaskSetGroup`, :class:`PriceGroup`,
:class:`FloorGroup`) and the keys of its runs (seeds of the SGD noise streams, with the task
set, start or context length where those vary); every group class does the same five things
(:class:`RunGroup`): its specification as stored (:meth:`~RunGroup.spec`), its runs' keys
(:meth:`~RunGroup.keys`), training one run or all (:meth:`~RunGroup.train_run`,
:meth:`~RunGroup.train_all`), and its runs as the named arrays of one run file and back
(:meth:`~RunGroup.to_arrays`, :meth:`~RunGroup.from_arrays`).  The runs are exactly those of
:func:`icllib.train.train_sgd` with ``rng=numpy.random.default_rng(seed)`` (chapter 1's
:class:`FloorGroup`: ``default_rng([seed, N])``).

What is kept of a run is what the chapters use (:class:`StoredRun`, :class:`TaskSetRun`,
:class:`PriceRun`, :class:`FloorRun`): e.g. the diagonals of the four blocks
``p1, p2, q1, q2`` in the eigenbasis at every recorded step (so every mode's two pathways, book
chapter 2), the batch loss, and the parameters averaged over the late part of the run.  Curves
are stored in float32 (seven significant digits, far below any seed-to-seed spread the
chapters compare with) and read back widened to float64 (:func:`icllib.runstore.load_run`);
the averaged parameters in float64.

Which groups the book has is :mod:`icllib.train.registry`; storing and loading them by name,
:mod:`icllib.train.stored`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from ..data import DataConfig, sample_statistics, sample_task_set
from ..model import Params, predict_from_statistics
from ..theory import converged_loss, prediction_at_convergence
from ..validation import check_choice, check_int
from .finite_tasks import monte_carlo_loss
from .initialisation import balanced_init, random_init
from .sgd import ModeProducts, train_sgd
from .stability import DivergenceError
from .task_fitting import PathwayLosses, mean_pathway_losses

__all__ = ["RunGroup", "StoredRun", "SGDGroup", "TaskSetGroup", "TaskSetRun", "PriceGroup",
           "PriceRun", "FloorGroup", "FloorRun"]

BLOCKS = ("p1", "p2", "q1", "q2")


class RunGroup:
    """What every group of stored runs does; a group class is a frozen dataclass (its fields
    are the specification) that sets :attr:`KIND` and implements :meth:`keys`,
    :meth:`train_run`, :meth:`to_arrays` and :meth:`from_arrays`."""

    #: the group class's tag in a stored specification (``spec()["kind"]``)
    KIND = ""

    def spec(self) -> dict:
        """The specification as a run file stores it (JSON types: tuples become lists), with
        the class's tag :attr:`KIND` as ``"kind"``."""
        return json.loads(json.dumps({**asdict(self), "kind": self.KIND}))

    def keys(self) -> list:
        """Every run's key, in the order of the file."""
        raise NotImplementedError

    def train_run(self, key):
        """Train the run of ``key`` (one of :meth:`keys`)."""
        raise NotImplementedError

    def train_all(self) -> dict:
        """Train every run: ``{key: run}`` in the order of :meth:`keys`."""
        return {key: self.train_run(key) for key in self.keys()}

    def to_arrays(self, runs: dict) -> dict:
        """``{key: run}`` (as :meth:`train_all` makes it) as named arrays of one run file."""
        raise NotImplementedError

    def from_arrays(self, arrays):
        """The runs back from the arrays of :meth:`to_arrays` (the form the chapters load)."""
        raise NotImplementedError


@dataclass(frozen=True)
class StoredRun(ModeProducts):
    """What the chapters use of one SGD run (a :class:`~icllib.train.sgd.Recording`).

    Attributes
    ----------
    seed : int
        Seed of the SGD noise stream, ``numpy.random.default_rng(seed)``.
    steps : ndarray (T,)
        Recorded steps (0 = the start).
    diagonals : ndarray (T, 4, d)
        Diagonals of ``p1, p2, q1, q2`` in the eigenbasis, float32 (float64 once loaded).
    loss : ndarray (T,)
        Batch loss at the recorded steps (the recording's ``loss``), float32 (float64 once
        loaded).
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
class SGDGroup(RunGroup):
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

    KIND = "sgd"

    def keys(self) -> list:
        """The seeds."""
        return list(self.seeds)

    def train_run(self, key) -> StoredRun:
        return self.train(key)

    def train(self, seed: int, steps: int | None = None) -> StoredRun:
        """Train the run of ``seed`` (``steps``: a prefix, e.g. for a reproduction test)."""
        steps = self.steps if steps is None else check_int("steps", steps, 0, self.steps)
        rec = train_sgd(DataConfig(s=np.array(self.s), N=self.N),
                        balanced_init(len(self.s), np.array(self.start)), eta=self.eta,
                        B=self.B, steps=steps, rng=np.random.default_rng(seed),
                        record_every=self.record_every, sampler=self.sampler)
        return StoredRun.from_recording(rec, seed, self.late_from)

    def to_arrays(self, runs: dict) -> dict:
        """``{seed: StoredRun}`` as arrays ``"seed<seed>/<name>"``."""
        arrays = {}
        for seed, run in runs.items():
            arrays.update(run.arrays(f"seed{seed}"))
        return arrays

    def from_arrays(self, arrays) -> list:
        """The runs as a list of :class:`StoredRun`, in the order of the seeds."""
        return [StoredRun.from_arrays(arrays, f"seed{seed}", seed, self.late_from)
                for seed in self.seeds]


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
        Mode amplitudes, both pathways (:func:`mode_products`), float32 (float64 once
        loaded).
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
class FiniteTaskGroup(RunGroup):
    """What chapter 5b's groups share: SGD on the spectrum ``s`` at context ``N`` with step
    ``eta`` and ``B`` prompts per step for ``steps`` steps from the balanced start ``start``;
    :meth:`config` is the data of ``P`` tasks (None: fresh tasks). The subclasses' own fields
    follow these in their specification."""

    s: tuple
    N: int
    eta: float
    B: int
    steps: int
    start: float

    def config(self, P) -> DataConfig:
        return DataConfig(s=np.array(self.s), N=self.N, P=P)


@dataclass(frozen=True)
class TaskSetGroup(FiniteTaskGroup):
    """Chapter 5b's runs: for each ``P``, one task set (seed ``task_seed + P``), SGD seeds.

    For each ``P`` in ``P_values`` (None: fresh tasks) and each seed in ``seeds_for(P)``, SGD
    from the balanced start ``start`` with ``B`` prompts per step for ``steps`` steps; then,
    with the same generator, the Monte Carlo losses of :class:`TaskSetRun`.
    """

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

    KIND = "task-set"

    def seeds_for(self, P) -> tuple:
        return self.seeds if P in self.many_seeds_P else self.seeds[:1]

    def keys(self) -> list:
        """Every run as ``(P, seed)``, in the order of ``P_values``."""
        return [(P, seed) for P in self.P_values for seed in self.seeds_for(P)]

    def train_run(self, key) -> TaskSetRun:
        return self.train(*key)

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
        a = rec.a.astype(np.float32)
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

    @staticmethod
    def prefix(key) -> str:
        P, seed = key
        return f"{'fresh' if P is None else f'P{P}'}/seed{seed}"

    def to_arrays(self, runs: dict) -> dict:
        """``{(P, seed): TaskSetRun}`` as arrays ``"P<P>/seed<seed>/<name>"`` (``"fresh/..."``
        for fresh tasks; the losses as ``.../final/<which>`` and ``.../curve/<which>``)."""
        arrays = {}
        for run in runs.values():
            pre = self.prefix((run.P, run.seed))
            arrays[f"{pre}/steps"], arrays[f"{pre}/a"] = run.steps, run.a
            for k, v in run.final.items():
                arrays[f"{pre}/final/{k}"] = v
            for k, v in (run.curve or {}).items():
                arrays[f"{pre}/curve/{k}"] = v
        return arrays

    def from_arrays(self, arrays) -> dict:
        """The runs as ``{P: [TaskSetRun, ...]}`` (seeds in the order of :meth:`seeds_for`)."""
        out = {}
        for P in self.P_values:
            out[P] = []
            for seed in self.seeds_for(P):
                pre = self.prefix((P, seed))
                final, curve = ({k.split("/")[-1]: v for k, v in arrays.items()
                                 if k.startswith(f"{pre}/{part}/")} for part in ("final", "curve"))
                out[P].append(TaskSetRun(P, seed, arrays[f"{pre}/steps"], arrays[f"{pre}/a"],
                                         final, curve or None))
        return out


@dataclass(frozen=True)
class PriceRun(ModeProducts):
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
        Diagonals of ``p1, p2, q1, q2`` in the eigenbasis at ``steps``, float32 (float64
        once loaded).
    late_blocks : ndarray (4, d, d)
        ``p1, p2, q1, q2`` at the last step, float32 (float64 once loaded).
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

    def last_params(self) -> Params:
        """The model at the last step (eigenbasis)."""
        return Params.from_blocks(*self.late_blocks.astype(float))


_LOSS_FIELDS = ("loss", "loss_se", "ablated", "ablated_se", "rms", "target_rms")


@dataclass(frozen=True)
class PriceGroup(FiniteTaskGroup):
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

    KIND = "price"

    def keys(self) -> list:
        """Every run as ``(P, task_set, start, seed)``, fresh tasks first."""
        out = [(None, 0, st, sd) for st in self.starts for sd in self.fresh_seeds]
        return out + [(P, k, st, sd) for P in self.P_values for k in range(self.n_sets)
                      for st in self.starts for sd in self.seeds]

    def train_run(self, key) -> PriceRun:
        return self.train(*key)

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
        """``{(P, task_set, start, seed): PriceRun}`` as arrays ``"<prefix>/<name>"``."""
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
        """The runs as ``{(P, task_set, start, seed): PriceRun}`` in the order of
        :meth:`keys`."""
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


@dataclass(frozen=True)
class FloorRun:
    """One run of chapter 1's trained model on the floor (:class:`FloorGroup`).

    Attributes
    ----------
    N : int
        Context length.
    seed : int
        The run's seed (its generator is ``numpy.random.default_rng([seed, N])``).
    steps : ndarray (T,)
        Recorded steps of the first phase (every ``record_every``).
    diagonals : ndarray (T, 4, d)
        Diagonals of ``p1, p2, q1, q2`` in the eigenbasis at ``steps``, float32 (float64 once
        loaded).
    late_blocks : ndarray (4, d, d) or None
        ``p1, p2, q1, q2`` averaged over the second phase from step ``average_from`` on,
        float64 (None for a prefix, :meth:`FloorGroup.train` with ``steps``).
    loss : float
        Expected loss of the averaged model on fresh prompts: ``L_inf`` plus the mean
        paired difference (NaN for a prefix).
    """

    N: int
    seed: int
    steps: np.ndarray
    diagonals: np.ndarray
    late_blocks: np.ndarray | None
    loss: float

    def late_params(self) -> Params:
        """The averaged model as :class:`~icllib.model.Params` (eigenbasis)."""
        if self.late_blocks is None:
            raise ValueError("a prefix of a run has no averaged model")
        return Params.from_blocks(*np.asarray(self.late_blocks, float))


@dataclass(frozen=True)
class FloorGroup(RunGroup):
    """Chapter 1's SGD-trained model against the floors: for each ``N`` and seed, two phases
    of SGD from the balanced start and the averaged model's expected loss.

    Each run uses one generator, ``rng = numpy.random.default_rng([seed, N])``, throughout:
    ``train_sgd(DataConfig(s=s, N=N), balanced_init(d, start), eta=eta, B=B, steps=steps,
    rng=rng)``, then from its parameters ``finish_steps`` steps at ``finish_eta`` recorded at
    every step, the blocks averaged over the records of steps ``>= average_from``; then
    ``n_test`` fresh prompts (:func:`icllib.data.sample_statistics`, same generator) give the
    loss ``L_inf(s, N)`` plus the mean over the prompts of the model's loss minus the
    preconditioned estimator's (whose expected loss is ``L_inf`` exactly, so the paired
    difference has a much smaller error than the model's loss alone).  The sampler of each
    ``N`` (``samplers``, aligned with ``N_values``) is the one ``"auto"`` picks
    (:func:`icllib.train.auto_sampler`).  The first phase is recorded every
    ``record_every`` steps (recording draws no random numbers).
    """

    s: tuple
    N_values: tuple
    seeds: tuple
    samplers: tuple
    start: float
    eta: float
    steps: int
    finish_eta: float
    finish_steps: int
    average_from: int
    B: int
    n_test: int
    record_every: int = 50

    KIND = "floor"

    def keys(self) -> list:
        """Every run as ``(N, seed)``, in the order of ``N_values``."""
        return [(N, seed) for N in self.N_values for seed in self.seeds]

    def train_run(self, key) -> FloorRun:
        return self.train(*key)

    def train(self, N: int, seed: int, steps: int | None = None) -> FloorRun:
        """Train and evaluate one run (``steps``: a prefix of the first phase, no loss)."""
        short = steps is not None
        steps = self.steps if steps is None else check_int("steps", steps, 0, self.steps)
        sampler = self.samplers[list(self.N_values).index(N)]
        cfg, rng = DataConfig(s=np.array(self.s), N=N), np.random.default_rng([seed, N])
        d = len(self.s)
        first = train_sgd(cfg, balanced_init(d, self.start), eta=self.eta, B=self.B,
                          steps=steps, rng=rng, record_every=self.record_every,
                          sampler=sampler)
        diagonals = np.stack([np.einsum("tii->ti", getattr(first, b)) for b in BLOCKS],
                             axis=1).astype(np.float32)
        if short:
            return FloorRun(N, seed, first.steps.copy(), diagonals, None, float("nan"))
        finish = train_sgd(cfg, first.params, eta=self.finish_eta, B=self.B,
                           steps=self.finish_steps, rng=rng, record_every=1, sampler=sampler)
        late = finish.steps >= self.average_from
        averaged = np.stack([getattr(finish, b)[late].mean(axis=0) for b in BLOCKS])
        test = sample_statistics(cfg, self.n_test, rng)
        y_model = predict_from_statistics(test.Sigma_hat, test.W, test.xq,
                                          Params.from_blocks(*averaged), N)
        y_pc = prediction_at_convergence(test.W, test.Sigma_hat, test.xq, cfg.Sigma_x, N)
        diff = 0.5 * np.sum((y_model - test.target) ** 2 - (y_pc - test.target) ** 2, axis=-1)
        return FloorRun(N, seed, first.steps.copy(), diagonals, averaged,
                        float(converged_loss(np.array(self.s), N) + diff.mean()))

    @staticmethod
    def prefix(key) -> str:
        N, seed = key
        return f"N{N}/seed{seed}"

    def to_arrays(self, runs: dict) -> dict:
        """``{(N, seed): FloorRun}`` as arrays ``"N<N>/seed<seed>/<name>"``."""
        arrays = {}
        for key, run in runs.items():
            pre = self.prefix(key)
            arrays[f"{pre}/steps"], arrays[f"{pre}/diagonals"] = run.steps, run.diagonals
            arrays[f"{pre}/late_blocks"] = run.late_blocks
            arrays[f"{pre}/loss"] = np.array(run.loss)
        return arrays

    def from_arrays(self, arrays) -> dict:
        """The runs as ``{(N, seed): FloorRun}`` in the order of :meth:`keys`."""
        out = {}
        for key in self.keys():
            pre = self.prefix(key)
            out[key] = FloorRun(*key, steps=arrays[f"{pre}/steps"],
                                diagonals=arrays[f"{pre}/diagonals"],
                                late_blocks=arrays[f"{pre}/late_blocks"],
                                loss=float(arrays[f"{pre}/loss"]))
        return out
