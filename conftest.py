"""Repo-wide pytest setup: the tests, and the kernels nbval starts, import the installed utils of this checkout;
a model the run trains twice is trained once; with `-n 2` (pytest-xdist, `--dist loadgroup`), each notebook's
cells stay together, in order, in one worker."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from utils.train_cache import ENV as TRAIN_CACHE

ROOT = Path(__file__).resolve().parent
os.environ.setdefault("PYTHONHASHSEED", "0")
# Kernels draw with the inline backend, which ipykernel picks only when MPLBACKEND is unset: a caller's
# MPLBACKEND=Agg (common on headless servers) would make every figure cell print a warning instead.
os.environ.pop("MPLBACKEND", None)
# Idle OpenMP threads sleep instead of spinning: on 2 shared cores spinning made training steps 10x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# One folder per run (workers, nbval's and JupyterLab's kernels inherit it): lesson 07's translator, trained
# by whichever of nbval and the browser test runs it first, is loaded by the other (utils/train_cache.py).
# Each run, including each perturbed-float-path rerun in .ci/run, starts empty and so trains for real.
_OWN_CACHE = TRAIN_CACHE not in os.environ
if _OWN_CACHE:
    os.environ[TRAIN_CACHE] = tempfile.mkdtemp(prefix="train-cache-")


def pytest_configure(config):
    """Stop at once when the utils a fresh Python (a notebook's kernel) imports is not this checkout's.

    pytest puts this folder first on sys.path for the tests themselves, so only a fresh interpreter shows what
    `pip install -r requirements.txt` (utils in editable mode) installed; otherwise nbval would check the
    notebooks against another checkout's utils while the unit tests use this one."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has checked
        return
    proc = subprocess.run([sys.executable, "-c", "import utils.lessons as m; print(m.checkout())"],
                          cwd=Path(sys.prefix), capture_output=True, text=True)
    found = proc.stdout.strip()
    if proc.returncode != 0 or Path(found) != ROOT:
        sys.exit(f"{sys.executable} imports utils from {found or 'nowhere'}, not from this checkout ({ROOT}):\n"
                 f"{proc.stderr.strip()[-800:]}\nrun `pip install -r requirements.txt` (or `pip install -e .`) here")


def pytest_unconfigure(config):
    if _OWN_CACHE and not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ[TRAIN_CACHE], ignore_errors=True)


def notebook_of(item):
    """The lesson notebook an item executes: nbval's cells, and a browser test parametrized by its path."""
    if item.path.suffix == ".ipynb":
        return item.path.stem
    path = getattr(item, "callspec", None) and item.callspec.params.get("path")
    if item.get_closest_marker("browser") and isinstance(path, Path) and path.suffix == ".ipynb":
        return path.stem
    return None


def has_module_fixture(item):
    """True when the item uses a module- or class-scoped fixture its own file defines (set up once per worker)."""
    defs = getattr(item, "_fixtureinfo", None)
    module = item.nodeid.split("::")[0]
    return bool(defs) and any(d.scope in ("module", "class") and d.baseid.split("::")[0] == module
                              for fixturedefs in defs.name2fixturedefs.values() for d in fixturedefs)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Work units for `--dist loadgroup`: a notebook's nbval cells (which share one kernel, in order) and its
    browser test form one unit, so a model it trains is trained once; a test file with a module-scoped
    fixture is one unit, so the fixture is built once. Every other test is a unit of its own."""
    for item in items:
        notebook = notebook_of(item)
        if notebook:
            item.add_marker(pytest.mark.xdist_group(f"notebook-{notebook}"))
        elif has_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
