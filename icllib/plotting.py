"""One figure style for the book.

Convention used by every figure: simulations are thin lines or markers, theory is a
solid line in the same colour; a dashed line is the second theory (the paper's
decoupled equations when the exact mean flow is solid).
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from .validation import check_int

__all__ = ["BOOK_STYLE", "use_book_style", "mode_colors"]

# Colour-blind-safe qualitative palette (Okabe & Ito), extended by a colormap.
_OKABE_ITO = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
]

BOOK_STYLE = {
    "figure.dpi": 90,
    "savefig.dpi": 90,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "lines.linewidth": 1.8,
}


def use_book_style() -> None:
    """Apply the book's matplotlib rc settings (idempotent)."""
    mpl.rcParams.update(BOOK_STYLE)


def mode_colors(d: int) -> list[str]:
    """Return ``d`` distinct colours, one per eigenmode, ordered like the modes.

    Parameters
    ----------
    d : int
        Number of modes, ``d >= 1``.
    """
    d = check_int("d", d, 1)
    if d <= len(_OKABE_ITO):
        return _OKABE_ITO[:d]
    cmap = mpl.colormaps["viridis"]
    return [mpl.colors.to_hex(cmap(x)) for x in np.linspace(0.0, 0.9, d)]
