"""Binder: Python 3.11, the same exact pins as requirements.txt, torch as its CPU-only build."""

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from utils.course.lessons import checkout

ROOT = checkout(__file__)
# Only the test suite uses these (drive Chromium, run tests in parallel, check the style): useless on Binder.
TEST_ONLY = {"playwright", "greenlet", "pytest-xdist", "execnet", "ruff"}
# Only scripts/build_site.py uses these (Sphinx, MyST-NB, sphinx-book-theme and what they need beyond the lessons' pins).
SITE_ONLY = set(
    """accessible-pygments alabaster click docutils imagesize importlib-metadata jupyter-cache lazy-importer
    myst-nb myst-parser pydata-sphinx-theme roman-numerals snowballstemmer sphinx sphinx-book-theme sphinx-mathjax-offline
    sphinxcontrib-applehelp sphinxcontrib-devhelp sphinxcontrib-htmlhelp sphinxcontrib-jsmath sphinxcontrib-qthelp
    sphinxcontrib-serializinghtml sqlalchemy zipp""".split()
)
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def norm(name):
    return name.lower().replace("_", "-").replace(".", "-")


def parse(path):
    """(options, {name: exact version}) of a requirements file."""
    options, pins = [], {}
    for line in Path(path).read_text().splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            options.append(line)
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==" and "*" not in spec.version, f"{path.name}: {line} is not an exact pin"
        pins[norm(req.name)] = Version(spec.version)
    return options, pins


def test_runtime_is_python_3_11_and_the_package_allows_it():
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert Version("3.11") in SpecifierSet(requires)


def test_binder_pins_agree_with_requirements_txt():
    _, main = parse(ROOT / "requirements.txt")
    _, binder = parse(ROOT / "binder" / "requirements.txt")
    differ = {
        n: (str(main[n]), str(binder[n])) for n in main.keys() & binder.keys() if main[n].public != binder[n].public
    }
    assert not differ, f"binder/requirements.txt pins differ from requirements.txt: {differ}"
    missing = main.keys() - binder.keys() - TEST_ONLY - SITE_ONLY
    assert not missing, f"binder/requirements.txt lacks: {sorted(missing)}"
    extra = binder.keys() - main.keys()
    assert not extra, f"binder/requirements.txt has packages requirements.txt lacks: {sorted(extra)}"


def test_binder_installs_utils_after_the_cached_dependency_layer():
    options, _ = parse(ROOT / "binder" / "requirements.txt")
    assert not {"-e .", "."} & set(options), "installing the repo in requirements.txt defeats Binder's layer cache"
    post_build = ROOT / "binder" / "postBuild"
    assert post_build.stat().st_mode & 0o111, "binder/postBuild must be executable"
    lines = [line.strip() for line in post_build.read_text().splitlines()]
    assert "pip install --no-deps --no-build-isolation -e ." in lines, "postBuild must install this repo's utils"


def test_binder_installs_the_cpu_torch_and_jupyterlab_with_widgets():
    options, binder = parse(ROOT / "binder" / "requirements.txt")
    assert f"--extra-index-url {CPU_INDEX}" in options, "torch must come from PyTorch's CPU wheel index"
    assert binder["torch"].local == "cpu", f"torch=={binder['torch']} is not the +cpu build"
    assert not [n for n in binder if n.startswith("nvidia-") or n == "triton"], "no CUDA packages on Binder"
    for needed in ("jupyterlab", "ipywidgets", "jupyterlab-widgets", "ipykernel"):
        assert needed in binder, f"Binder needs {needed} to open the notebooks in JupyterLab with widgets"
