"""The induction task of chapter 6: periodic sequences with a random period.

Each sequence is periodic: a *pattern* of ``L`` distinct tokens drawn without replacement
from a vocabulary of ``vocab_size`` tokens, repeated until the sequence has ``seq_len``
tokens.  The period ``L`` is drawn per sequence, uniformly from
``min_period .. max_period``.  The model predicts every next token.

* Inside the first period (targets at positions ``< L``) the next token is fresh: no
  context can predict it beyond "a token not seen yet".
* From the second period on (targets at positions ``>= L``) the next token is fully
  determined by the context: find the earlier occurrence of the current token and copy
  the token that followed it.  This is the *induction* algorithm of Olsson et al. (2022),
  and the loss on these positions is the **ICL loss**.

Why this task.  A one-layer attention-only model cannot implement induction: the
attention score between the query at position ``j`` and a key at position ``k`` sees only
the token and position *at* ``k``, while induction needs the token at ``k - 1``.  With a
*fixed* period a single layer could cheat with a purely positional head (attend to
``j - L + 1``); drawing ``L`` per sequence removes that shortcut.  What remains for one
layer are context statistics: guess a token of the pattern (loss ``E[log L]``,
:meth:`InductionTask.bag_of_tokens_loss`), better one not among the last few tokens
(:meth:`InductionTask.exclusion_loss`).  A two-layer model composes a previous-token head
with an induction head (K-composition) and drives the ICL loss towards zero.  Distinct
pattern tokens make the induction answer unambiguous.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ...validation import check_int

__all__ = ["InductionTask"]


@dataclass(frozen=True)
class InductionTask:
    """Periodic sequences of distinct random tokens with a random period.

    Parameters
    ----------
    vocab_size : int
        Number of tokens, ``>= max_period`` (the pattern's tokens are distinct).
    seq_len : int
        Tokens per sequence, ``>= 2 * max_period`` so every sequence repeats its pattern
        at least once.
    min_period, max_period : int
        The period ``L`` is uniform on ``min_period .. max_period``; ``2 <= min_period
        <= max_period``.
    """

    vocab_size: int = 16
    seq_len: int = 24
    min_period: int = 4
    max_period: int = 10

    def __post_init__(self):
        check_int("vocab_size", self.vocab_size, 2)
        check_int("min_period", self.min_period, 2)
        check_int("max_period", self.max_period, self.min_period)
        if self.max_period > self.vocab_size:
            raise ValueError(
                f"max_period must be <= vocab_size={self.vocab_size} (pattern tokens are "
                f"distinct), got {self.max_period}"
            )
        check_int("seq_len", self.seq_len, 2 * self.max_period)

    def sample(self, batch_size: int, generator: torch.Generator):
        """Draw a batch.

        Returns
        -------
        tokens : LongTensor, shape (batch_size, seq_len)
        icl_mask : BoolTensor, shape (batch_size, seq_len - 1)
            ``icl_mask[b, j]`` is True when the target ``tokens[b, j + 1]`` is determined by
            the context (position ``j + 1 >= L_b``).
        """
        batch_size = check_int("batch_size", batch_size, 1)
        V, T = self.vocab_size, self.seq_len
        perm = torch.rand(batch_size, V, generator=generator).argsort(dim=1)
        period = torch.randint(self.min_period, self.max_period + 1, (batch_size, 1),
                               generator=generator)
        pos = torch.arange(T).unsqueeze(0)
        tokens = perm.gather(1, pos % period)
        icl_mask = pos[:, 1:] >= period
        return tokens, icl_mask

    def bag_of_tokens_loss(self) -> float:
        """Mean ICL loss (nats) of the best "no induction" guess: uniform over the pattern.

        For a target at position ``t >= L`` in period ``L``, guessing uniformly over the
        ``L`` pattern tokens costs ``log L`` nats; this averages that over the positions
        and periods (an upper bound on what one layer can reach, not a lower bound).
        """
        tot, cnt = 0.0, 0
        for L in range(self.min_period, self.max_period + 1):
            n = self.seq_len - L
            tot += n * math.log(L)
            cnt += n
        return tot / cnt

    def exclusion_loss(self, m: int) -> float:
        """Mean ICL loss (nats) of guessing among the context's tokens except the last ``m``.

        Within a period the tokens are distinct, so the next token is never one of the
        last ``L - 1`` tokens, while it *is* the token ``L - 1`` steps back.  A fixed window
        that never excludes the answer therefore has ``m <= min_period - 1``; excluding the
        last ``m`` tokens (the current one included) and guessing uniformly among the other
        ``L - m`` pattern tokens costs ``log(L - m)``, averaged over targets and periods.
        No induction is needed: one attention layer can copy the context's tokens and
        suppress the recent ones.  ``m = 0`` is :meth:`bag_of_tokens_loss`.
        """
        m = check_int("m", m, 0, self.min_period - 1)
        tot, cnt = 0.0, 0
        for L in range(self.min_period, self.max_period + 1):
            n = self.seq_len - L
            tot += n * math.log(L - m)
            cnt += n
        return tot / cnt
