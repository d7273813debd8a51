"""Chapter 7: grokking in modular arithmetic, after Nanda et al. (2023).

Modules: :mod:`.task` (the modular-arithmetic data), :mod:`.model` (the one-layer transformer
and its checkpointed matrices), :mod:`.training` (full-batch AdamW, the chapter's settings),
:mod:`.analysis` (settle step, rotation peak, Fourier power, timing of a run), :mod:`.runs`
(the shipped run files and the reproduction check).  Everything is re-exported here:
``from icllib.nonlinear.grokking import train_grokking``.
"""

from .analysis import embedding_fourier_power, grokking_timing, rotation_peak, settle_step
from .model import CIRCUIT_NAMES, ModularTransformer
from .runs import (
    CHAPTER,
    REPRODUCTION_TOLERANCES,
    check_reproduces,
    load_runs,
    make_run,
    reproduction_gaps,
    run_command,
    run_file_name,
    summarize_run,
)
from .task import OPERATIONS, ModularDataset, check_op, check_p, check_train_frac, modular_dataset
from .training import (
    WEIGHT_DECAYS,
    GrokkingConfig,
    GrokkingRun,
    experiment_config,
    experiment_seeds,
    full_config,
    quick_config,
    train_grokking,
)

__all__ = [
    "OPERATIONS", "ModularDataset", "modular_dataset", "check_p", "check_op",
    "check_train_frac",
    "CIRCUIT_NAMES", "ModularTransformer",
    "GrokkingConfig", "quick_config", "full_config", "experiment_config", "experiment_seeds",
    "WEIGHT_DECAYS", "GrokkingRun", "train_grokking",
    "settle_step", "rotation_peak", "embedding_fourier_power", "grokking_timing",
    "CHAPTER", "summarize_run", "run_file_name", "run_command", "make_run", "load_runs",
    "REPRODUCTION_TOLERANCES", "reproduction_gaps", "check_reproduces",
]
