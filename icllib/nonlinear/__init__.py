"""Non-linear experiments in PyTorch (chapters 6 and 7).

Each experiment lives in its own module and is imported directly, e.g.
``from icllib.nonlinear.attention_only import train_attention_only``.  Importing this
package does not import torch.
"""
