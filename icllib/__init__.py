"""icllib: the library behind the book *How in-context learning is learned*.

One module per idea (see the README's layout section).  Chapters import from the
submodules directly, e.g. ``from icllib.theory import s_inf``.
"""

__version__ = "0.1.0"
