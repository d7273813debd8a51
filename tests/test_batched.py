"""S seeds trained as one batched model equal S single runs (icllib.nonlinear.batched)."""

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
