"""icllib: the library behind the book *How in-context learning is learned*.

One module per idea (see the README's layout section).  Chapters import from the
subpackages and modules directly, e.g. ``from icllib.theory import s_inf``.
:mod:`icllib.theory` re-exports every public name of its modules; :mod:`icllib.data` and
:mod:`icllib.train` re-export the names their docstrings list for each module (the main entry
points), and a module's helpers are imported from the module itself, e.g.
``from icllib.train.finite_tasks import task_set_floor``.  Arguments are checked by the shared
rules of :mod:`icllib.validation`; a wrong type raises ``TypeError``, a wrong value
``ValueError``.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
