"""Several seeds of one chapter-7 setting trained as one batched model (for a GPU).

:func:`train_grokking_seeds` trains the configurations ``configs`` (equal but for ``seed``) with
:class:`icllib.nonlinear.batched.BatchedSeeds`: the seeds' weights are stacked, one vmapped
forward and backward serves all of them, and one AdamW over the stacked tensors performs the
``S`` independent runs (AdamW acts element by element).  Each seed keeps its own split, labels
and initialisation, and the result is one :class:`GrokkingRun` per seed, as
:func:`~icllib.nonlinear.grokking.training.train_grokking` returns it.  The runs can differ from
single runs only in the order of floating-point sums (like a run on another CPU, and then they
diverge as chaotic training does); on this CPU the curves of the first 30 steps agree to
``1e-15`` relative and the checkpoints bit for bit (``tests/test_nonlinear_grokking.py`` asserts
1e-12).  ``scripts/make_ch7_runs.py --batched`` uses it for the full scale
(``bench/bench_ch7_full_scale.py``: this is what makes the full plan fit one GPU).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch

from ..batched import BatchedSeeds
from ..circuits import parameters_norm
from ..device import deterministic
from .model import CIRCUIT_NAMES, ModularTransformer
from .task import modular_dataset, with_random_labels
from .training import CURVE_NAMES, GrokkingConfig, GrokkingRun, grokking_loss

__all__ = ["train_grokking_seeds"]


def train_grokking_seeds(configs, *, device: str = "cpu",
                         num_threads: int | None = None) -> list[GrokkingRun]:
    """Train ``configs`` (one setting, several seeds) as one batched model.

    Parameters
    ----------
    configs : sequence of GrokkingConfig
        Equal in every field but ``seed`` (at least one).
    device : str
        ``"cpu"`` or ``"cuda"``.
    num_threads : int, optional
        Torch threads on the CPU.

    Returns
    -------
    list of GrokkingRun
        One per config, in order, with ``seconds`` the shared wall time and
        ``steps_per_second`` the seed-steps per second of the batch.
    """
    configs = list(configs)
    if not configs or not all(isinstance(c, GrokkingConfig) for c in configs):
        raise ValueError("configs must be a non-empty sequence of GrokkingConfig")
    c = configs[0]
    if any(replace(x, seed=c.seed) != c for x in configs):
        raise ValueError("configs must differ only in their seed")
    S = len(configs)
    datas = []
    for x in configs:
        d = modular_dataset(x.p, x.op, x.train_frac, x.seed)
        datas.append(with_random_labels(d, x.seed) if x.random_labels else d)
    with deterministic(device, num_threads):
        models = [ModularTransformer(c.p, c.d_model, c.n_heads, c.d_mlp,
                                     torch.Generator().manual_seed(x.seed)) for x in configs]
        template = ModularTransformer(c.p, c.d_model, c.n_heads, c.d_mlp,
                                      torch.Generator().manual_seed(0))
        batched = BatchedSeeds([m.to(device) for m in models])
        opt = torch.optim.AdamW(batched.params.values(), lr=c.lr, weight_decay=c.weight_decay,
                                betas=c.betas)
        inputs = torch.as_tensor(datas[0].inputs, device=device)
        labels = torch.as_tensor(np.stack([d.labels for d in datas]), device=device)
        tr = torch.as_tensor(np.stack([d.train_idx for d in datas]), device=device)
        te = torch.as_tensor(np.stack([d.test_idx for d in datas]), device=device)
        rows = torch.arange(S, device=device)[:, None]
        x_tr, y_tr, y_te = inputs[tr], labels[rows, tr], labels[rows, te]
        x_all = inputs.expand(S, *inputs.shape)
        n_eval = len(range(0, c.n_steps + 1, c.eval_every)) + (c.n_steps % c.eval_every != 0)
        curves = torch.empty(n_eval, S, len(CURVE_NAMES), dtype=torch.float64, device=device)
        host, state = [], {"done": 0, "copied": 0}
        ck_steps, ck = [], [{k: [] for k in CIRCUIT_NAMES} for _ in range(S)]
        ck_logits = []
        seed_loss = torch.vmap(grokking_loss)

        def evaluate():
            with torch.no_grad():
                logits = batched(x_all)                                   # (S, p^2, p)
                ltr, lte = logits[rows, tr], logits[rows, te]
                norm = parameters_norm(batched.params.values(), batch_dims=1)
                curves[state["done"]] = torch.stack([
                    seed_loss(ltr, y_tr), seed_loss(lte, y_te),
                    (ltr.argmax(-1) == y_tr).double().mean(-1),
                    (lte.argmax(-1) == y_te).double().mean(-1), norm], dim=-1)
            state["done"] += 1

        def checkpoint(step):
            host.append(curves[state["copied"]:state["done"]].cpu())   # one copy per checkpoint
            state["copied"] = state["done"]
            ck_steps.append(step)
            for i in range(S):
                for k, v in batched.model(i, template).circuits().items():
                    ck[i][k].append(v)
            with torch.no_grad():
                ck_logits.append(batched(x_all).to("cpu", torch.float32).numpy())   # (S, p^2, p)

        t0 = time.perf_counter()
        evaluate()
        checkpoint(0)
        for step in range(1, c.n_steps + 1):
            losses = seed_loss(batched(x_tr), y_tr)
            opt.zero_grad(set_to_none=True)
            losses.sum().backward()
            opt.step()
            if step % c.eval_every == 0 or step == c.n_steps:
                evaluate()
            if step % c.checkpoint_every == 0 or step == c.n_steps:
                checkpoint(step)
        wall = time.perf_counter() - t0
    values = torch.cat(host).numpy()                                      # (n_eval, S, 5)
    eval_steps = np.unique(np.r_[np.arange(0, c.n_steps + 1, c.eval_every), c.n_steps])
    out = []
    for i, x in enumerate(configs):
        arr = {k: values[:, i, j].copy() for j, k in enumerate(CURVE_NAMES)}
        out.append(GrokkingRun(
            config=x, eval_steps=eval_steps.astype(np.int64), train_loss=arr["train_loss"],
            test_loss=arr["test_loss"], train_acc=arr["train_acc"], test_acc=arr["test_acc"],
            param_norm=arr["param_norm"], checkpoint_steps=np.asarray(ck_steps, dtype=np.int64),
            checkpoints={k: np.stack(v) for k, v in ck[i].items()}, seconds=wall,
            steps_per_second=S * c.n_steps / wall, model=None, device=str(device),
            logits=np.stack([z[i] for z in ck_logits])))
    return out
