"""Shared fixtures: figures are drawn off-screen and closed after each test; scripts load as modules."""

import importlib.util
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen before pyplot is imported)
import pytest  # noqa: E402

from utils.course.lessons import checkout  # noqa: E402

ROOT = checkout(__file__)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def load_script(name, folder="scripts"):
    """Import `folder/name.py` of this checkout as a module (scripts and benchmarks are not a package)."""
    key = f"_{folder}_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


@pytest.fixture(scope="session")
def script():
    """`script("build_site")` is scripts/build_site.py as a module; `script(name, folder="benchmarks")` likewise."""
    return load_script
