"""The book's linear experiments: which groups of long SGD runs chapters 1-5b load, and their
specifications.

Chapters 1-5b compare long full-model SGD runs with the theory (chapter 1's trained models at
N = 10 and 32, the running example's seeds for 6000 steps, chapter 3's runs from the paper's
fixed point, chapter 5's floor at N = 40, chapter 5b's task sets and its price of a finite
set).  Each is a *group*
(:mod:`icllib.train.run_groups`) named here, at each scale (:func:`groups`);
``scripts/make_linear_runs.py`` trains the groups named here and stores them, and a chapter
loads one by name (:func:`icllib.train.stored.load_group`), which checks that the stored
specification is the one named here.  Changing a specification here makes its file outdated:
remake it with the command its error names.
"""

from __future__ import annotations

import numpy as np

from ..examples import RUNNING_EXAMPLE
from ..scale import SCALES, current_scale, pick
from ..theory import paper_fixed_point
from ..validation import check_choice
from .run_groups import FloorGroup, PriceGroup, SGDGroup, TaskSetGroup
from .sgd import auto_sampler

__all__ = ["groups", "group"]


def groups(scale: str | None = None) -> dict:
    """Every stored group of the book at ``scale`` (default: the current scale), by name.

    ``"running-example"``: intro, chapters 2, 4 and 5 (N = 10, B = 2048, seeds 400, 401, ...);
    ``"floor-N40"``: chapter 5's floor at N = 40; ``"fixed-point-B<B>"``: chapter 3's runs
    from the paper's fixed point at two batch sizes; ``"task-sets"``: chapter 5b;
    ``"task-set-price"``: chapter 5b's full-model price of a finite set (:class:`PriceGroup`);
    ``"trained-floor"``: chapter 1's models trained at N = 10 and 32 against the floors
    (:class:`FloorGroup`).
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
    # chapter 1's trained model against the floors L_inf and l*: four seeds at N = 10 and 32,
    # 2000 steps at eta = 0.02 then 2000 at 0.002, averaged over the last 1000
    floor_N = (10, 32)
    out["trained-floor"] = FloorGroup(
        s=s, N_values=floor_N, seeds=(0, 1, 2, 3),
        samplers=tuple(auto_sampler(N, d, True) for N in floor_N), start=0.3, eta=0.02,
        steps=2000, finish_eta=0.002, finish_steps=2000, average_from=1000, B=2048,
        n_test=pick(quick=100_000, full=1_000_000, scale=scale))
    return out


def group(name: str, scale: str | None = None):
    """The specification of one group (see :func:`groups`)."""
    available = groups(scale)
    return available[check_choice("name", name, tuple(available))]
