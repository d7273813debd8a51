"""The shipped runs of chapter 7: what a run file holds, how it is made and loaded.

A run is reduced to its curves, the metrics of every checkpointed matrix and the final number
embeddings (:func:`summarize_run`) and stored in the one run-file format of
:mod:`icllib.nonlinear.runs`, as ``book/data/ch7/<scale>/wd{weight_decay:g}_seed{seed}.npz``;
``scripts/make_ch7_runs.py`` makes them (:func:`make_run`).  A regenerated start of a run is
compared with its file on what is stable across CPUs (:func:`check_reproduces`).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import torch

from ...metrics import first_crossing
from ...scale import current_scale
from ...validation import check_int
from ..circuits import circuit_metrics
from ..runs import RunSummary, data_dir, make_command, missing_runs_command
from ..runs import load_runs as _load_files
from .analysis import embedding_fourier_power
from .factors import FINAL_RANK_RTOL, circuit_views, distance_key, rotation_key, truncated_metrics
from .progress import KEY_SHARE, progress_measures
from .task import modular_dataset, with_random_labels
from .training import (
    GrokkingRun,
    experiment_plan,
    experiment_settings,
    train_grokking,
)

__all__ = ["CHAPTER", "summarize_run", "run_file_name", "run_command", "make_run",
           "make_runs_batched", "load_runs",
           "load_controls",
           "REPRODUCTION_TOLERANCES", "reproduction_gaps", "check_reproduces"]

CHAPTER = "ch7"


def summarize_run(run: GrokkingRun, *, command: str = "", scale: str = "quick",
                  reference_steps=None, lag: int = 2, rank: int | None = None,
                  top_frequencies: int = 5, factors: bool = True) -> RunSummary:
    """Everything the chapter needs from a run, small enough to ship (no full checkpoints).

    Arrays: the curves ``eval_steps, train_loss, test_loss, train_acc, test_acc,
    param_norm``; ``checkpoint_steps``; for every matrix of
    :data:`~icllib.nonlinear.grokking.model.CIRCUIT_NAMES` (shape ``(T, H)``, ``H`` = heads
    or 1) ``"<name>/effective_rank"``, ``"<name>/norm"``, ``"<name>/rotation"`` (lag
    ``lag``) and ``"<name>/distance_to_<S>"`` for each ``S`` in ``reference_steps``
    (default: the last checkpoint), all from :func:`icllib.nonlinear.circuits.circuit_metrics`
    with truncation rank ``rank`` (default ``d_head``; book chapter 7, 'The metrics'); the
    same for the derived views of the circuits (:func:`~.factors.circuit_views`: summed,
    concatenated, write side); with ``factors``
    (default) also the distance to the last checkpoint and the rotation at the other two
    truncation-rank levels of :mod:`~icllib.nonlinear.grokking.factors`
    (``"<name>/distance_final_to_<T>"``, ``"<name>/rotation_none"``, ...) and the ranks used
    (``"<name>/rank_final"``, ``"<name>/rank_none"``);
    ``fourier_top_share`` (the share of the embedding's Fourier power in its
    ``top_frequencies`` strongest frequencies, at each checkpoint); ``W_E_final``, the final
    number embeddings (``p x d_model``); when the run recorded its logits (``run.logits``),
    the progress measures of :func:`~.progress.progress_measures` at every checkpoint,
    ``"progress/restricted_loss"``, ``"progress/excluded_loss"``, ``"progress/full_loss"``
    and ``"progress/key_frequencies"``.  Stored in float32.

    Raises
    ------
    ValueError
        If a reference step is not a checkpoint step, or ``lag`` is not below the number of
        checkpoints.
    """
    c = run.config
    rank = c.d_head if rank is None else check_int("rank", rank, 1)
    steps = np.asarray(run.checkpoint_steps)
    reference_steps = [int(steps[-1])] if reference_steps is None else list(reference_steps)
    index = {}
    for S in reference_steps:
        hits = np.flatnonzero(steps == S)
        if hits.size == 0:
            raise ValueError(f"reference_steps must be checkpoint steps; {S!r} is not one")
        index[int(S)] = int(hits[0])
    f32 = np.float32
    arrays = {"eval_steps": run.eval_steps.astype(np.int32),
              "checkpoint_steps": steps.astype(np.int32)}
    for k in ("train_loss", "test_loss", "train_acc", "test_acc", "param_norm"):
        arrays[k] = getattr(run, k).astype(f32)
    stacks = {}
    for name, stack in run.checkpoints.items():
        M = np.asarray(stack, dtype=np.float64)
        stacks[name] = M if M.ndim == 4 else M[:, None]          # (T, H, m, n), H = 1 for W's
        if M.shape[0] != steps.size:
            raise ValueError(f"checkpoints[{name!r}] has {M.shape[0]} entries, "
                             f"expected {steps.size}")
    if "OV" in stacks and "QK" in stacks:      # summed, concatenated, write side (factors)
        stacks.update(circuit_views(stacks))
    for name, M in stacks.items():
        for j, (S, i) in enumerate(index.items()):
            m = circuit_metrics(M, rank=rank, reference=i, lag=lag if j == 0 else None)
            if j == 0:
                for key in ("effective_rank", "norm", "rotation"):
                    arrays[f"{name}/{key}"] = m[key].astype(f32)
            arrays[f"{name}/distance_to_{S}"] = m["subspace_distance"].astype(f32)
        if factors:                                                # the other truncation ranks
            for level in ("final", "none"):
                m = truncated_metrics(M, level, c.d_head, reference=-1, lag=lag)
                arrays[distance_key(name, level, int(steps[-1]))] = m["distance"].astype(f32)
                arrays[rotation_key(name, level)] = m["rotation"].astype(f32)
                arrays[f"{name}/rank_{level}"] = m["rank"].astype(np.int32)
    W_E = run.checkpoints["W_E"]
    share = np.array([np.sort(embedding_fourier_power(W, c.p))[::-1][:top_frequencies].sum()
                      for W in W_E])
    arrays["fourier_top_share"] = share.astype(f32)
    arrays["W_E_final"] = W_E[-1, :c.p].astype(f32)
    if run.logits is not None:                          # Nanda et al.'s progress measures
        data = modular_dataset(c.p, c.op, c.train_frac, c.seed)
        if c.random_labels:
            data = with_random_labels(data, c.seed)
        pm = progress_measures(run.logits, data)
        for k in ("restricted_loss", "excluded_loss", "full_loss"):
            arrays[f"progress/{k}"] = pm[k].astype(f32)
        arrays["progress/key_frequencies"] = pm["key_frequencies"].astype(np.int32)
    meta = dict(experiment="grokking", chapter=CHAPTER, scale=scale, seed=int(c.seed),
                config=asdict(c), command=str(command), seconds=float(run.seconds),
                steps_per_second=float(run.steps_per_second), torch_version=torch.__version__,
                device=str(run.device),
                analysis=dict(metric_rank=rank, lag=lag, top_frequencies=top_frequencies,
                              reference_steps=list(index),
                              factor_ranks=["final", "none"] if factors else [],
                              final_rank_rtol=FINAL_RANK_RTOL,
                              key_share=KEY_SHARE if run.logits is not None else None))
    return RunSummary(meta, arrays)


def run_file_name(weight_decay: float, seed: int, random_labels: bool = False) -> str:
    """File name of a shipped run: ``wd{weight_decay:g}_seed{seed}.npz``, with the prefix
    ``control_`` for the random-label control."""
    name = f"wd{float(weight_decay):g}_seed{int(seed)}.npz"
    return f"control_{name}" if random_labels else name


def run_command(weight_decay: float, seed: int, scale: str, device: str = "cpu",
                random_labels: bool = False, n_steps: int | None = None) -> str:
    """The command line that regenerates one data file (``n_steps``: a non-default length)."""
    return make_command(CHAPTER, scale, f"--seeds {int(seed)} --weight-decays "
                        f"{float(weight_decay):g}" + (" --controls" if random_labels else "")
                        + (f" --steps {int(n_steps)}" if n_steps is not None else ""), device)


def make_run(weight_decay: float, seed: int, scale: str | None = None, *,
             device: str = "cpu", progress: bool = True,
             random_labels: bool = False, n_steps: int | None = None) -> RunSummary:
    """Train one of the chapter's runs and summarise it (:func:`summarize_run`).

    The distances are taken to the last checkpoint and to the checkpoint nearest 80 % of the
    run.  On the CPU the run uses one torch thread (deterministic given the seed; call it
    inside ``threadpoolctl.threadpool_limits(1)`` for one BLAS thread too).
    ``random_labels`` makes the negative control (:class:`GrokkingConfig`); ``n_steps``
    overrides the run's length (the long run at weight decay 0.3).
    """
    scale = current_scale() if scale is None else scale
    extra = {} if n_steps is None else {"n_steps": check_int("n_steps", n_steps, 1)}
    config = experiment_settings(scale, seed=seed, weight_decay=weight_decay,
                                 random_labels=bool(random_labels), **extra)
    T, every = config.n_steps, config.checkpoint_every
    reference_steps = sorted({int(round(0.8 * T / every)) * every, T})
    run = train_grokking(config, progress=progress,
                         num_threads=1 if str(device) == "cpu" else None, device=device,
                         keep_model=False)
    return summarize_run(run, command=run_command(weight_decay, seed, scale, device,
                                                  random_labels, n_steps),
                         scale=scale, reference_steps=reference_steps)


def make_runs_batched(weight_decay: float, seeds, scale: str | None = None, *,
                      device: str = "cpu", random_labels: bool = False,
                      n_steps: int | None = None) -> list[RunSummary]:
    """:func:`make_run` for several seeds at once, trained as one batched model
    (:func:`~icllib.nonlinear.grokking.seeds.train_grokking_seeds`; for a GPU)."""
    from .seeds import train_grokking_seeds

    scale = current_scale() if scale is None else scale
    extra = {} if n_steps is None else {"n_steps": check_int("n_steps", n_steps, 1)}
    configs = [experiment_settings(scale, seed=int(s), weight_decay=weight_decay,
                                   random_labels=bool(random_labels), **extra) for s in seeds]
    T, every = configs[0].n_steps, configs[0].checkpoint_every
    reference_steps = sorted({int(round(0.8 * T / every)) * every, T})
    runs = train_grokking_seeds(configs, device=device,
                                num_threads=1 if str(device) == "cpu" else None)
    return [summarize_run(run, command=run_command(weight_decay, run.config.seed, scale, device,
                                                   random_labels, n_steps) + " --batched",
                          scale=scale, reference_steps=reference_steps) for run in runs]


def load_runs(weight_decays=None, seeds=None, *, scale: str | None = None,
              directory=None) -> dict[tuple[float, int], RunSummary]:
    """Load the grokking runs ``{(weight decay, seed): RunSummary}`` from
    ``book/data/ch7/<scale>/``.

    Defaults: the runs of :func:`experiment_plan` without the controls (or every seed in
    ``seeds`` at every weight decay in ``weight_decays``); ``directory`` overrides the place.

    Raises
    ------
    FileNotFoundError
        Naming the missing files and the command that makes them
        (``scripts/make_ch7_runs.py``).
    """
    scale = current_scale() if scale is None else scale
    directory = data_dir(CHAPTER, scale) if directory is None else directory
    plan = [(wd, s) for wd, s, control in experiment_plan(scale) if not control]
    if weight_decays is not None or seeds is not None:
        wds = sorted({wd for wd, _ in plan}) if weight_decays is None else weight_decays
        seeds = sorted({s for _, s in plan}) if seeds is None else seeds
        plan = [(wd, s) for wd in wds for s in seeds]
    names = {(float(wd), int(s)): run_file_name(wd, s) for wd, s in plan}
    return _load_files(directory, names, command=missing_runs_command(CHAPTER, scale))


def load_controls(*, scale: str | None = None, directory=None) -> dict[int, RunSummary]:
    """Load the random-label controls ``{seed: RunSummary}`` of :func:`experiment_plan`."""
    scale = current_scale() if scale is None else scale
    directory = data_dir(CHAPTER, scale) if directory is None else directory
    names = {int(s): run_file_name(wd, s, True)
             for wd, s, control in experiment_plan(scale) if control}
    command = missing_runs_command(CHAPTER, scale, "--controls")
    return _load_files(directory, names, command=command)


# ------------------------------------------------------------------ reproduction
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
    return np.array([first_crossing(steps, train_loss, 1.0, below=True),
                     first_crossing(steps, train_acc, 0.5)])


def reproduction_gaps(run: GrokkingRun, summary) -> dict:
    """How far a regenerated start of a run is from the shipped ``summary`` of the same config.

    Compares what is stable across CPUs (:data:`REPRODUCTION_TOLERANCES`): the curves over the
    first ``early_steps`` steps, two event steps of memorisation, and the weight norm and
    accuracies at the run's last evaluation.

    Returns
    -------
    dict
        ``early`` (largest relative difference of train/test loss and parameter norm over the
        early steps), ``events`` (largest difference of the event steps, in steps),
        ``final_weight_norm`` (relative), ``final_accuracy`` (absolute, train and test).
    """
    n = run.eval_steps.size
    if n < 2 or not np.array_equal(summary["eval_steps"][:n], run.eval_steps):
        raise ValueError("run.eval_steps must be the first evaluation steps of the summary's run")
    early = run.eval_steps <= REPRODUCTION_TOLERANCES["early_steps"]
    gaps = {"early": max(float(np.max(np.abs(summary[k][:n][early] - getattr(run, k)[early])
                                      / np.abs(summary[k][:n][early])))
                         for k in ("train_loss", "test_loss", "param_norm"))}
    ours = _events(run.eval_steps, run.train_loss, run.train_acc)
    theirs = _events(run.eval_steps, summary["train_loss"][:n], summary["train_acc"][:n])
    if not (np.all(np.isfinite(ours)) and np.all(np.isfinite(theirs))):
        raise ValueError("the run is too short to memorise: regenerate at least 150 steps")
    gaps["events"] = float(np.max(np.abs(ours - theirs)))
    gaps["final_weight_norm"] = float(abs(summary["param_norm"][n - 1] / run.param_norm[-1] - 1))
    gaps["final_accuracy"] = float(max(abs(summary[k][n - 1] - getattr(run, k)[-1])
                                       for k in ("train_acc", "test_acc")))
    return gaps


def check_reproduces(run: GrokkingRun, summary) -> dict:
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
