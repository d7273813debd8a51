"""Local Sphinx extension for the book's site.

* Kernels started by myst-nb inherit this process's environment, so setting
  ``ICLLIB_FIGURES=static`` here makes :func:`icllib.widgets.interactive_figure` pre-render
  every control value into the page (a live Jupyter session keeps ipywidgets).
* sphinx-thebe registers its configuration script once per read phase, so a full build
  declares ``THEBE_JS_URL`` twice and the browser logs an error on every page; scripts are
  de-duplicated here.
"""

import os


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        # The same script may be registered with different priorities: compare content only
        # (a body-only script has filename None or "").
        key = (getattr(js, "filename", str(js)) or "", getattr(js, "attributes", {}).get("body"))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


def setup(app):
    os.environ.setdefault("ICLLIB_FIGURES", "static")
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
