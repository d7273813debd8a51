"""Chapter 7: grokking in modular arithmetic, after Nanda et al. (2023).

Modules: :mod:`.task` (the modular-arithmetic data), :mod:`.model` (the one-layer transformer
and its checkpointed matrices), :mod:`.training` (full-batch AdamW, the chapter's settings),
:mod:`.seeds` (several seeds as one batched model), :mod:`.analysis` (settle step, rotation
peak, Fourier power, timing of a run), :mod:`.factors` (truncation rank and aggregation as
factors, half-times and leads), :mod:`.runs` (the shipped run files and the reproduction
check), :mod:`.reproduction` (what the chapter concludes from a run, as events); and the
chapter's own :mod:`.progress` (restricted and excluded loss, after Nanda et al.) and
:mod:`.primary` (the verdicts at one stated reading per claim).  Every module but
``progress`` and ``primary`` is re-exported here (``from icllib.nonlinear.grokking import
train_grokking``); those two are imported by their path.
"""

from .analysis import embedding_fourier_power, grokking_timing, rotation_peak, settle_step
from .factors import (
    FACTOR_MATRICES,
    FINAL_RANK_RTOL,
    NO_SIGNAL,
    PLACES,
    RANKS,
    circuit_views,
    classify_half,
    distance_events,
    distance_key,
    factor_table,
    final_rank,
    float32_rtol,
    rotation_key,
    truncated_metrics,
)
from .model import CIRCUIT_NAMES, ModularTransformer
from .reproduction import run_events
from .runs import (
    CHAPTER,
    REPRODUCTION_TOLERANCES,
    check_reproduces,
    load_controls,
    load_runs,
    make_run,
    make_runs_batched,
    reproduction_gaps,
    run_command,
    run_file_name,
    summarize_run,
)
from .seeds import train_grokking_seeds
from .task import (
    OPERATIONS,
    ModularDataset,
    check_op,
    check_p,
    check_train_frac,
    modular_dataset,
    with_random_labels,
)
from .training import (
    CURVE_NAMES,
    WEIGHT_DECAYS,
    GrokkingConfig,
    GrokkingRun,
    experiment_plan,
    experiment_seeds,
    experiment_settings,
    full_config,
    grokking_loss,
    medium_config,
    quick_config,
    train_grokking,
)

__all__ = [
    "OPERATIONS", "ModularDataset", "modular_dataset", "check_p", "check_op",
    "check_train_frac", "with_random_labels",
    "RANKS", "FINAL_RANK_RTOL", "FACTOR_MATRICES", "final_rank", "distance_key", "rotation_key",
    "truncated_metrics", "distance_events", "NO_SIGNAL", "float32_rtol", "circuit_views",
    "PLACES", "classify_half", "factor_table",
    "CIRCUIT_NAMES", "ModularTransformer",
    "GrokkingConfig", "quick_config", "medium_config", "full_config", "experiment_settings",
    "experiment_seeds",
    "experiment_plan", "WEIGHT_DECAYS", "GrokkingRun", "CURVE_NAMES", "grokking_loss",
    "train_grokking", "train_grokking_seeds",
    "settle_step", "rotation_peak", "embedding_fourier_power", "grokking_timing",
    "CHAPTER", "summarize_run", "run_file_name", "run_command", "make_run", "make_runs_batched",
    "load_runs",
    "load_controls",
    "REPRODUCTION_TOLERANCES", "reproduction_gaps", "check_reproduces", "run_events",
]
