"""Make JupyterLab open the book's MyST-markdown chapters as notebooks (jupytext).

Writes the environment's own settings overrides, ``<sys.prefix>/share/jupyter/lab/settings/
overrides.json``, so nothing in the reader's home directory changes.  Only ``markdown`` and
``myst`` files get jupytext's notebook view (``jupytext-config set-default-viewer`` with no
arguments would also claim every ``.py`` file).  Run by ``postBuild`` (Binder and
``scripts/setup.sh``).
"""

import json
import sys
from pathlib import Path

PLUGIN = "@jupyterlab/docmanager-extension:plugin"
VIEWERS = {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
# No "would you like news?" pop-up over the first chapter a reader opens.
NEWS = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                         "checkForUpdates": False}}


def main() -> Path:
    path = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    settings = json.loads(path.read_text()) if path.is_file() else {}
    settings.setdefault(PLUGIN, {}).setdefault("defaultViewers", {}).update(VIEWERS)
    for plugin, values in NEWS.items():
        settings.setdefault(plugin, {}).update(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n")
    return path


if __name__ == "__main__":
    print(f"[jupyterlab] chapters open as notebooks: {main()}")
