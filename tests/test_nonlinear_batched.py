"""S seeds trained as one batched model equal S single runs (icllib.nonlinear.batched)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icllib.nonlinear.batched import BatchedSeeds, train_step  # noqa: E402
from icllib.nonlinear.induction import (  # noqa: E402
    AttentionOnlyConfig,
    AttentionOnlyTransformer,
    InductionTask,
)


def _next_token_loss(logits, tokens):
    V = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V),
                                             tokens[:, 1:].reshape(-1))


def _setting(positional):
    config = AttentionOnlyConfig(n_layers=2, n_heads=2, d_model=16, vocab_size=12, seq_len=16,
                                 positional=positional, init_std=1.0)
    return config, InductionTask(vocab_size=12, seq_len=16, min_period=3, max_period=6)


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_batched_seeds_equal_single_runs(positional):
    # float64, so the only difference is the order of sums: agreement to ~1e-12 relative
    config, task = _setting(positional)
    seeds, steps = (0, 1, 2), 15
    singles = [AttentionOnlyTransformer(config, torch.Generator().manual_seed(s)).double()
               for s in seeds]
    batched = BatchedSeeds(singles)
    opt_b = torch.optim.AdamW(batched.params.values(), lr=3e-3, weight_decay=0.1)
    opts = [torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.1) for m in singles]
    data = [torch.Generator().manual_seed(100 + s) for s in seeds]
    for _ in range(steps):
        tokens = torch.stack([task.sample(8, g)[0] for g in data])          # (S, B, T)
        batched_losses = train_step(batched, opt_b, _next_token_loss, tokens)
        for i, (model, opt) in enumerate(zip(singles, opts)):
            loss = _next_token_loss(model(tokens[i]), tokens[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch.testing.assert_close(batched_losses[i], loss.detach(), rtol=1e-10, atol=0)
    scratch = AttentionOnlyTransformer(config, torch.Generator().manual_seed(9)).double()
    for i, model in enumerate(singles):
        copy_i = batched.model(i, scratch)
        for (name, p), q in zip(model.named_parameters(), copy_i.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-9, atol=1e-12, msg=name)
    # the seeds really differ (a batched run that trained one seed S times would fail above)
    assert not torch.allclose(singles[0].W_QKV, singles[1].W_QKV)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="non-empty sequence"):
        BatchedSeeds([])
    config, _ = _setting("learned")
    batched = BatchedSeeds([AttentionOnlyTransformer(config, torch.Generator().manual_seed(0))])
    with pytest.raises(ValueError, match="i must be"):
        batched.model(3, AttentionOnlyTransformer(config, torch.Generator()))


# ------------------------------------------------- chapter 6: batched runs equal single runs

#: Tolerances of a 2-seed batched run against the two single runs (float32 training, 20 steps).
#: Error model: the two differ only in the order of float32 sums (vmapped products, the loss
#: of the seeds summed before the backward pass, whose gradient is still each seed's own
#: exactly since d(sum)/d(loss_i) = 1).  A reordered sum of n float32 terms changes by about
#: sqrt(n) * 2^-24 ~ 2e-6 relative for the n ~ 10^3-10^4 terms of these products; Adam's update
#: is ~lr * m / sqrt(v), so a gradient perturbed by 2e-6 relative perturbs each update by about
#: as much, and 20 updates from the same start accumulate at most ~20 x that, 4e-5 relative,
#: before the divergence of chaotic training (hundreds of steps) can set in.  RTOL 1e-4 covers
#: it; ATOL 1e-6 for entries near 0 (head scores are float64 reductions of float32 patterns, so
#: they carry the same float32 errors).  The run files' metrics (SVDs of the circuits) get 10x.
#: Observed: on this CPU the batched run equals the single runs bit for bit but for the head
#: scores (float64 summation order, 3e-16); under scripts/other-cpu the test passes too.
BATCHED_RTOL, BATCHED_ATOL = 1e-4, 1e-6


def test_batched_attention_only_runs_equal_single_runs():
    from icllib.nonlinear.induction import (
        TrainConfig,
        head_score_masks,
        head_scores,
        head_scores_on_device,
        summarize_run,
        train_attention_only,
        train_attention_only_seeds,
    )

    config, task = _setting("learned")
    train = TrainConfig(steps=20, batch_size=8, lr=3e-3, n_checkpoints=3, eval_size=64)
    seeds = (0, 3)
    threads, det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        singles = [train_attention_only(config, task, train, seed=s, progress=False)
                   for s in seeds]
        batched = train_attention_only_seeds(config, task, train, seeds, progress=False,
                                             num_threads=1)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(det)
    assert [r.seed for r in batched] == list(seeds)
    for one, many in zip(singles, batched):
        assert np.array_equal(one.steps, many.steps)
        for name in ("train_loss", "icl_loss", "first_period_loss", "param_norm", "qk", "ov",
                     "prev_token_score", "duplicate_token_score", "induction_score"):
            np.testing.assert_allclose(getattr(many, name), getattr(one, name),
                                       rtol=BATCHED_RTOL, atol=BATCHED_ATOL,
                                       err_msg=f"seed {one.seed}: {name}")
        a, b = summarize_run(one), summarize_run(many)
        assert set(a) == set(b)
        for key in a:
            if key != "meta":
                np.testing.assert_allclose(b[key], a[key], rtol=10 * BATCHED_RTOL,
                                           atol=10 * BATCHED_ATOL, err_msg=key)
    # the seeds really differ (a batched run that trained one seed twice would fail above)
    assert not np.allclose(batched[0].qk[-1], batched[1].qk[-1])
    # one implementation: analysis.head_scores is head_scores_on_device on the host, bit for
    # bit, and both equal the definitions written out as loops (float64: only sum order)
    model = AttentionOnlyTransformer(config, torch.Generator().manual_seed(1))
    tokens, mask = task.sample(32, torch.Generator().manual_seed(2))
    with torch.no_grad():
        _, patterns = model(tokens, return_attention=True)
    on_device = head_scores_on_device(patterns, head_score_masks(mask)).numpy()
    np.testing.assert_array_equal(on_device, np.stack(head_scores(patterns, mask)))
    np.testing.assert_allclose(on_device, _head_scores_by_loops(patterns, mask),
                               rtol=1e-12, atol=1e-15)


def _head_scores_by_loops(patterns, mask):
    """prev, dup, ind of every head from the definitions (book chapter 6), position by position:
    the mean attention of query j on j - 1 (j >= 1), and of the queries j >= L_b on the keys
    k <= j with j - k (duplicate token) or j + 1 - k (induction) a positive multiple of L_b."""
    period = (~mask.numpy()).sum(axis=1) + 1
    out = np.zeros((3, len(patterns), patterns[0].shape[1]))
    for layer, attn in enumerate(patterns):
        a = attn.double().numpy()
        B, H, T, _ = a.shape
        out[0, layer] = a[:, :, np.arange(1, T), np.arange(T - 1)].mean(axis=(0, 2))
        n_queries = sum(T - int(L) for L in period)
        for b, L in enumerate(period):
            for j in range(int(L), T):
                for k in range(j + 1):
                    for i, offset in ((1, 0), (2, 1)):
                        gap = j + offset - k
                        if gap >= 1 and gap % L == 0:
                            out[i, layer] += a[b, :, j, k] / n_queries
    return out


def test_batched_attention_only_refuses_bad_seeds():
    from icllib.nonlinear.induction import TrainConfig, train_attention_only_seeds

    config, task = _setting("learned")
    train = TrainConfig(steps=2, batch_size=2, n_checkpoints=2, eval_size=4)
    for bad in ([], [1, 1]):
        with pytest.raises(ValueError, match="seeds must be"):
            train_attention_only_seeds(config, task, train, bad, progress=False)
