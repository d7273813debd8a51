"""icllib: the library behind the book *How in-context learning is learned*.

One module per idea (see the README's layout section).  Chapters import from the
submodules directly, e.g. ``from icllib.theory import s_inf``; the packages
:mod:`icllib.data`, :mod:`icllib.theory` and :mod:`icllib.train` re-export every public name
of their modules.  Arguments are checked by the shared rules of :mod:`icllib.validation`.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
