"""Tests for icllib.nonlinear.grokking (chapter 7): data, model, training, metrics, shipped runs.

One short quick-scale run (150 full-batch steps, seed 0, weight decay 1) is trained once per
session and shared by the tests that need a trained model; the whole file runs in well under
a minute on the 2-core machine.
"""

import copy
import json
import math

import numpy as np
import pytest
import torch

from icllib.metrics import first_crossing
from icllib.nonlinear.grokking import (
    CIRCUIT_NAMES,
    GrokkingConfig,
    ModularTransformer,
    check_reproduces,
    embedding_fourier_power,
    modular_dataset,
    quick_config,
    rotation_peak,
    settle_step,
    summarize_run,
    train_grokking,
)
from icllib.nonlinear.runs import data_dir, load_run, save_run

SHIPPED = data_dir("ch7", "quick")
SHORT_STEPS = 150


@pytest.fixture(scope="module")
def short_run():
    """The first SHORT_STEPS steps of the shipped quick run (seed 0, weight decay 1)."""
    return train_grokking(quick_config(n_steps=SHORT_STEPS, seed=0, weight_decay=1.0),
                          progress=False, num_threads=1)


# ------------------------------------------------------------------------------ data
@pytest.mark.parametrize("p,op,frac,seed", [(2, "add", 0.5, 0), (7, "sub", 0.3, 1),
                                            (13, "mul", 0.9, 5), (59, "add", 0.4, 0)])
def test_dataset_every_pair_once_and_split_partitions(p, op, frac, seed):
    d = modular_dataset(p, op, frac, seed)
    a, b, eq = d.inputs.T
    assert d.inputs.shape == (p * p, 3)
    pairs = set(zip(a.tolist(), b.tolist()))
    assert len(pairs) == p * p                                   # every pair, each once
    assert pairs == {(i, j) for i in range(p) for j in range(p)}
    assert np.all(eq == p)                                       # the "=" token
    expected = {"add": (a + b) % p, "sub": (a - b) % p, "mul": (a * b) % p}[op]
    np.testing.assert_array_equal(d.labels, expected)
    tr, te = set(d.train_idx.tolist()), set(d.test_idx.tolist())
    assert not tr & te                                           # disjoint
    assert tr | te == set(range(p * p))                          # together: everything
    assert len(tr) == min(max(round(frac * p * p), 1), p * p - 1)
    assert len(te) >= 1


def test_split_is_deterministic_per_seed_and_changes_with_it():
    d1, d2 = modular_dataset(59, "add", 0.4, 3), modular_dataset(59, "add", 0.4, 3)
    np.testing.assert_array_equal(d1.train_idx, d2.train_idx)
    d3 = modular_dataset(59, "add", 0.4, 4)
    assert not np.array_equal(d1.train_idx, d3.train_idx)
    # pinned: the split is a numpy default_rng permutation, the same on every machine
    np.testing.assert_array_equal(modular_dataset(5, "add", 0.4, 0).train_idx,
                                  np.sort(np.random.default_rng(0).permutation(25)[:10]))


@pytest.mark.parametrize("p", [1, 0, -3])
def test_bad_p_raises(p):
    with pytest.raises(ValueError, match=r"p must be an integer >= 2"):
        modular_dataset(p, "add", 0.3)


@pytest.mark.parametrize("p", [2.5, "7", True, None])
def test_p_of_the_wrong_type_is_a_type_error(p):
    with pytest.raises(TypeError, match=r"p must be an integer >= 2"):
        modular_dataset(p, "add", 0.3)


@pytest.mark.parametrize("frac", [0, 0.0, 1, 1.0, -0.1, 1.5, float("nan"), "0.3", None])
def test_bad_train_fraction_raises(frac):
    message = r"train_frac must be a number in the open interval \(0, 1\)"
    with pytest.raises(ValueError, match=message):
        modular_dataset(11, "add", frac)


@pytest.mark.parametrize("op", ["div", "pow", "+", "", None, "ADD"])
def test_unknown_operation_raises(op):
    with pytest.raises(ValueError, match=r"op must be one of \['add', 'mul', 'sub'\]"):
        modular_dataset(11, op, 0.3)


@pytest.mark.parametrize("field,value,message", [
    ("p", 1, "p must be an integer >= 2"),
    ("train_frac", 1.0, "train_frac must be a number in the open interval"),
    ("op", "div", "op must be one of"),
    ("d_model", 30, "d_model must be a multiple of n_heads"),
    ("lr", 0.0, "lr must be a finite number > 0"),
    ("weight_decay", -1.0, "weight_decay must be a finite number >= 0"),
    ("betas", (0.9, 1.0), "betas must be two numbers in"),
    ("n_steps", 0, "n_steps must be an integer >= 1"),
    ("seed", -1, "seed must be an integer >= 0"),
])
def test_bad_config_raises(field, value, message):
    with pytest.raises(ValueError, match=message):
        GrokkingConfig(**{field: value})


def test_train_rejects_non_config():
    with pytest.raises(TypeError, match="config must be a GrokkingConfig"):
        train_grokking({"p": 5})


# ------------------------------------------------------------------------------ model
def _reference_forward(m, tokens):
    """Plain causal one-layer transformer over all three positions, read at the last one."""
    x = m.W_E[tokens] + m.W_pos                                           # (B, 3, d)
    q = torch.einsum("hed,bsd->bhse", m.W_Q, x)
    k = torch.einsum("hed,bsd->bhse", m.W_K, x)
    v = torch.einsum("hed,bsd->bhse", m.W_V, x)
    scores = torch.einsum("bhse,bhte->bhst", q, k) / math.sqrt(m.d_head)
    causal = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)
    attn = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    z = torch.einsum("bhst,bhte->bshe", attn, v).reshape(*tokens.shape, -1)
    resid = x + z @ m.W_O.T
    resid = resid + torch.relu(resid @ m.W_in.T + m.b_in) @ m.W_out.T + m.b_out
    return (resid @ m.W_U)[:, -1]


def test_forward_equals_full_causal_transformer_and_gradients_agree():
    p = 13
    m = ModularTransformer(p, 24, 3, 40, torch.Generator().manual_seed(1)).double()
    with torch.no_grad():                       # non-zero biases, so they are tested too
        m.b_in.normal_(generator=torch.Generator().manual_seed(2))
        m.b_out.normal_(generator=torch.Generator().manual_seed(3))
    tokens = torch.as_tensor(modular_dataset(p, "add", 0.5, 0).inputs)
    fast, ref = m(tokens), _reference_forward(m, tokens)
    torch.testing.assert_close(fast, ref, rtol=1e-12, atol=1e-12)
    g_fast = torch.autograd.grad(fast.square().sum(), list(m.parameters()))
    g_ref = torch.autograd.grad(ref.square().sum(), list(m.parameters()))
    for a, b in zip(g_fast, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_circuits_have_the_stated_shapes_and_ranks():
    m = ModularTransformer(11, 32, 4, 48, torch.Generator().manual_seed(0))
    c = m.circuits()
    assert set(c) == set(CIRCUIT_NAMES)
    assert c["OV"].shape == c["QK"].shape == (4, 32, 32)
    assert c["W_E"].shape == (12, 32) and c["W_in"].shape == (48, 32)
    assert c["W_out"].shape == (32, 48) and c["W_U"].shape == (32, 11)
    for name in ("OV", "QK"):                   # rank <= d_head = 8 (in exact arithmetic)
        sv = np.linalg.svd(c[name].astype(float), compute_uv=False)
        assert np.all(sv[:, 8:] < 1e-5 * sv[:, :1])
        assert np.all(sv[:, 7] > 1e-3 * sv[:, 0])
    np.testing.assert_allclose(c["OV"][1], (m.W_O[:, 8:16] @ m.W_V[1]).detach().numpy(), rtol=1e-6)


# ------------------------------------------------------------------------------ training
def test_short_run_memorises_the_training_set(short_run):
    """Stated margin: from chance (~1/59) to >= 95% train accuracy in 150 steps, an
    improvement of at least 0.85; test accuracy stays far from 95% (no grokking yet)."""
    r = short_run
    assert r.train_acc[0] < 0.1
    assert r.train_acc[-1] >= 0.95
    assert r.train_acc[-1] - r.train_acc[0] >= 0.85
    assert r.train_loss[-1] < 0.1 * r.train_loss[0]
    assert r.test_acc[-1] < 0.6
    assert r.eval_steps[0] == 0 and r.eval_steps[-1] == SHORT_STEPS
    np.testing.assert_array_equal(r.checkpoint_steps, [0, 50, 100, 150])
    assert r.steps_per_second > 0 and np.all(np.isfinite(r.param_norm))


def test_run_is_deterministic_on_cpu(short_run):
    before = (torch.are_deterministic_algorithms_enabled(), torch.get_num_threads())
    again = train_grokking(quick_config(n_steps=30), progress=False, num_threads=1,
                           keep_model=False)
    assert (torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()) == before
    n = again.eval_steps.size
    np.testing.assert_array_equal(again.eval_steps, short_run.eval_steps[:n])
    for k in ("train_loss", "test_loss", "train_acc", "test_acc", "param_norm"):
        np.testing.assert_array_equal(getattr(again, k), getattr(short_run, k)[:n])
    np.testing.assert_array_equal(again.checkpoints["OV"][0], short_run.checkpoints["OV"][0])


def test_progress_bar_runs(capsys):
    train_grokking(quick_config(p=7, d_model=8, n_heads=2, d_mlp=8, n_steps=3), progress=True,
                   num_threads=1)
    assert "grokking p=7" in capsys.readouterr().err


def test_metrics_run_on_the_checkpoints(short_run):
    r = short_run
    d_head = r.config.d_head
    m = summarize_run(r, reference_steps=[100, 150], lag=1)
    T = r.checkpoint_steps.size
    for name in CIRCUIT_NAMES:
        H = 4 if name in ("OV", "QK") else 1
        er = m[f"{name}/effective_rank"]
        assert er.shape == (T, H) and np.all(er >= 1)
        for S, i in ((100, 2), (150, 3)):
            dist = m[f"{name}/distance_to_{S}"]
            assert dist.shape == (T, H) and np.all((dist >= 0) & (dist <= 1))
            # distance of M(S) to itself: only M(t) is truncated, so what is left is the share
            # of M(S) outside its own top-d_head directions (~0 for the rank-d_head circuits)
            M = r.checkpoints[name][i].astype(float).reshape(H, *r.checkpoints[name].shape[-2:])
            sv = np.linalg.svd(M, compute_uv=False)
            tail = np.sqrt((sv[:, d_head:] ** 2).sum(1) / (sv ** 2).sum(1))
            np.testing.assert_allclose(dist[i], tail, atol=1e-6)
            if name in ("OV", "QK"):
                np.testing.assert_allclose(dist[i], 0.0, atol=1e-5)
        rot = m[f"{name}/rotation"]
        assert np.all(np.isnan(rot[-1])) and np.all((rot[:-1] >= 0) & (rot[:-1] <= 1))
    # the per-head circuits have rank <= d_head: their effective rank cannot exceed it
    assert np.all(m["OV/effective_rank"] <= d_head + 1e-6)
    # training moves the heads' subspaces: the random start is far from step 150's
    assert np.all(m["OV/distance_to_150"][0] > 0.3)
    # the rotation over one checkpoint equals a direct subspace_distance call
    from icllib.metrics import subspace_distance
    ov = r.checkpoints["OV"].astype(float)
    direct = subspace_distance(ov[1, 2], ov[2, 2], rank=d_head)
    assert m["OV/rotation"][1, 2] == pytest.approx(direct)


def test_float32_circuits_need_the_truncation(short_run):
    """Without truncation, float32 rounding makes a rank-d_head circuit numerically full
    rank, so every distance is ~0: the reason summarize_run takes rank = d_head."""
    from icllib.metrics import subspace_distance
    ov = short_run.checkpoints["OV"][:, 0].astype(float)
    assert np.all(subspace_distance(ov, ov[-1]) < 1e-3)
    assert subspace_distance(ov[0], ov[-1], rank=short_run.config.d_head) > 0.3


def test_metrics_reject_bad_reference(short_run):
    with pytest.raises(ValueError, match="reference_steps must be checkpoint steps"):
        summarize_run(short_run, rank=4, reference_steps=[77])


# ------------------------------------------------------------------------------ timing helpers
def test_first_crossing_settle_step_and_rotation_peak():
    steps = np.array([0, 10, 20, 30, 40, 50])
    acc = np.array([0.0, 0.2, 0.6, 0.5, 0.97, 1.0])
    assert first_crossing(steps, acc, 0.5, interpolate=False) == 20
    assert first_crossing(steps, acc, 0.95, interpolate=False) == 40
    assert math.isnan(first_crossing(steps, acc, 1.01, interpolate=False))
    dist = np.array([0.9, 0.05, 0.3, 0.08, 0.02, 0.0])
    assert settle_step(steps, dist, 0.1) == 30                       # the dip at 10 does not count
    assert settle_step(steps, dist, 1.0) == 0
    assert math.isnan(settle_step(steps, np.array([0.5] * 6), 0.1))
    rot = np.array([0.5, 0.1, 0.05, 0.2, 0.04, np.nan])              # decay, then a bump at 30
    step, prominence = rotation_peak(steps, rot)
    assert step == 30 and prominence == pytest.approx(0.15)
    step, prominence = rotation_peak(steps, np.array([5.0, 4, 3, 2, 1, 0]))  # no bump at all
    assert math.isnan(step) and prominence == 0.0


def test_embedding_fourier_power_known_answers():
    p, d = 11, 6
    a = np.arange(p)[:, None]
    rng = np.random.default_rng(0)
    # a pure frequency-3 embedding (cos and sin with arbitrary phases and directions)
    E = (np.cos(2 * np.pi * 3 * a / p) * rng.standard_normal(d)
         + np.sin(2 * np.pi * 3 * a / p) * rng.standard_normal(d))
    power = embedding_fourier_power(np.vstack([E, rng.standard_normal(d)]), p)  # "=" row ignored
    assert power.shape == (6,)
    np.testing.assert_allclose(power, np.eye(6)[3], atol=1e-12)
    # a constant embedding is all frequency 0; a random one sums to 1 and is non-negative
    np.testing.assert_allclose(embedding_fourier_power(np.ones((p, d))), np.eye(6)[0], atol=1e-12)
    w = embedding_fourier_power(rng.standard_normal((p, d)))
    assert np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    # Parseval: with the k / p - k pairing, the powers add up to sum_a ||E_a||^2 before normalising
    E2 = rng.standard_normal((8, d))                                   # even p: k = p/2 unpaired
    F = np.abs(np.fft.fft(E2, axis=0)) ** 2
    raw = F.sum(1)
    expect = np.array([raw[0], raw[1] + raw[7], raw[2] + raw[6], raw[3] + raw[5], raw[4]])
    np.testing.assert_allclose(embedding_fourier_power(E2), expect / expect.sum(), rtol=1e-12)
    with pytest.raises(ValueError, match="at least p = 9 rows"):
        embedding_fourier_power(E2, 9)


# ------------------------------------------------------------------------------ shipped runs
def _shipped_files():
    return sorted(SHIPPED.glob("wd*_seed*.npz"))


def test_shipped_runs_exist_are_small_and_say_how_to_regenerate():
    files = _shipped_files()
    assert len(files) >= 3
    # the whole data folder (runs and the other-kernel events) stays under 2 MB
    assert sum(f.stat().st_size for f in SHIPPED.rglob("*") if f.is_file()) < 2_000_000
    for f in files:
        s = load_run(f)
        assert "scripts/make_ch7_runs.py" in s["meta"]["command"]
        cfg = s["meta"]["config"]
        assert f.name == f"wd{cfg['weight_decay']:g}_seed{cfg['seed']}.npz"


def test_shipped_runs_grok_after_memorising():
    """The finding the chapter rests on: at weight decay >= 1, for every seed, test accuracy
    passes 95%, at least 3x later and 500 steps after train accuracy reaches 100% (at the quick
    setting's weight decay 1: at least 10x later)."""
    checked = 0
    for f in _shipped_files():
        s = load_run(f)
        if s["meta"]["config"]["weight_decay"] < 1.0:
            continue
        t100 = first_crossing(s["eval_steps"], s["train_acc"], 1.0, interpolate=False)
        t95 = first_crossing(s["eval_steps"], s["test_acc"], 0.95, interpolate=False)
        assert np.isfinite(t100) and np.isfinite(t95), f.name
        assert t95 >= max(3 * t100, t100 + 500), f.name
        if s["meta"]["config"]["weight_decay"] == 1.0:
            assert t95 >= 10 * t100, f.name
        checked += 1
    assert checked >= 3


def test_short_run_reproduces_the_shipped_reference(short_run):
    """Regenerated steps 0..150 of seed 0, weight decay 1 against the shipped file, on what is
    stable across CPUs (early curves, memorisation events, final weight norm and accuracies;
    tolerances and their measurement in ``REPRODUCTION_TOLERANCES``). Bitwise on the machine
    that made the file."""
    s = load_run(SHIPPED / "wd1_seed0.npz")
    cfg = dict(s["meta"]["config"], n_steps=SHORT_STEPS, betas=tuple(s["meta"]["config"]["betas"]))
    assert GrokkingConfig(**cfg) == short_run.config
    check_reproduces(short_run, s)


def test_reproduction_check_tells_seeds_apart(short_run):
    """The check is not vacuous: the same config with another seed, or a run perturbed by more
    than the cross-CPU tolerances, fails it."""
    other_seed = train_grokking(quick_config(n_steps=SHORT_STEPS, seed=1, weight_decay=1.0),
                                progress=False, num_threads=1)
    s = load_run(SHIPPED / "wd1_seed0.npz")
    with pytest.raises(AssertionError, match="cross-CPU tolerances"):
        check_reproduces(other_seed, s)
    late = copy.copy(short_run)
    late.train_acc = np.interp(short_run.eval_steps - 3, short_run.eval_steps, short_run.train_acc)
    with pytest.raises(AssertionError, match="events"):      # memorisation 3 steps later
        check_reproduces(late, s)
    with pytest.raises(ValueError, match="eval_steps"):
        check_reproduces(other_seed, {**s, "eval_steps": s["eval_steps"] + 1})


def test_summary_roundtrip(short_run, tmp_path):
    s = summarize_run(short_run, reference_steps=[150], lag=1, command="pytest")
    save_run(s, tmp_path / "x.npz")
    back = load_run(tmp_path / "x.npz")
    assert back["meta"]["command"] == "pytest" and back["meta"]["analysis"]["metric_rank"] == 16
    assert back["meta"]["device"] == "cpu" and back["meta"]["steps_per_second"] > 0
    assert json.loads(json.dumps(back["meta"]))["config"]["p"] == 59
    np.testing.assert_array_equal(back["OV/distance_to_150"], s["OV/distance_to_150"])
    assert back["W_E_final"].shape == (59, 64)
    assert np.all((back["fourier_top_share"] > 0) & (back["fourier_top_share"] <= 1 + 1e-6))


# ------------------------------------------------------------------------------ factors
def test_final_rank_and_float32_cut():
    from icllib.nonlinear.grokking import final_rank
    from icllib.nonlinear.grokking.factors import float32_rtol
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    M = U[:, :3] @ np.diag([1.0, 0.5, 0.02]) @ U[:, 3:6].T
    assert final_rank(M) == 3                    # 0.02 > 1 % of the largest
    assert final_rank(M, rtol=0.05) == 2
    assert float32_rtol((8, 8)) == pytest.approx(8 * np.finfo(np.float32).eps)
    # a float32 rank-3 matrix has rounding noise above float64's cut-off, below float32's
    noisy = M.astype(np.float32).astype(float)
    sv = np.linalg.svd(noisy, compute_uv=False)
    assert sv[3] > 8 * np.finfo(float).eps * sv[0] or sv[3] == 0
    assert final_rank(noisy, float32_rtol(noisy.shape)) == 3


def test_truncated_metrics_levels_on_known_matrices():
    """"none" is identically 0 when the rank is the number of columns; "d_head" is the first
    edition's metric (circuit_metrics); "final" truncates to the reference's own rank, so a
    stack that only changes scale inside one rank-2 row space has distance 0 throughout."""
    from icllib.nonlinear.circuits import circuit_metrics
    from icllib.nonlinear.grokking import truncated_metrics
    rng = np.random.default_rng(1)
    W = rng.standard_normal((6, 12, 5)).astype(np.float32)          # full column rank 5
    out = truncated_metrics(W[:, None], "none", d_head=2, lag=1)
    np.testing.assert_allclose(out["distance"], 0.0, atol=1e-6)
    assert out["rank"].tolist() == [5]
    ref = circuit_metrics(W[:, None], rank=2, lag=1)
    dh = truncated_metrics(W[:, None], "d_head", d_head=2, lag=1)
    np.testing.assert_allclose(dh["distance"], ref["subspace_distance"])
    np.testing.assert_allclose(dh["rotation"], ref["rotation"])
    A, B = rng.standard_normal((7, 2)), rng.standard_normal((2, 9))
    stack = np.stack([A @ np.diag([1.0, 0.3 + t]) @ B for t in range(4)])[:, None]
    fin = truncated_metrics(stack, "final", d_head=5, lag=1)
    assert fin["rank"].tolist() == [2]
    np.testing.assert_allclose(fin["distance"], 0.0, atol=1e-7)
    with pytest.raises(ValueError, match="rank"):
        truncated_metrics(stack, "full", d_head=5)


def test_truncated_metrics_is_circuit_metrics_at_each_levels_rank_and_cut():
    """One metric path: at every level, every head's distance and rotation are
    circuit_metrics (and icllib.metrics.subspace_distance) with the level's r and cut-off,
    to the last bit, for a stack whose heads have different "final" ranks."""
    from icllib.metrics import subspace_distance
    from icllib.nonlinear.circuits import circuit_metrics
    from icllib.nonlinear.grokking import truncated_metrics
    from icllib.nonlinear.grokking.factors import float32_rtol
    rng = np.random.default_rng(2)
    T, m, n = 5, 8, 6

    def rank_r(r):            # singular values 1 .. 0.5: rank r at the 1 % "final" cut
        U = np.linalg.qr(rng.standard_normal((m, r)))[0]
        V = np.linalg.qr(rng.standard_normal((n, r)))[0]
        return U @ np.diag(np.linspace(1.0, 0.5, r)) @ V.T

    heads = [np.stack([rank_r(r) for _ in range(T)]) for r in (1, 3, 3, 6)]
    stack = np.stack(heads, axis=1).astype(np.float32)              # (T, 4, m, n)
    tol32 = float32_rtol(stack.shape)
    for level, d_head in (("final", 2), ("d_head", 2), ("none", 2), ("final", 5)):
        out = truncated_metrics(stack, level, d_head, reference=1, lag=2)
        if level == "final":
            assert out["rank"].tolist() == [1, 3, 3, 6]
        for k in range(stack.shape[1]):
            r = {"final": int(out["rank"][k]), "d_head": d_head, "none": None}[level]
            rtol = None if level == "d_head" else tol32
            M = stack[:, k].astype(np.float64)
            ref = circuit_metrics(M[:, None], rank=r, reference=1, lag=2, rtol=rtol)
            np.testing.assert_array_equal(out["distance"][:, k], ref["subspace_distance"][:, 0])
            np.testing.assert_array_equal(out["rotation"][:, k], ref["rotation"][:, 0])
            np.testing.assert_array_equal(out["distance"][:, k],
                                          subspace_distance(M, M[1], rank=r, rtol=rtol))
            np.testing.assert_array_equal(
                out["rotation"][:-2, k],
                [subspace_distance(M[t], M[t + 2], rank=r, rtol=rtol) for t in range(T - 2)])


def test_random_labels_are_a_fresh_uniform_draw():
    from icllib.nonlinear.grokking import with_random_labels
    data = modular_dataset(59, "add", 0.4, seed=0)
    noisy = with_random_labels(data, 0)
    assert np.array_equal(noisy.inputs, data.inputs)
    assert np.array_equal(noisy.train_idx, data.train_idx)
    # agreement with the true labels is chance: binomial(3481, 1/59), 5 sd = 0.011
    assert abs(np.mean(noisy.labels == data.labels) - 1 / 59) < 0.011
    assert not np.array_equal(with_random_labels(data, 1).labels, noisy.labels)
    assert noisy.labels.min() >= 0 and noisy.labels.max() < 59
    with pytest.raises(ValueError, match="random_labels"):
        quick_config(random_labels=1)


def test_summary_has_every_factor(short_run):
    from icllib.nonlinear.grokking import RANKS, distance_events, distance_key, rotation_key
    s = summarize_run(short_run, reference_steps=[150], lag=1)
    for name in ("OV", "QK", "OV_sum", "QK_sum", "W_E", "W_in", "W_out", "W_U"):
        H = 4 if name in ("OV", "QK") else 1
        for rank in RANKS:
            assert s[distance_key(name, rank, 150)].shape == (short_run.checkpoint_steps.size, H)
            assert rotation_key(name, rank) in s
        e = distance_events(s, name, "d_head")
        assert set(e) >= {"half", "lead_50", "lead_95", "settle", "rotation_peak", "floor"}
    # without truncation W_in and W_U (rank = number of columns) are at distance 0 throughout
    for name in ("W_in", "W_U"):
        np.testing.assert_allclose(s[distance_key(name, "none", 150)], 0.0, atol=1e-6)
    assert s["OV/rank_none"].tolist() == [16] * 4
    np.testing.assert_allclose(
        s["OV_sum/norm"][:, 0], np.linalg.norm(short_run.checkpoints["OV"].astype(float)
                                               .sum(axis=1), axis=(-2, -1)), rtol=1e-6)


def test_experiment_plan_and_shipped_controls():
    from icllib.nonlinear.grokking import experiment_plan, load_controls, load_runs
    plan = experiment_plan("quick")
    assert sum(1 for wd, _, c in plan if wd == 1.0 and not c) == 5
    assert sum(1 for *_, c in plan if c) >= 3
    runs, controls = load_runs(scale="quick"), load_controls(scale="quick")
    assert len(runs) == sum(1 for *_, c in plan if not c) and len(controls) >= 3
    for s in controls.values():
        assert s["meta"]["config"]["random_labels"] is True
        assert "--controls" in s["meta"]["command"]
        # chance is 1/59 = 0.017 with binomial sd 0.003 over the 2089 test pairs
        assert s["test_acc"].max() < 0.017 + 6 * 0.003


def test_batched_seeds_equal_single_runs():
    """Three seeds (and a random-label control) trained as one vmapped model equal the single
    runs up to rounding over 30 steps: AdamW is elementwise, so stacking couples nothing."""
    from icllib.nonlinear.grokking import train_grokking_seeds
    configs = [quick_config(n_steps=30, seed=s, checkpoint_every=10) for s in (0, 2)]
    configs.append(quick_config(n_steps=30, seed=1, checkpoint_every=10, random_labels=True))
    with pytest.raises(ValueError, match="differ only in their seed"):
        train_grokking_seeds(configs)
    for group in (configs[:2], configs[2:]):
        for b, c in zip(train_grokking_seeds(group, num_threads=1), group):
            s = train_grokking(c, progress=False, num_threads=1)
            assert b.config == c and np.array_equal(b.eval_steps, s.eval_steps)
            for k in ("train_loss", "test_loss", "param_norm", "train_acc", "test_acc"):
                np.testing.assert_allclose(getattr(b, k), getattr(s, k), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(b.checkpoints["OV"], s.checkpoints["OV"], rtol=0,
                                       atol=1e-6)
            # the logits of every pair at each checkpoint (for the progress measures)
            assert b.logits.shape == s.logits.shape == (4, c.p * c.p, c.p)
            np.testing.assert_allclose(b.logits, s.logits, rtol=0, atol=1e-5)


# ------------------------------------------------------------------ progress measures
def _wave_logits(p, keys, noise=0.0, seed=0):
    """Logits z[a, b, c] = sum_k cos(w_k (a + b - c)) (+ noise): Nanda et al.'s algorithm."""
    a, b, c = np.meshgrid(*(np.arange(p),) * 3, indexing="ij")
    z = sum(np.cos(2 * np.pi * k * (a + b - c) / p) for k in keys)
    return z + noise * np.random.default_rng(seed).normal(size=z.shape)


def test_key_frequencies_and_split_on_planted_waves():
    from icllib.nonlinear.grokking.progress import (
        key_frequencies,
        split_logits,
        sum_frequency_power,
    )

    p = 13
    z = _wave_logits(p, (2, 5)) + 0.3 * np.cos(2 * np.pi * 3 * (np.arange(p)[:, None, None]
                                                                - np.arange(p)[None, :, None]) / p)
    power = sum_frequency_power(z)
    assert power.shape == (p // 2,) and np.argsort(power)[-2:].tolist() in ([1, 4], [4, 1])
    # the a - b wave at k = 3 is not an a + b wave: it carries no power here
    assert power[2] == pytest.approx(0.0, abs=1e-9)
    assert key_frequencies(z).tolist() == [2, 5]
    restricted, excluded = split_logits(z, [2, 5])
    np.testing.assert_allclose(restricted, _wave_logits(p, (2, 5)) + z.mean(axis=(0, 1)),
                               atol=1e-12)
    np.testing.assert_allclose(excluded, z - _wave_logits(p, (2, 5)), atol=1e-12)
    with pytest.raises(ValueError, match="keys"):
        split_logits(z, [7])


def test_restricted_loss_is_low_and_excluded_high_for_the_fourier_algorithm():
    """A network that computes a + b mod p with waves: the restricted loss keeps its accuracy,
    the excluded loss on the training pairs is chance level; for memorised random logits both
    are bad. The failure this guards: swapping the two ablations, or keeping a - b waves."""
    from icllib.nonlinear.grokking import modular_dataset
    from icllib.nonlinear.grokking.progress import cross_entropy, progress_measures

    p = 13
    data = modular_dataset(p, "add", 0.5, seed=0)
    z = 4.0 * _wave_logits(p, (2, 5))                              # argmax_c = (a + b) mod p
    logits = z.reshape(p * p, p)
    assert np.all(logits.argmax(axis=1) == data.labels)
    pm = progress_measures(np.stack([logits, logits]), data)
    assert pm["key_frequencies"].tolist() == [2, 5]
    assert pm["restricted_loss"][0] == pytest.approx(cross_entropy(logits, data.labels))
    assert pm["excluded_loss"][0] == pytest.approx(np.log(p), rel=1e-9)  # nothing left
    memorised = np.random.default_rng(1).normal(size=(p * p, p))
    pm2 = progress_measures(memorised[None], data, keys=[2, 5])
    assert pm2["restricted_loss"][0] > np.log(p) - 0.1
    assert pm2["full_loss"][0] == pytest.approx(cross_entropy(memorised, data.labels))


def test_circuit_views_are_transposes_sums_and_stacks():
    from icllib.nonlinear.grokking.factors import circuit_views

    rng = np.random.default_rng(0)
    ov, qk = rng.normal(size=(2, 3, 4, 4)), rng.normal(size=(2, 3, 4, 4))
    v = circuit_views({"OV": ov, "QK": qk})
    np.testing.assert_array_equal(v["OV_write"][1, 2], ov[1, 2].T)
    np.testing.assert_allclose(v["OV_sum"][1, 0], ov[1].sum(axis=0))
    np.testing.assert_allclose(v["OV_sum_write"][0, 0], ov[0].sum(axis=0).T)
    np.testing.assert_array_equal(v["OV_cat"][0, 0, 4:8], ov[0, 1])
    np.testing.assert_array_equal(v["OV_cat_write"][0, 0, 8:], ov[0, 2].T)
    # the write side sees the column space: a head that writes one direction has write
    # distance 0 to any rescaling of it while its read side turns
    from icllib.metrics import subspace_distance
    u = np.array([1.0, 0, 0, 0])
    m0, m1 = np.outer(u, [1.0, 0, 0, 0]), np.outer(2 * u, [0, 1.0, 0, 0])
    assert subspace_distance(m0, m1) == pytest.approx(1.0)
    assert subspace_distance(m0.T, m1.T) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="stacks"):
        circuit_views({"OV": ov, "QK": qk[:, :2]})


@pytest.mark.parametrize("args, error, message", [
    ((-1, 24, 3, 40), ValueError, "p must be an integer >= 2, got -1"),
    ((11, 9, 2, 40), ValueError, "d_model must be a multiple of n_heads = 2"),
    ((11, 24, 0, 40), ValueError, "n_heads must be an integer >= 1, got 0"),
    ((11, 24, 3, 40.0), TypeError, "d_mlp must be an integer >= 1, got 40.0"),
])
def test_modular_transformer_names_a_bad_argument(args, error, message):
    """p = -1 used to fail with 'math domain error' and d_model = 9, n_heads = 2 silently built
    heads of 4 dimensions (8 of the 9 used)."""
    with pytest.raises(error, match=message):
        ModularTransformer(*args, torch.Generator().manual_seed(0))
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        ModularTransformer(11, 24, 3, 40, 0)
