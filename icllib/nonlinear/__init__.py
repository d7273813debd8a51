"""Non-linear experiments in PyTorch (chapters 6 and 7): a map of the package.

Two experiments, each a package of the same five modules (``task``, ``model``, ``training``,
``analysis``, ``runs``), everything re-exported by the package:

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

Level crossings use :func:`icllib.metrics.first_crossing`, sizes :func:`icllib.scale.pick`;
the exercise checkers of both chapters live in :mod:`icllib.exercises.nonlinear`.  Importing
this package does not import torch (the subpackages do).
"""

__all__: list[str] = []
