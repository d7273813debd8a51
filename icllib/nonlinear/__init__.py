"""Non-linear experiments in PyTorch (chapters 6 and 7): a map of the package.

Two experiments, each a package with the same eight core modules (``task``, ``model``,
``training``, ``analysis``, ``factors``, ``runs``, ``reproduction``, ``seeds``), which the
package re-exports, and the chapter's own verdict modules (``primary``; chapter 6b's
``ablation`` and ``claims``; chapter 7's ``progress``), of which only ``ablation`` is
re-exported (the others are imported by their path, e.g.
``from icllib.nonlinear.grokking.primary import primary_results``):

* :mod:`icllib.nonlinear.induction` (chapter 6): attention-only transformers of 1-4 layers on
  an induction task; when in-context learning emerges and what the QK/OV circuits do then.
* :mod:`icllib.nonlinear.grokking` (chapter 7): a one-layer transformer on modular
  arithmetic (Nanda et al. 2023); memorisation, then grokking.

Shared by both:

* :mod:`icllib.nonlinear.circuits`: the one circuit-metric function (effective rank,
  marginal effective rank, subspace distance, rotation, norm of stacked checkpoints) and the
  one parameter norm;
* :mod:`icllib.nonlinear.runs`: the metadata every non-linear run file carries, and the
  names of the book's one run store (:mod:`icllib.runstore`: the file format, its loader and
  the directory scheme ``book/data/<chapter>/<scale>/``);
* :mod:`icllib.nonlinear.reproduction`: events of runs (what a chapter concludes from each),
  stored for the runs regenerated on other kernels and compared with the shipped runs';
* :mod:`icllib.nonlinear.device`: devices and deterministic algorithms (cuBLAS workspace);
* :mod:`icllib.nonlinear.curvature`: the curvature estimators of the loss autocorrelation and
  of parameter norms;
* :mod:`icllib.nonlinear.batched`: several seeds of one configuration trained as one stacked
  model.

The two differ in how an experiment is set up, because the experiments differ: an induction
run is configured by three objects (``AttentionOnlyConfig``, ``InductionTask``,
``TrainConfig``: the model, the data stream and the optimiser are varied independently) and
trained by ``train_attention_only(model, task, train, seed=..., keep_model=False)``; a
grokking run by one ``GrokkingConfig`` that holds its seed (the data set is part of the
experiment: the seed also draws the train/test split) and ``train_grokking(config,
num_threads=None, keep_model=True)`` (a one-layer model, small enough to keep for the live
demo; ``num_threads`` because its full-batch steps run best on a pinned thread count).

Level crossings use :func:`icllib.metrics.first_crossing`, sizes :func:`icllib.scale.pick`;
the exercise checkers of both chapters live in :mod:`icllib.exercises.nonlinear`.  Importing
this package does not import torch (the subpackages do).
"""

__all__: list[str] = []
