"""icllib.nonlinear.induction.primary: one reading per claim, each setting against its own
control, exact tests; and the run-name parser the grouping rests on."""

from __future__ import annotations

import numpy as np
import pytest

from icllib.nonlinear.induction import parse_run_name, run_file_name
from icllib.nonlinear.induction.primary import PRIMARY_READINGS, primary_results
from icllib.verdicts import Count

NAN = float("nan")


def _events(emerged=True, start=1000.0, dip=0.0, half=NAN, norm_half=NAN, acf=0.0, rate=0.1):
    ev = {"emerged": float(emerged), "window_start": start if emerged or start else NAN,
          "dip head / induction layer / global": dip,
          "half head / induction layer / d_head": half, "norm_half": norm_half,
          "acf_hit": acf, "acf_base_rate": rate}
    return ev


def _grid(deep, control, settings=(("learned", 0.1),), depths=(2,), seeds=(0, 1, 2, 3, 4)):
    """Events of every run: `deep(seed)` for the deeper runs, `control(seed)` for depth 1."""
    out = {}
    for positional, std in settings:
        for L in (1, *depths):
            for s in seeds:
                name = run_file_name(L, s, init_std=std, positional=positional)[:-4]
                out[name] = (control if L == 1 else deep)(s)
    return out


def test_parse_run_name_inverts_run_file_name():
    for args in [(2, 0, "run", 0.1, "learned"), (1, 7, "demo", 1.0, "relative")]:
        L, s, prefix, std, p = args
        meta = parse_run_name(run_file_name(L, s, prefix, init_std=std, positional=p))
        assert meta == dict(prefix=prefix, n_layers=L, positional=p, init_std=std, seed=s)
    with pytest.raises(ValueError, match="run file name"):
        parse_run_name("run_L2_learned_seed0")


def test_a_claim_the_control_shares_is_not_specific():
    # the distance leads in every run, deep and one-layer alike: holds, but not specific
    lead = lambda s: _events(half=500.0, start=1000.0)  # noqa: E731
    res = {r.claim: r for r in primary_results(_grid(lead, lead))}
    r = res["distance lead"]
    assert (r.count, r.control) == (Count(5, 5), Count(5, 5))
    assert r.verdict == "holds" and not r.specific and r.p_control == 1.0
    # ICL itself: emerges in every deep run, in no one-layer run: specific
    quiet = lambda s: _events(emerged=False, half=500.0, start=1000.0)  # noqa: E731
    res = {r.claim: r for r in primary_results(_grid(lead, quiet))}
    assert res["only deep"].specific and res["only deep"].p_control == pytest.approx(2**-10)


def test_each_setting_has_its_own_control_and_depths_are_not_pooled():
    settings = (("learned", 0.1), ("sinusoidal", 0.1))
    # the learned controls dip, the sinusoidal ones do not: a pooled control would blur it
    events = _grid(lambda s: _events(dip=1.0), lambda s: _events(dip=0.0), settings=settings,
                   depths=(2, 3))
    for s in range(5):
        events[run_file_name(1, s)[:-4]]["dip head / induction layer / global"] = 1.0
    dips = [r for r in primary_results(events) if r.claim == "dip"]
    assert [(r.positional, r.depth) for r in dips] == [("learned", 2), ("learned", 3),
                                                         ("sinusoidal", 2), ("sinusoidal", 3)]
    assert [r.specific for r in dips] == [False, False, True, True]
    assert all(r.count.n == 5 for r in dips)


def test_a_control_smaller_than_its_setting_is_refused():
    events = _grid(lambda s: _events(), lambda s: _events(), seeds=(0, 1, 2, 3, 4, 5))
    del events[run_file_name(1, 5)[:-4]]
    with pytest.raises(ValueError, match="the control has 5 runs, fewer than"):
        primary_results(events)


def test_in_window_claims_are_tested_against_their_base_rate():
    # 3 of 5 peaks in the window: mixed against one half, but far above a base rate of 0.1
    deep = lambda s: _events(acf=float(s < 3), rate=0.1)  # noqa: E731
    res = {r.claim: r for r in primary_results(_grid(deep, lambda s: _events(acf=0.0)))}
    acf = res["acf peak"]
    assert PRIMARY_READINGS["acf peak"].in_window and acf.verdict == "mixed"
    assert acf.p_base_rate == pytest.approx(1 - sum(
        __import__("scipy").stats.binom.pmf(k, 5, 0.1) for k in range(3)))
    assert acf.p_base_rate < 0.01
    assert all(r.p_base_rate is None for r in res.values() if r.claim != "acf peak")


def test_subspace_first_needs_a_margin_of_two_checkpoints():
    near = lambda s: _events(half=980.0, norm_half=1000.0)   # noqa: E731  within 50 steps
    ahead = lambda s: _events(half=900.0, norm_half=1000.0)  # noqa: E731
    first = {r.claim: r for r in primary_results(_grid(near, near))}["subspace first"]
    assert first.count.k == 0
    first = {r.claim: r for r in primary_results(_grid(ahead, near))}["subspace first"]
    assert first.count.k == 5 and first.control.k == 0
    assert np.isclose(first.p_control, 2**-10)


def test_primary_counts_cover_groups_without_a_control():
    from icllib.nonlinear.induction.claims import only, select
    from icllib.nonlinear.induction.primary import primary_counts

    events = _grid(lambda s: _events(dip=float(s < 2)), lambda s: _events(emerged=False,
                                                                         start=None))
    for s in range(3):      # a setting with no one-layer runs: no verdict, but a count
        events[run_file_name(2, s, positional="relative")[:-4]] = _events(dip=1.0)
    counts = primary_counts(events)
    rel = only(counts, claim="dip", positional="relative", depth=2)
    assert (rel.init_std, rel.count) == (0.1, Count(3, 3))
    assert only(counts, claim="dip", positional="learned", depth=2).count == Count(2, 5)
    shallow = only(counts, claim="only deep", positional="learned", depth=1)
    assert shallow.count == Count(0, 5) and shallow.setting == "learned, init 0.1, 1 layer"
    assert select(counts, claim="dip", depth=1) == []         # no window to read a dip in
    # one row per claim and readable group, claims in the order of PRIMARY_READINGS
    assert [r.claim for r in counts] == sorted((r.claim for r in counts),
                                               key=list(PRIMARY_READINGS).index)
    assert len({(r.claim, r.setting) for r in counts}) == len(counts)
    assert {r.positional for r in primary_results(events)} == {"learned"}


def test_primary_counts_of_two_sets_of_runs_pair_by_claim_and_group():
    """paired matches the rows of two primary_counts tables by claim and group (as the
    chapter compares the quick and the medium runs); groups in only one are left out."""
    from icllib.nonlinear.induction.claims import paired
    from icllib.nonlinear.induction.primary import primary_counts

    small = _grid(lambda s: _events(dip=1.0), lambda s: _events(emerged=False, start=None),
                  seeds=(0, 1, 2))
    large = _grid(lambda s: _events(dip=float(s == 0)),
                  lambda s: _events(emerged=False, start=None),
                  settings=(("learned", 0.1), ("sinusoidal", 0.1)))
    pairs = paired(primary_counts(small), primary_counts(large))
    assert pairs and {(a.positional, b.positional) for a, b in pairs} == {("learned", "learned")}
    assert all((a.claim, a.init_std, a.depth) == (b.claim, b.init_std, b.depth)
               for a, b in pairs)
    dip = next((a, b) for a, b in pairs if a.claim == "dip")
    assert (dip[0].count, dip[1].count) == (Count(3, 3), Count(1, 5))


def test_sensitivity_corrects_the_best_reading_for_the_number_tried():
    from icllib.nonlinear.induction.factors import DIP_TESTS, LAYERS, VIEWS
    from icllib.nonlinear.induction.primary import sensitivity

    def ev(hit):
        e = _events()
        e.update({f"dip {v} / {la} / {t}": 0.0 for v in VIEWS for la in LAYERS
                  for t in DIP_TESTS})
        e["dip summed / layer 1 / near"] = hit
        return e

    events = _grid(lambda s: ev(1.0), lambda s: ev(0.0), seeds=tuple(range(8)))
    (row,) = sensitivity(events, "dip")
    m = len(VIEWS) * len(LAYERS) * len(DIP_TESTS)
    assert row.best == "summed / layer 1 / near" and row.n_readings == m
    assert (row.count, row.control) == (Count(8, 8), Count(0, 8))
    assert row.p_half == pytest.approx(2.0**-8)
    assert row.p_half_holm == pytest.approx(m * 2.0**-8)       # the best of m, corrected
    assert row.p_control_holm == pytest.approx(min(1.0, m * row.p_control))
    with pytest.raises(ValueError, match="claim must be"):
        sensitivity(events, "norm lead")


def test_the_autocorrelation_peak_is_the_flattest_stretch_not_the_noisiest():
    """kappa <= 0: its peak is the stretch where the loss moves smoothly above the batch noise
    (a fall inside the window), its trough the most noise-like stretch.  An estimator that took
    the most curved stretch as the peak (argmin) would miss the window here."""
    from types import SimpleNamespace

    from icllib.nonlinear.induction.primary import acf_peak_event

    rng = np.random.default_rng(0)
    steps = 10.0 * np.arange(400)                       # 4000 steps stored every 10
    loss = 3.0 - 1.5 / (1 + np.exp(-(steps - 2000) / 40)) + 0.01 * rng.normal(size=steps.size)
    run = SimpleNamespace(train_loss_steps=steps, train_loss=loss)
    window = SimpleNamespace(start=1900.0, end=2100.0)
    hit, rate = acf_peak_event(run, window)
    assert hit and 0 < rate < 0.2
    miss, same_rate = acf_peak_event(run, window, extreme="trough")
    assert not miss and same_rate == rate
    with pytest.raises(ValueError, match="extreme"):
        acf_peak_event(run, window, extreme="largest")
