"""icllib.nonlinear.grokking.primary: chapter 7's claims at one reading each, every weight
decay against the random-label runs at its own weight decay, read at the placebo window."""

from __future__ import annotations

import numpy as np
import pytest

from icllib.nonlinear.grokking.primary import (
    PRIMARY_READINGS,
    claim_holds,
    primary_counts,
    primary_events,
    primary_results,
)

T, EVERY, EVAL = 4000, 100, 20


def _run(t50=2000, t95=2400, ov_half=2200, peak=2300, grok=True):
    """A synthetic run file: test accuracy jumping at t50/t95 (flat at chance without
    `grok`), an OV distance that halves at `ov_half`, a rotation bump at `peak`."""
    ev = np.arange(0, T + 1, EVAL, dtype=float)
    ck = np.arange(0, T + 1, EVERY, dtype=float)
    acc = np.where(ev < t50, 0.01, np.where(ev < t95, 0.6, 1.0)) if grok else np.full(ev.size,
                                                                                      0.01)
    dist = np.where(ck < ov_half, 0.9, 0.1)
    dist[-1] = 0.0
    rot = np.exp(-ck / 300) + 0.5 * np.exp(-((ck - peak) / 150) ** 2)
    return {"eval_steps": ev, "test_acc": acc, "train_loss": 4.0 * np.exp(-ev / 50),
            "checkpoint_steps": ck, f"OV/distance_to_{T}": np.stack([dist] * 4, axis=1),
            "OV/rotation": np.stack([rot] * 4, axis=1), "meta": {"analysis": {"lag": 2}}}


def test_a_half_time_one_checkpoint_outside_the_jump_is_with_it_two_are_not():
    assert claim_holds("OV with the jump", primary_events(_run(ov_half=1900)))
    assert not claim_holds("OV with the jump", primary_events(_run(ov_half=1800)))
    assert claim_holds("OV with the jump", primary_events(_run(ov_half=2500)))
    assert not claim_holds("OV with the jump", primary_events(_run(ov_half=2600)))


def test_a_control_is_read_at_the_window_of_its_seeds_grokking_run():
    control = _run(grok=False, ov_half=2200, peak=2300)
    assert claim_holds("OV with the jump", primary_events(control)) is None   # no own window
    ev = primary_events(control, (2000.0, 2400.0))
    assert claim_holds("OV with the jump", ev) and claim_holds("rotation peak", ev)


def test_a_claim_the_control_shares_is_not_specific_and_one_it_lacks_is():
    runs = {(1.0, s): _run() for s in range(5)}
    # controls that also halve in the window, but have their rotation bump far from it
    controls = {(1.0, s): _run(grok=False, peak=600) for s in range(5)}
    res = {r.claim: r for r in primary_results(runs, controls)}
    assert res["OV with the jump"].verdict == "holds" and not res["OV with the jump"].specific
    assert res["rotation peak"].specific and res["rotation peak"].p_control < 0.01
    # the in-window claims are tested against their base rate, the others are not
    assert res["rotation peak"].p_base_rate < 0.01
    assert res["train loss early"].p_base_rate is None


def test_weight_decays_are_not_pooled_and_a_missing_control_gives_no_test():
    runs = {**{(1.0, s): _run() for s in range(5)},
            **{(3.0, s): _run(ov_half=3500) for s in range(5)}}
    controls = {(1.0, s): _run(grok=False) for s in range(5)}
    res = {(r.claim, r.weight_decay): r for r in primary_results(runs, controls)}
    assert res["OV with the jump", 1.0].count.k == 5
    assert res["OV with the jump", 3.0].count.k == 0
    assert res["OV with the jump", 3.0].control is None
    assert res["OV with the jump", 3.0].p_control is None
    assert primary_counts(runs)["OV with the jump", 3.0].n == 5


def test_a_control_smaller_than_its_setting_is_refused():
    runs = {(1.0, s): _run() for s in range(5)}
    controls = {(1.0, s): _run(grok=False) for s in range(3)}
    with pytest.raises(ValueError, match="fewer than the setting"):
        primary_results(runs, controls)


def test_every_reading_states_its_reason():
    assert all(r.claim and r.reading and r.why for r in PRIMARY_READINGS.values())
    with pytest.raises(ValueError, match="claim must be one of"):
        claim_holds("grokking", primary_events(_run()))


def test_the_sensitivity_family_corrects_the_best_reading_for_its_size():
    from icllib.nonlinear.grokking.factors import RANKS, distance_key
    from icllib.nonlinear.grokking.primary import OV_VIEWS, sensitivity
    assert distance_key("OV", "final", T) != distance_key("OV", "d_head", T)

    def full(**kw):
        run = _run(**kw)
        d = run[f"OV/distance_to_{T}"]
        for view in OV_VIEWS:
            for rank in RANKS:
                run[distance_key(view, rank, T)] = d
        return run

    runs = {(1.0, s): full() for s in range(5)}
    controls = {(1.0, s): full(grok=False, ov_half=600) for s in range(5)}
    rows = sensitivity(runs, controls, 1.0)
    assert len(rows) == len(OV_VIEWS) * len(RANKS)
    for row in rows:
        assert row.count.k == 5 and row.control.k == 0
        # 5/5 against one half: p = 1/32 raw; Holm over 18 equal p-values multiplies by 18
        assert row.p_half == pytest.approx(1 / 32)
        assert row.p_half_holm == pytest.approx(min(1.0, 18 / 32))
    with pytest.raises(ValueError, match="weight_decay"):
        sensitivity(runs, controls, 3.0)
