"""Project-level consistency: one set of pins, every chapter in the book, the README true."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def requirement_pins():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def test_binder_environment_uses_the_same_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pins = requirement_pins()
    found = {}
    for dep in env["dependencies"]:
        items = dep["pip"] if isinstance(dep, dict) else [dep]
        for item in items:
            m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*={1,2}\s*([0-9][^\s=]*)", item.strip())
            if m and m.group(1).lower() != "python":
                found[m.group(1).lower()] = m.group(2)
    assert found, "environment.yml pins nothing"
    for name, version in found.items():
        assert name in pins, f"environment.yml pins {name}, which requirements.txt does not"
        assert pins[name] == version, f"{name}: environment.yml {version} != requirements.txt {pins[name]}"
    for needed in ("numpy", "scipy", "matplotlib", "ipywidgets", "jupytext", "torch"):
        assert needed in found, f"Binder environment lacks {needed}"


def test_every_chapter_is_in_the_table_of_contents():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    listed = {toc["root"]} | {c["file"] for c in toc.get("chapters", [])}
    pages = {f"book/{p.stem}" for p in (ROOT / "book").glob("*.md")}
    assert pages == listed, f"not in _toc.yml: {pages - listed}; listed but missing: {listed - pages}"


def test_readme_commands_and_ci_entry_point():
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/build.sh" in readme and "bash scripts/test.sh" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci
    for script in ("setup.sh", "build.sh", "test.sh"):
        assert (ROOT / "scripts" / script).is_file()


def test_no_committed_notebooks():
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    assert tracked == [], f"chapters are MyST text notebooks; committed .ipynb: {tracked}"
