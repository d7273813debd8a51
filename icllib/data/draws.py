"""Vectorised exact standard normal draws for the samplers (the Box-Muller transform).

Drawing the random numbers is most of the cost of an SGD step (``bench/bench_sgd.py``), and
numpy's :meth:`numpy.random.Generator.standard_normal` is a scalar loop (a ziggurat) that runs
far below the speed of numpy's vectorised arithmetic.  So the samplers transform raw 64-bit
words of the caller's generator with vectorised numpy operations instead:
``z_1 = r cos(2 pi v)``, ``z_2 = r sin(2 pi v)``, ``r = sqrt(-2 ln(1 - u))`` with ``u, v``
independent uniforms gives two independent standard normals exactly (Box & Muller 1958).

One 64-bit word makes one pair: its top 41 bits are ``u`` (so the radius is exact in float64
and the tails reach ``|z| = 7.5``, beyond which the normal has mass 5e-14), its low 23 bits
are ``v``.  The draws are float32-accurate (relative error ~1e-7, computed with numpy's SIMD
float32 ``sqrt``/``sin``/``cos``) and returned in float64, so that everything computed from
them is float64 arithmetic.  They are made in chunks of ``CHUNK_PAIRS`` words that stay in
the CPU cache (a chunk of ``k`` words fills ``2k`` consecutive draws: the ``k`` cosines, then
the ``k`` sines); the stream depends only on the generator's state and the number of draws,
so the same seed gives the same numbers on the same machine.  (numpy's SIMD kernels differ
between CPUs in the last bits of float32 ``sin``/``cos``, so other CPUs give draws that
differ at that level.)
"""

from __future__ import annotations

import numbers
import sys

import numpy as np

from ..validation import check_generator

__all__ = ["standard_normal"]

#: pairs of normals drawn per chunk (a few hundred kB of temporaries, cache resident)
CHUNK_PAIRS = 1 << 14

_TWO_PI = np.float32(2.0 * np.pi)
_ONE_BITS_32 = np.uint32(0x3F800000)  # float32 1.0: exponent bits for a mantissa in [1, 2)
_ONE_BITS_64 = np.uint64(0x3FF0000000000000)  # float64 1.0
_LOW_23 = np.uint32((1 << 23) - 1)
_SHIFT_OUT = np.uint64(23)  # drop the angle bits ...
_SHIFT_IN = np.uint64(11)  # ... and place the 41 radius bits at the top of the mantissa


def _as_shape(size):
    return (size,) if isinstance(size, numbers.Integral) else tuple(size)


#: bit generators whose raw output is a uniform 64-bit word (MT19937's is 32 bits)
_WORD64 = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)
#: index of the low 32-bit half of a uint64 seen as two uint32
_LOW_HALF = 0 if sys.byteorder == "little" else 1


def _words(rng, k):
    """``k`` raw uniform 64-bit words from ``rng`` (any bit generator)."""
    if isinstance(rng.bit_generator, _WORD64):
        return rng.bit_generator.random_raw(k)
    return rng.integers(0, 2**64, size=k, dtype=np.uint64)


def _fill_pairs(rng, out, k, work):
    """Write ``k`` pairs of normals into ``out[:2k]``: the ``r cos`` of each, then the ``r sin``."""
    angle, trig = work[0][:k], work[1][:k]
    w = _words(rng, k)
    # v: the low 23 bits as the mantissa of a float32 in [1, 2), then 2 pi (v - 1)
    bits = angle.view(np.uint32)
    np.bitwise_and(w.view(np.uint32)[_LOW_HALF::2], _LOW_23, out=bits)
    bits |= _ONE_BITS_32
    angle -= np.float32(1.0)
    angle *= _TWO_PI
    # u: the top 41 bits as the mantissa of a float64 in [1, 2); 2 - u is in (0, 1]
    w >>= _SHIFT_OUT
    w <<= _SHIFT_IN
    w |= _ONE_BITS_64
    r2 = w.view(np.float64)
    np.subtract(2.0, r2, out=r2)
    np.log(r2, out=r2)
    r2 *= -2.0
    r = r2.astype(np.float32)
    np.sqrt(r, out=r)
    np.cos(angle, out=trig)
    np.multiply(r, trig, out=out[:k])
    np.sin(angle, out=trig)
    np.multiply(r, trig, out=out[k : 2 * k])


def standard_normal(rng: np.random.Generator, size: int | tuple[int, ...],
                    out: np.ndarray | None = None) -> np.ndarray:
    """Independent standard normal draws (Box-Muller; see the module docstring).

    Parameters
    ----------
    rng : numpy.random.Generator
    size : int or tuple of int
        Shape of the result.
    out : ndarray of float64, optional
        C-contiguous array of that shape to fill.

    Returns
    -------
    ndarray of float64, shape ``size``
    """
    rng = check_generator("rng", rng)
    shape = _as_shape(size)
    if out is None:
        out = np.empty(shape)
    elif out.dtype != np.float64 or not out.flags.c_contiguous or out.shape != shape:
        raise ValueError(f"out must be a C-contiguous float64 array of shape {shape}")
    flat = out.reshape(-1)
    n = flat.size
    pairs = (n + 1) // 2
    chunk = min(CHUNK_PAIRS, pairs)
    work = (np.empty(chunk, np.float32), np.empty(chunk, np.float32))
    start = 0
    while start < pairs:
        k = min(chunk, pairs - start)
        if 2 * (start + k) <= n:
            _fill_pairs(rng, flat[2 * start : 2 * (start + k)], k, work)
        else:  # odd n: the last pair's sine is not needed
            tail = np.empty(2 * k)
            _fill_pairs(rng, tail, k, work)
            flat[2 * start :] = tail[: n - 2 * start]
        start += k
    return out
