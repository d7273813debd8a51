"""The shipped runs of chapter 6: what a run file holds, how it is made and loaded.

A run is reduced to its curves, head scores and circuit metrics (:func:`summarize_run`) and
stored in the one run-file format of :mod:`icllib.nonlinear.runs`, as
``book/data/ch6/<scale>/run_L{n_layers}_{positional}_std{init_std}_seed{seed}.npz``
(:func:`run_file_name`; the live demo: prefix ``demo``); ``scripts/make_ch6_runs.py`` makes
them (:func:`make_run`; with ``--batched`` the seeds of one setting together,
:func:`make_runs_batched`).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import torch

from ...scale import current_scale
from ..circuits import circuit_metrics, truncated_metrics
from ..runs import RunSummary, data_dir, make_command, missing_runs_command
from ..runs import load_runs as _load_files
from .analysis import EmergenceWindow, icl_emergence_window
from .model import AttentionOnlyConfig, AttentionOnlyTransformer
from .task import InductionTask
from .training import (
    DEFAULT_INIT_STD,
    DEFAULT_POSITIONAL,
    AttentionOnlyRun,
    demo_settings,
    experiment_seeds,
    experiment_settings,
    train_attention_only,
)

__all__ = ["CHAPTER", "TRAIN_LOSS_BIN", "InductionRunSummary", "summarize_run", "run_file_name",
           "parse_run_name",
           "run_command", "make_run", "make_runs_batched", "load_runs", "shipped_grid", "load_grid",
           "RELATIVE_SETTING", "relative_grid"]

CHAPTER = "ch6"

#: train losses are stored as means over bins of this many steps
TRAIN_LOSS_BIN = 10


class InductionRunSummary(RunSummary):
    """A chapter-6 run file (:class:`icllib.nonlinear.runs.RunSummary`).

    Arrays (``C`` checkpoints, ``L`` layers, ``H`` heads): ``steps``, ``icl_loss``,
    ``first_period_loss``, ``param_norm`` (C,); ``train_loss`` binned over
    :data:`TRAIN_LOSS_BIN` steps and ``train_loss_steps`` (the bins' centres);
    ``prev_token_score``, ``duplicate_token_score``, ``induction_score`` (C, L, H); for each
    circuit ``qk`` and ``ov``, per head: ``effective_rank``, ``subspace_distance``, ``norm``
    (C, L, H) and ``marginal_effective_rank`` (C, L, H, len(ks)) (OV: (C, L, H, 1)); for the
    QK circuit per layer, ``qk_concat`` (heads stacked) and ``qk_sum`` (heads summed): the
    same metrics of shape (C, L) and (C, L, 1); and the QK subspace distance at the
    ``"final"`` truncation-rank level (:data:`icllib.nonlinear.circuits.RANKS`):
    ``qk/subspace_distance_final`` (C, L, H), ``qk_concat/subspace_distance_final`` and
    ``qk_sum/subspace_distance_final`` (C, L) (see :func:`summarize_run`).
    """

    @property
    def factors(self) -> dict:
        """The run's experimental factors: ``n_layers``, ``init_std``, ``positional``."""
        m = self.meta["config"]["model"]
        return dict(n_layers=int(m["n_layers"]), init_std=float(m["init_std"]),
                    positional=str(m["positional"]))

    @property
    def n_layers(self) -> int:
        """Number of attention layers."""
        return int(self.meta["config"]["model"]["n_layers"])

    def final_model(self) -> AttentionOnlyTransformer:
        """The trained model at the last checkpoint, rebuilt from the stored ``weights/``
        (files made with ``--weights``), float32 on the CPU, in evaluation use only.

        Raises
        ------
        ValueError
            If the file holds no weights; the message names the command with ``--weights``.
        """
        names = [k for k in self if k.startswith("weights/")]
        if not names:
            raise ValueError(f"this run file holds no weights; remake it with "
                             f"`{self.meta['command']} --weights`")
        config = AttentionOnlyConfig(**self.meta["config"]["model"])
        model = AttentionOnlyTransformer(config, torch.Generator().manual_seed(0))
        model.load_state_dict({k.split("/", 1)[1]: torch.from_numpy(np.asarray(self[k]))
                               for k in names})
        return model.eval()

    def induction_head(self) -> tuple[int, int]:
        """(layer, head) with the largest induction score at the end of training."""
        l, h = np.unravel_index(np.argmax(self.induction_score[-1]),
                                self.induction_score.shape[1:])
        return int(l), int(h)

    @property
    def window(self) -> EmergenceWindow:
        """:func:`icl_emergence_window` of this run's ICL loss (upper level: the task's
        bag-of-tokens loss)."""
        task = InductionTask(**self.meta["config"]["task"])
        return icl_emergence_window(self.steps, self.icl_loss, task.bag_of_tokens_loss())


def summarize_run(run: AttentionOnlyRun, *, command: str = "", scale: str = "quick",
                  ks=(1,), weights: bool = False) -> InductionRunSummary:
    """Reduce a run to its curves, head scores and per-head circuit metrics (what ships).

    The circuit metrics are :func:`icllib.nonlinear.circuits.circuit_metrics` of the QK and
    OV circuits of every head, without truncation (per-head circuits have rank ``<= d_head <
    d_model``, so their row spaces are proper subspaces), the distance taken to the final
    checkpoint, with the marginal effective rank for each ``k`` in ``ks`` (QK; OV and the
    per-layer circuits: only the first ``k``, to keep the files small).  The QK circuit of
    each layer is also measured as a whole (book chapter 6, 'Factors'): ``qk_concat``, the
    heads' circuits stacked one above the other (``H d_model x d_model``; its row space is the
    sum of the heads' key spaces) and ``qk_sum``, their sum (the layer's total score
    ``x_j^T (sum_h QK_h) x_k``); both can have full rank ``d_model``, so their subspace
    distance is truncated to ``rank = d_head`` (and stored at the ``"final"`` truncation-rank
    level too, :func:`icllib.nonlinear.circuits.truncated_metrics`).  Curves are stored in
    float32.

    With ``weights=True`` (a run trained with ``keep_model=True``) the trained model's
    parameters and buffers are stored too, as ``weights/<name>`` (float32), so that
    :meth:`InductionRunSummary.final_model` can rebuild it (e.g. for ablations,
    :mod:`icllib.nonlinear.induction.ablation`).
    """
    ks = [int(k) for k in ks]
    if weights and run.model is None:
        raise ValueError("weights=True needs a run trained with keep_model=True")
    meta = dict(experiment="induction", chapter=CHAPTER, scale=scale, seed=int(run.seed),
                config=dict(task=asdict(run.task), model=asdict(run.model_config),
                            train=asdict(run.train_config)),
                command=str(command), seconds=float(run.seconds),
                steps_per_second=float(run.steps_per_second), torch_version=torch.__version__,
                device=str(run.device), analysis=dict(ks=ks, train_loss_bin=TRAIN_LOSS_BIN))
    nb = len(run.train_loss) // TRAIN_LOSS_BIN
    if nb >= 1:
        tl = run.train_loss[:nb * TRAIN_LOSS_BIN].reshape(nb, TRAIN_LOSS_BIN).mean(axis=1)
        tls = np.arange(nb) * TRAIN_LOSS_BIN + (TRAIN_LOSS_BIN - 1) / 2
    else:
        tl, tls = run.train_loss.copy(), np.arange(len(run.train_loss), dtype=float)
    f32 = np.float32
    arrays = {"steps": run.steps.astype(np.int32)}
    for name in ("icl_loss", "first_period_loss", "param_norm"):
        arrays[name] = getattr(run, name).astype(f32)
    arrays["train_loss"], arrays["train_loss_steps"] = tl.astype(f32), tls.astype(f32)
    for name in ("prev_token_score", "duplicate_token_score", "induction_score"):
        arrays[name] = getattr(run, name).astype(f32)
    for circ, circ_ks in (("qk", ks), ("ov", ks[:1])):
        for name, v in circuit_metrics(getattr(run, circ), ks=circ_ks).items():
            arrays[f"{circ}/{name}"] = v.astype(f32)
    qk = np.asarray(run.qk, dtype=np.float64)                     # (C, L, H, d, d)
    C, Lyr, H, d, _ = qk.shape
    layer_circuits = {"qk_concat": qk.reshape(C, Lyr, H * d, d), "qk_sum": qk.sum(axis=2)}
    for circ, stack in layer_circuits.items():
        for name, v in circuit_metrics(stack, ks=ks[:1], rank=d // H).items():
            arrays[f"{circ}/{name}"] = v.astype(f32)
    # the QK distance at the "final" truncation-rank level too (book chapter 6, 'Factors'): the
    # stored per-layer distance is the "d_head" level, and "none" is 0 at every step (the
    # per-layer views have full rank); a head's untruncated distance is both its "d_head"
    # and its "none" level (a head has rank <= d_head)
    per_layer = ((c, v.reshape(C, Lyr, *v.shape[-2:])) for c, v in layer_circuits.items())
    for circ, stack in (("qk", qk.reshape(C, Lyr * H, d, d)), *per_layer):
        m = truncated_metrics(stack, "final", d // H)
        shape = (C, Lyr, H) if circ == "qk" else (C, Lyr)
        arrays[f"{circ}/subspace_distance_final"] = m["distance"].reshape(shape).astype(f32)
    if weights:
        for name, v in run.model.state_dict().items():
            arrays[f"weights/{name}"] = v.detach().cpu().numpy().astype(f32)
    return InductionRunSummary(meta, arrays)


def run_file_name(n_layers: int, seed: int, prefix: str = "run", *,
                  init_std: float = DEFAULT_INIT_STD, positional: str = DEFAULT_POSITIONAL
                  ) -> str:
    """File name of a shipped run, ``run_L2_learned_std0.1_seed0.npz`` (``prefix`` "demo")."""
    return (f"{prefix}_L{int(n_layers)}_{positional}_std{float(init_std):g}"
            f"_seed{int(seed)}.npz")


def parse_run_name(name: str) -> dict:
    """The inverse of :func:`run_file_name`: ``{"prefix", "n_layers", "positional",
    "init_std", "seed"}`` of a file name or stem (``run_L2_learned_std0.1_seed0[.npz]``).

    Raises
    ------
    ValueError
        If ``name`` is not of that form.
    """
    stem = str(name).removesuffix(".npz")
    parts = stem.split("_")
    try:
        prefix, depth, positional, std, seed = parts
        if not (depth.startswith("L") and std.startswith("std") and seed.startswith("seed")):
            raise ValueError
        out = dict(prefix=prefix, n_layers=int(depth[1:]), positional=positional,
                   init_std=float(std[3:]), seed=int(seed[4:]))
    except ValueError:
        raise ValueError(f"name must be a run file name such as "
                         f"'run_L2_learned_std0.1_seed0.npz', got {name!r}") from None
    return out


def run_command(n_layers: int, seed: int, scale: str, demo: bool = False,
                device: str = "cpu", *, init_std: float = DEFAULT_INIT_STD,
                positional: str = DEFAULT_POSITIONAL, weights: bool = False) -> str:
    """The command line that regenerates one data file."""
    args = (f"--depths {n_layers} --seeds {seed} --init-stds {float(init_std):g} "
            f"--positionals {positional}" + (" --demo" if demo else "")
            + (" --weights" if weights else ""))
    return make_command(CHAPTER, scale, args, device)


def make_run(n_layers: int, seed: int, scale: str | None = None, *, demo: bool = False,
             device: str = "cpu", progress: bool = True, init_std: float = DEFAULT_INIT_STD,
             positional: str = DEFAULT_POSITIONAL, weights: bool = False
             ) -> InductionRunSummary:
    """Train one of the chapter's runs and summarise it (:func:`summarize_run`).

    ``demo=True`` uses :func:`demo_settings` (quick scale) instead of
    :func:`experiment_settings`; ``weights=True`` also stores the trained model.  For runs
    that reproduce the shipped files bit for bit on the same machine, call
    ``torch.set_num_threads(1)`` and :func:`icllib.nonlinear.device.enable_determinism` first.
    """
    scale = current_scale() if scale is None else scale
    factors = dict(init_std=init_std, positional=positional)
    if demo:
        task, model, train = demo_settings(n_layers, **factors)
        scale = "quick"
    else:
        task, model, train = experiment_settings(n_layers, scale, **factors)
    run = train_attention_only(model, task, train, seed=seed, device=device,
                               progress=progress, keep_model=weights)
    return summarize_run(run, command=run_command(n_layers, seed, scale, demo, device,
                                                  weights=weights, **factors),
                         scale=scale, weights=weights)


def make_runs_batched(n_layers: int, seeds, scale: str | None = None, *, device: str = "cpu",
                      progress: bool = True, init_std: float = DEFAULT_INIT_STD,
                      positional: str = DEFAULT_POSITIONAL) -> list[InductionRunSummary]:
    """:func:`make_run` for several seeds of one setting at once, trained as one batched model
    (:func:`~icllib.nonlinear.induction.seeds.train_attention_only_seeds`; for a GPU).

    The summaries are those of :func:`make_run` (same format, same file names); each records
    its single-run command with ``--batched`` appended.  One torch thread on the CPU.
    """
    from .seeds import train_attention_only_seeds

    scale = current_scale() if scale is None else scale
    factors = dict(init_std=init_std, positional=positional)
    task, model, train = experiment_settings(n_layers, scale, **factors)
    runs = train_attention_only_seeds(model, task, train, seeds, device=device,
                                      progress=progress,
                                      num_threads=1 if str(device) == "cpu" else None)
    return [summarize_run(run, command=run_command(n_layers, run.seed, scale, device=device,
                                                   **factors) + " --batched", scale=scale)
            for run in runs]


def load_runs(depths, seeds, *, scale: str | None = None, prefix: str = "run",
              directory=None, init_std: float = DEFAULT_INIT_STD,
              positional: str = DEFAULT_POSITIONAL
              ) -> dict[tuple[int, int], InductionRunSummary]:
    """Load ``{(n_layers, seed): InductionRunSummary}`` from ``book/data/ch6/<scale>/``.

    The runs of one setting of the factors ``init_std`` and ``positional``;
    ``prefix="demo"`` loads the live demo's file(s); ``directory`` overrides the place.

    Raises
    ------
    FileNotFoundError
        Naming the missing files and the command that makes them
        (``scripts/make_ch6_runs.py``).
    """
    scale = current_scale() if scale is None else scale
    directory = data_dir(CHAPTER, scale) if directory is None else directory
    factors = dict(init_std=init_std, positional=positional)
    names = {(int(L), int(s)): run_file_name(L, s, prefix, **factors)
             for L in depths for s in seeds}
    args = f"--init-stds {float(init_std):g} --positionals {positional}"
    command = missing_runs_command(CHAPTER, scale,
                                   args + (" --demo" if prefix == "demo" else ""))
    return _load_files(directory, names, command=command, cls=InductionRunSummary)


def shipped_grid(scale: str | None = None) -> dict[tuple[str, float], dict[int, tuple]]:
    """The runs the chapter reads: ``{(positional, init_std): {n_layers: seeds}}``.

    Medium scale (a few CPU-hours, shipped): the reference setting and sinusoidal positions,
    both at ``init_std`` 0.1, at depths 1-3 with 5 seeds each (the one-layer runs are each
    setting's control).  Quick scale: the reference setting (learned positions,
    ``init_std`` 0.1) at depths 1-2 with 5 seeds and 3-4 with 3 seeds; the three other
    settings of the factors at depths 2-3 with 3 seeds each (34 runs, about 10 minutes of
    CPU time on one core).  Full scale: the same cells with 3 seeds each (30 runs, 10 groups
    of 3 seeds trained as one batched model each, ``scripts/make_ch6_runs.py --batched``;
    every setting at depths 1-4 with 5 seeds and 20 000 steps would need about 27 minutes of
    one H200, this plan at 5000 steps about 3,
    ``bench/bench_ch6_full_scale.py``).
    """
    from ...scale import pick

    five, three = tuple(range(5)), tuple(range(3))
    ref = (DEFAULT_POSITIONAL, DEFAULT_INIT_STD)
    settings = [(p, s) for p in ("learned", "sinusoidal") for s in (0.1, 1.0)]
    quick = {key: ({1: five, 2: five, 3: three, 4: three} if key == ref else
                   {2: three, 3: three}) for key in settings}
    seeds = experiment_seeds("full")
    full = {key: {L: seeds for L in ((1, 2, 3, 4) if key == ref else (2, 3))}
            for key in settings}
    # medium: each setting that carries a verdict at depths 1-3, its one-layer runs its control
    medium = {key: {L: experiment_seeds("medium") for L in (1, 2, 3)}
              for key in (ref, ("sinusoidal", DEFAULT_INIT_STD))}
    return pick(quick=quick, medium=medium, full=full, scale=scale)


#: the setting without a positional shortcut (book chapter 6, 'Relative positions'):
#: nothing positional in the stream, a learned score bias per offset
RELATIVE_SETTING = ("relative", 0.1)


def relative_grid(scale: str | None = None) -> dict[tuple[str, float], dict[int, tuple]]:
    """The relative-position runs the chapter reads, ``{RELATIVE_SETTING: {2: seeds}}``.

    Two layers, ``init_std`` 0.1, the scale's seeds (quick: 0..4); their files hold the
    final weights (``--weights``) for the chapter's ablations.  At the medium scale the
    one-layer runs come too, as the setting's control.
    """
    from ...scale import pick

    seeds = experiment_seeds(scale)
    return {RELATIVE_SETTING: pick(quick={2: seeds}, medium={1: seeds, 2: seeds},
                                   full={2: seeds}, scale=scale)}


def load_grid(scale: str | None = None, directory=None) -> dict[tuple, InductionRunSummary]:
    """Every run of :func:`shipped_grid`: ``{(positional, init_std, n_layers, seed): run}``."""
    out = {}
    for (positional, init_std), depths in shipped_grid(scale).items():
        for L, seeds in depths.items():
            runs = load_runs([L], seeds, scale=scale, directory=directory,
                             init_std=init_std, positional=positional)
            out.update({(positional, init_std, L, s): r for (_, s), r in runs.items()})
    return out
