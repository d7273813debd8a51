"""Chapter 6: attention-only transformers learning an induction task (ICL emergence).

Modules: :mod:`.task` (the periodic sequences), :mod:`.model` (the transformer and its QK/OV
circuits), :mod:`.training` (Adam, checkpoints, the chapter's settings), :mod:`.analysis`
(head scores, emergence window, dips), :mod:`.ablation` (losses with heads removed),
:mod:`.factors` (the claims' tests as functions of view, layer, truncation rank, dip test
and anchor), :mod:`.runs` (the shipped run files), :mod:`.reproduction` (what the chapter
concludes from a run, as events), :mod:`.seeds` (several seeds trained as one batched model,
for a GPU); and the chapter's verdicts, :mod:`.claims` (counts under every reading) and
:mod:`.primary` (one stated reading per claim).  Every module but ``claims`` and
``primary`` is re-exported here (``from icllib.nonlinear.induction import make_run``);
those two are imported by their path.
"""

from .ablation import HEAD_ABLATIONS, ablated_losses, head_ablations
from .analysis import (
    CIRCUIT_KINDS,
    HEAD_SCORE_LEVEL,
    ICL_SUCCESS_LOSS,
    Dip,
    EmergenceWindow,
    circuit_kind,
    duplicate_token_score,
    find_dip,
    head_score_masks,
    head_scores,
    head_scores_on_device,
    icl_emergence_window,
    induction_score,
    previous_token_score,
)
from .factors import (
    ANCHORS,
    DIP_MARGIN,
    DIP_TESTS,
    DISTANCE_RANKS,
    LAYERS,
    LEAD_OUTCOMES,
    VIEWS,
    WITH_TOLERANCE,
    anchor_step,
    circuit_curve,
    curve_half,
    dip_shape,
    dip_test,
    find_climb,
    find_local_dip,
    find_near_dip,
    helper_head,
    lead_outcome,
    outcome_at,
)
from .model import (
    MAX_LAYERS,
    POSITIONAL_KINDS,
    AttentionOnlyConfig,
    AttentionOnlyTransformer,
    sinusoidal_positions,
)
from .reproduction import HALF_EVENTS, WINDOW_EVENTS, chapter_events, placebo_partner, run_events
from .runs import (
    CHAPTER,
    RELATIVE_SETTING,
    TRAIN_LOSS_BIN,
    InductionRunSummary,
    load_grid,
    load_runs,
    make_run,
    make_runs_batched,
    parse_run_name,
    relative_grid,
    run_command,
    run_file_name,
    shipped_grid,
    summarize_run,
)
from .seeds import train_attention_only_seeds
from .task import InductionTask
from .training import (
    DEFAULT_INIT_STD,
    DEFAULT_POSITIONAL,
    EVAL_SEED,
    INIT_STDS,
    AttentionOnlyRun,
    TrainConfig,
    check_configs,
    checkpoint_steps,
    demo_settings,
    experiment_seeds,
    experiment_settings,
    sequence_losses,
    token_losses,
    train_attention_only,
)

__all__ = [
    "InductionTask",
    "MAX_LAYERS", "POSITIONAL_KINDS", "AttentionOnlyConfig", "AttentionOnlyTransformer",
    "sinusoidal_positions",
    "EVAL_SEED", "TrainConfig", "AttentionOnlyRun", "checkpoint_steps", "sequence_losses",
    "token_losses", "check_configs",
    "train_attention_only", "experiment_settings", "experiment_seeds", "demo_settings",
    "INIT_STDS", "DEFAULT_INIT_STD", "DEFAULT_POSITIONAL",
    "previous_token_score", "duplicate_token_score", "induction_score", "head_scores",
    "HEAD_SCORE_LEVEL", "CIRCUIT_KINDS", "circuit_kind", "ICL_SUCCESS_LOSS",
    "EmergenceWindow", "icl_emergence_window", "Dip", "find_dip",
    "VIEWS", "LAYERS", "DIP_TESTS", "ANCHORS", "LEAD_OUTCOMES", "DISTANCE_RANKS", "DIP_MARGIN",
    "WITH_TOLERANCE", "find_local_dip", "find_near_dip", "find_climb", "helper_head",
    "circuit_curve", "dip_test", "curve_half", "outcome_at", "lead_outcome", "anchor_step",
    "dip_shape",
    "CHAPTER", "TRAIN_LOSS_BIN", "InductionRunSummary", "summarize_run", "run_file_name",
    "parse_run_name",
    "run_command", "make_run", "make_runs_batched", "load_runs", "shipped_grid", "load_grid",
    "train_attention_only_seeds", "head_score_masks", "head_scores_on_device",
    "RELATIVE_SETTING", "relative_grid", "ablated_losses", "HEAD_ABLATIONS", "head_ablations",
    "WINDOW_EVENTS", "HALF_EVENTS", "run_events", "placebo_partner", "chapter_events",
]
