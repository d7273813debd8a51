"""The stored SGD runs of chapters 1-5b (icllib.train.stored) are the runs train_sgd makes.

Error model of the comparisons. Curves are stored in float32 (each value within 2**-24 = 6e-8
of itself). The samplers' normals are float32-accurate, and on another CPU numpy's SIMD
float32 sin/cos differ in the last bits (icllib.data.draws): every random number of a run may
differ by ~1e-7 relative between machines, and these differences feed the trajectory. Measured
under scripts/other-cpu: after 300 steps from chapter 3's start the blocks differ by at most
3e-9 (entries of size up to 1); after 4000 steps the late average by 1.2e-9; after a whole
12000-step task-set run the Monte Carlo losses by 7e-8 relative. So every comparison is
relative to the scale of the compared quantity in that run (the largest block entry for the
blocks, its square for the pathway products): a tolerance of 1e-6 of that scale is 300 times
what another CPU changes and fails at the first step of another random stream or another
algorithm (differences of order 1 in the noise, 1e-2 in a Monte Carlo loss).

Chapter 5b's stored "task-set-price" runs are checked the same way: a prefix of a sample of
runs and one whole run regenerate. Chapter 1's "trained-floor" runs (the last tests): a prefix
of the first phase of every run, and one whole run with its averaged model and its loss.
"""

import json

import numpy as np
import pytest

from icllib.data import DataConfig
from icllib.runstore import data_dir, load_run, make_command
from icllib.train import (
    balanced_init,
    mode_products,
    pathway_products,
    random_init,
    stored,
    train_sgd,
)
from icllib.train.task_fitting import PATHWAYS

PREFIX = 300          # steps retrained for every stored run: modes 1 and 2 escape within it
TOL = 1e-6            # of the compared quantity's scale (see the error model above)
PRICE_PREFIX = 1000   # steps retrained per sampled price run: two stored points (0, 500, 1000)
PRICE_NAME = "task-set-price"


def assert_curve_close(got, want, what, scale=None):
    got, want = np.asarray(got, float), np.asarray(want, float)
    scale = np.max(np.abs(want)) if scale is None else scale
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * scale, err_msg=what)


@pytest.mark.parametrize("name", [n for n, g in stored.groups("quick").items()
                                  if isinstance(g, stored.SGDGroup)])
def test_every_stored_sgd_run_regenerates(name):
    g = stored.group(name, "quick")
    runs = stored.load_group(name, "quick")
    assert [r.seed for r in runs] == list(g.seeds)
    for run in runs:
        assert run.steps[-1] == g.steps and run.late_from == g.late_from
        live = g.train(run.seed, steps=PREFIX)
        short = run.prefix(PREFIX)
        np.testing.assert_array_equal(live.steps, short.steps)
        block_scale = np.max(np.abs(live.diagonals))
        assert_curve_close(short.diagonals, live.diagonals, f"{name} seed {run.seed}: blocks",
                           block_scale)
        assert_curve_close(short.loss, live.loss, f"{name} seed {run.seed}: loss")
        for got, want in zip(pathway_products(short), pathway_products(live)):
            assert_curve_close(got, want, f"{name} seed {run.seed}: pathways", block_scale**2)


def test_every_stored_task_set_run_regenerates():
    g = stored.group("task-sets", "quick")
    runs = stored.load_group("task-sets", "quick")
    assert list(runs) == list(g.P_values)
    for P, seeds in runs.items():
        assert [r.seed for r in seeds] == list(g.seeds_for(P))
        for run in seeds:
            live = g.train(P, run.seed, steps=PREFIX)
            keep = run.steps <= PREFIX
            np.testing.assert_array_equal(live.steps, run.steps[keep])
            assert_curve_close(run.a[keep], live.a, f"P = {P}, seed {run.seed}",
                               np.max(np.abs(live.a)))
            assert set(run.final) == ({"test", "train"} if P else {"test"})
            assert (run.curve is not None) == (run.seed == g.seeds[0])


def test_a_whole_task_set_run_regenerates_with_its_losses():
    # the whole chain: 12000 steps, the late average, the Monte Carlo losses drawn from the
    # same generator after training
    g = stored.group("task-sets", "quick")
    run = stored.load_group("task-sets", "quick")[4][0]
    live = g.train(4, run.seed)
    assert_curve_close(run.a, live.a, "a")
    for k in ("test", "train"):
        np.testing.assert_allclose(run.final[k], live.final[k], rtol=1e-5)
        np.testing.assert_allclose(run.curve[k], live.curve[k], rtol=1e-5)


def test_a_whole_fixed_point_run_regenerates_its_late_average():
    name = [n for n in stored.groups("quick") if n.startswith("fixed-point")][0]
    g = stored.group(name, "quick")
    run = stored.load_group(name, "quick")[0]
    live = g.train(run.seed)
    scale = max(np.max(np.abs(b)) for b in live.late_blocks)
    for got, want in zip(run.late_blocks, live.late_blocks):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-7 * scale)
    assert_curve_close(run.a, live.a, "a")


def test_stored_run_matches_the_recording_it_came_from():
    cfg = DataConfig(s=np.array([2.0, 1.0]), N=5)
    rec = train_sgd(cfg, balanced_init(2, 0.1), eta=0.02, B=64, steps=50,
                    rng=np.random.default_rng(3), record_every=2)
    run = stored.StoredRun.from_recording(rec, seed=3, late_from=20)
    assert_curve_close(run.a, mode_products(rec), "a")
    assert_curve_close(run.p, rec.p, "p")
    assert_curve_close(run.q, rec.q, "q")
    for got, want in zip(pathway_products(run), pathway_products(rec)):
        assert_curve_close(got, want, "pathways")
    late = rec.steps >= 20
    np.testing.assert_array_equal(run.late_blocks[1], rec.p2[late].mean(0))
    assert run.prefix(10).steps.tolist() == [0, 2, 4, 6, 8, 10]
    # the two pathways are the diagonal products of chapter 2, not the full products
    np.testing.assert_array_equal(pathway_products(rec)[0],
                                  np.einsum("tii->ti", rec.p2) * np.einsum("tii->ti", rec.q1))


def test_every_run_class_reads_a_mode_as_the_sum_of_both_pathways():
    """Recording, StoredRun and PriceRun: one ``a`` (chapter 2's sum of the two pathways,
    ``mode_products``) and one ``via_p2q1``, ``via_p1q2``, also off the null manifold."""
    cfg = DataConfig(s=np.array([2.0, 1.0, 0.5]), N=5)
    rng = np.random.default_rng(5)
    rec = train_sgd(cfg, random_init(3, 0.3, rng), eta=0.02, B=64, steps=60, rng=rng,
                    record_every=3)
    run = stored.StoredRun.from_recording(rec, seed=5, late_from=0)
    price = stored.PriceRun(None, 0, "random", 5, run.steps, run.diagonals,
                            np.zeros((4, 3, 3), np.float32), None, None)
    diag = {b: np.einsum("tii->ti", getattr(rec, b)) for b in ("p1", "p2", "q1", "q2")}
    via_p2q1, via_p1q2 = diag["p2"] * diag["q1"], diag["p1"] * diag["q2"]
    np.testing.assert_allclose(rec.a, via_p2q1 + via_p1q2, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rec.via_p2q1, via_p2q1, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rec.via_p1q2, via_p1q2, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(rec.a, mode_products(rec))
    for other in (run, price):              # float32 diagonals
        for name in ("a", "via_p2q1", "via_p1q2"):
            assert_curve_close(getattr(other, name), getattr(rec, name), name,
                               np.max(np.abs(rec.a)))
        np.testing.assert_array_equal(other.a, mode_products(other))
        np.testing.assert_array_equal(other.a, other.via_p2q1 + other.via_p1q2)
    np.testing.assert_array_equal(price.a, run.a)
    np.testing.assert_array_equal(price.via_p1q2, run.via_p1q2)
    # off the manifold the p1 q2 pathway is not small: leaving it out is visibly wrong
    assert np.max(np.abs(via_p1q2)) > 0.1 * np.max(np.abs(rec.a))


def test_missing_or_outdated_file_names_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="make_linear_runs.py --scale quick --group "
                                                "floor-N40"):
        stored.load_group("floor-N40", "quick", path=tmp_path / "none.npz")
    src = data_dir("linear", "quick") / "floor-N40.npz"
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta["spec"]["B"] = 1024
    bad = tmp_path / "floor-N40.npz"
    np.savez(bad, meta=json.dumps(meta), **arrays)
    with pytest.raises(ValueError, match="remake it with `python scripts/make_linear_runs.py"):
        stored.load_group("floor-N40", "quick", path=bad)
    with pytest.raises(ValueError, match="name"):
        stored.group("no-such-group", "quick")


def _flat(loaded) -> list:
    """The runs of a loaded group (list, {P: list} or {key: run}) in the order of keys()."""
    if isinstance(loaded, list):
        return loaded
    values = list(loaded.values())
    return [r for v in values for r in v] if isinstance(values[0], list) else values


@pytest.mark.parametrize("name", list(stored.groups("quick")))
def test_every_group_file_is_one_run_file_of_the_store_and_its_arrays_round_trip(name):
    """A group file is one RunSummary of the run store (icllib.runstore), with the store's
    meta and command; the group's from_arrays and to_arrays are inverse on it: the runs
    loaded from the shipped file give back exactly its arrays, names and values."""
    g = stored.group(name, "quick")
    path = data_dir("linear", "quick") / f"{name}.npz"
    summary = load_run(path)
    meta = summary.meta
    assert meta["group"] == name and meta["scale"] == "quick" and meta["spec"] == g.spec()
    assert meta["command"] == make_command("linear", "quick", f"--group {name}")
    assert meta["spec"]["kind"] == g.KIND
    loaded = stored.load_group(name, "quick")
    runs = dict(zip(g.keys(), _flat(loaded)))
    assert len(runs) == len(g.keys()) == len(_flat(loaded))
    arrays = g.to_arrays(runs)
    assert set(arrays) == set(summary.arrays)
    for k, v in arrays.items():
        np.testing.assert_array_equal(v, summary.arrays[k], err_msg=k)


def test_save_group_writes_what_load_group_reads(tmp_path):
    g = stored.group("floor-N40", "quick")
    runs = {r.seed: r for r in stored.load_group("floor-N40", "quick")}
    path = stored.save_group("floor-N40", runs, "quick", seconds=1.234,
                             path=tmp_path / "x" / "floor-N40.npz")
    assert sorted(p.name for p in path.parent.iterdir()) == ["floor-N40.npz"]
    meta = load_run(path).meta
    assert meta["seconds"] == 1.2 and meta["spec"] == g.spec()
    assert meta["command"] == "python scripts/make_linear_runs.py --scale quick --group floor-N40"
    back = stored.load_group("floor-N40", "quick", path=path)
    for a, b in zip(back, runs.values()):
        assert a.seed == b.seed and a.late_from == b.late_from
        np.testing.assert_array_equal(a.diagonals, b.diagonals)
        np.testing.assert_array_equal(np.stack(a.late_blocks), np.stack(b.late_blocks))


# ----------------------------------------------- chapter 5b's "task-set-price" runs


@pytest.fixture(scope="module")
def price_runs():
    return stored.load_group(PRICE_NAME, "quick")


def test_every_price_run_of_the_spec_is_stored(price_runs):
    g = stored.group(PRICE_NAME, "quick")
    assert list(price_runs) == g.keys()
    for (P, _, _, _), run in price_runs.items():
        assert run.steps[0] == 0 and np.all(np.diff(run.steps) == g.store_every)
        if run.diverged_at is None:
            assert run.steps[-1] == g.steps
            assert run.test is not None and (run.train is None) == (P is None)
            assert run.test.ablated.shape == (len(PATHWAYS),)
        else:                      # kept up to the step before SGD diverged, without losses
            assert run.steps[-1] < run.diverged_at <= g.steps
            assert run.test is None and run.train is None


def test_a_diverged_price_run_is_kept_with_the_step_it_diverged_at(price_runs):
    g = stored.group(PRICE_NAME, "quick")
    diverged = [key for key, run in price_runs.items() if run.diverged_at is not None]
    if not diverged:
        pytest.skip("no stored run diverged")
    key = diverged[0]
    live = g.train(*key)
    assert live.diverged_at == price_runs[key].diverged_at
    np.testing.assert_allclose(price_runs[key].diagonals, live.diagonals, rtol=1e-5, atol=1e-7)


def test_a_sample_of_price_runs_regenerates(price_runs):
    g = stored.group(PRICE_NAME, "quick")
    keys = [(None, 0, "balanced", 0), (None, 0, "random", 3), (1, 2, "random", 1),
            (16, 0, "balanced", 1), (256, 3, "random", 0)]
    for key in keys:
        live = g.train(*key, steps=PRICE_PREFIX)
        run = price_runs[key]
        keep = run.steps <= PRICE_PREFIX
        np.testing.assert_array_equal(live.steps, run.steps[keep])
        scale = np.max(np.abs(live.diagonals))
        np.testing.assert_allclose(run.diagonals[keep], live.diagonals, rtol=TOL,
                                   atol=TOL * scale, err_msg=str(key))


def test_the_two_price_starts_differ_and_the_random_one_has_the_balanced_norm():
    g = stored.group(PRICE_NAME, "quick")
    bal, rnd = g.init("balanced", 0), g.init("random", 0)

    def norm(prm):
        return np.sqrt(np.sum(prm.WP_y ** 2) + np.sum(prm.WQ_x ** 2))

    # 4 d^2 = 64 entries of N(0, r^2): the norm is within 30 % of the balanced one
    assert norm(rnd) == pytest.approx(norm(bal), rel=0.3)
    assert np.abs(rnd.p1).max() > 0 and np.abs(bal.p1).max() == 0


def test_a_whole_price_run_regenerates_with_its_losses(price_runs):
    g = stored.group(PRICE_NAME, "quick")
    key = (2, 1, "random", 0)
    live, run = g.train(*key), price_runs[key]
    for which in ("test", "train"):
        a, b = getattr(live, which), getattr(run, which)
        np.testing.assert_allclose([a.loss, *a.ablated, *a.rms], [b.loss, *b.ablated, *b.rms],
                                   rtol=1e-5, err_msg=which)
    np.testing.assert_allclose(run.late_blocks, live.late_blocks, rtol=1e-5, atol=1e-7)


# ----------------------------------------------- chapter 1's "trained-floor" runs

FLOOR_NAME = "trained-floor"


def test_every_trained_floor_run_regenerates():
    g = stored.group(FLOOR_NAME, "quick")
    runs = stored.load_group(FLOOR_NAME, "quick")
    assert list(runs) == g.keys()
    for key, run in runs.items():
        assert run.steps[0] == 0 and run.steps[-1] == g.steps
        assert run.late_blocks.shape == (4, len(g.s), len(g.s)) and np.isfinite(run.loss)
        live = g.train(*key, steps=PREFIX)
        keep = run.steps <= PREFIX
        np.testing.assert_array_equal(live.steps, run.steps[keep])
        assert_curve_close(run.diagonals[keep], live.diagonals, f"{key}: blocks")


def test_a_whole_trained_floor_run_regenerates_its_average_and_loss():
    # both phases, the average over the second one's late steps, then the paired Monte Carlo
    # loss on fresh prompts drawn from the same generator after training
    g = stored.group(FLOOR_NAME, "quick")
    key = (g.N_values[-1], g.seeds[-1])
    run, live = stored.load_group(FLOOR_NAME, "quick")[key], g.train(*key)
    assert_curve_close(run.diagonals, live.diagonals, "blocks")
    scale = np.max(np.abs(live.late_blocks))
    np.testing.assert_allclose(run.late_blocks, live.late_blocks, rtol=0, atol=1e-7 * scale)
    np.testing.assert_allclose(run.loss, live.loss, rtol=1e-6)
