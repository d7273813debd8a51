"""Rewrite the chapters in the exact form JupyterLab (jupytext) saves them.

A chapter opened in JupyterLab gets the kernelspec of the kernel it starts, and on save
jupytext writes its own canonical MyST form (header with ``format_version`` and
``jupytext_version``, a blank line after cell options before a comment, ...). Storing the
chapters in that form means opening, running and saving one changes nothing. Run after
editing a chapter; ``tests/test_notebook_form.py`` checks it.

    .venv/bin/python scripts/normalise_chapters.py              # every chapter
    .venv/bin/python scripts/normalise_chapters.py book/02-dynamics.md   # just these
"""

import sys
from pathlib import Path

import jupytext
from ipykernel.kernelspec import get_kernel_dict

ROOT = Path(__file__).resolve().parents[1]
CELL_METADATA_FILTER = "-user_expressions"


def main(paths=None):
    spec = get_kernel_dict()
    kernelspec = {"display_name": spec["display_name"], "language": spec["language"],
                  "name": "python3"}
    chosen = [Path(p).resolve() for p in paths] if paths else sorted((ROOT / "book").glob("*.md"))
    for path in chosen:
        source = path.read_text(encoding="utf-8")
        if "kernelspec:" not in source[:600]:
            continue
        nb = jupytext.read(path)
        nb.metadata["kernelspec"] = kernelspec
        # jupyterlab-myst stores each markdown cell's evaluated {eval} roles in its metadata
        # ("user_expressions"); without this filter saving from JupyterLab would write them
        # into the chapter
        nb.metadata.setdefault("jupytext", {})["cell_metadata_filter"] = CELL_METADATA_FILTER
        written = jupytext.writes(nb, fmt="md:myst")
        if written != source:
            path.write_text(written, encoding="utf-8")
            print(f"normalised {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
