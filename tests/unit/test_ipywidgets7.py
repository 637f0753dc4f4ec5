"""Colab ships ipywidgets 7.7.1: rerun every widget unit test on it, so Colab support is tested.

The 7.7.1 stack is an overlay directory (.ci/run builds it with
`pip install --no-deps --target .venv/ipywidgets7 -r .ci/ipywidgets7.txt`) put first on PYTHONPATH
of a pytest subprocess (utils is this checkout's, installed editable). Widget tests are found generically:
tests/unit/test_*.py whose name mentions explorer, widget or plotting, or whose code uses utils.figures.widgets
or ipywidgets.
Without the overlay this skips; with REQUIRE_IPYWIDGETS7=1 (set by .ci/run) it fails instead.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from utils.course.lessons import checkout

ROOT = checkout(__file__)
OVERLAY = Path(os.environ.get("IPYWIDGETS7_DIR", ROOT / ".venv" / "ipywidgets7"))
BUILD = f"pip install --no-deps --target {OVERLAY} -r .ci/ipywidgets7.txt"
NAME = re.compile(r"test_.*(explorer|widget|plotting).*\.py$")
USES = re.compile(
    r"\butils\.figures\.widgets\b|from utils\.figures import .*\bwidgets\b|\bimport ipywidgets\b|_explorer\("
)


def widget_test_files():
    here = Path(__file__).name
    return [
        p
        for p in sorted((ROOT / "tests" / "unit").glob("test_*.py"))
        if p.name != here and (NAME.match(p.name) or USES.search(p.read_text()))
    ]


def overlay_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(OVERLAY), env.get("PYTHONPATH")]))
    return env


def overlay_version():
    proc = subprocess.run(
        [sys.executable, "-c", "import ipywidgets; print(ipywidgets.__version__)"],
        env=overlay_env(),
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip()


def test_widget_tests_are_found():
    files = [p.name for p in widget_test_files()]
    assert "test_widgets_generic.py" in files, files


# Two reruns, one per worker (each pytest subprocess costs seconds to start and import torch): the generic test
# of every explorer, the slowest file, alone; every other widget test file together.
GENERIC = "test_widgets_generic.py"


def rerun_groups():
    files = widget_test_files()
    return [[p for p in files if p.name == GENERIC], [p for p in files if p.name != GENERIC]]


def test_the_reruns_cover_every_widget_test_file_once():
    assert sorted(p for group in rerun_groups() for p in group) == widget_test_files()
    assert all(rerun_groups())


@pytest.mark.parametrize("paths", rerun_groups(), ids=["generic", "the-others"])
def test_widget_tests_pass_on_ipywidgets_7_7_1(paths):
    """Each widget test file passes on ipywidgets 7.7.1, and each ran at least one test there."""
    version = overlay_version() if OVERLAY.is_dir() else None
    if version != "7.7.1":
        reason = f"ipywidgets 7.7.1 overlay not found at {OVERLAY} (got {version}); build it with: {BUILD}"
        if os.environ.get("REQUIRE_IPYWIDGETS7") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-o",
            "addopts=",
            "-p",
            "no:cacheprovider",
            "-W",
            "ignore::DeprecationWarning",
            "-rA",
            *map(str, paths),
        ],
        cwd=ROOT,
        env=overlay_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    names = ", ".join(p.name for p in paths)
    failed = sorted({m for m in re.findall(r"^(?:FAILED|ERROR) tests/unit/(test_\w+\.py)", proc.stdout, re.M)})
    start = min(
        (proc.stdout.find(f" {part} =") for part in ("ERRORS", "FAILURES") if f" {part} =" in proc.stdout), default=-1
    )
    tail = (proc.stdout[start : start + 3000] if start >= 0 else proc.stdout[-3000:]) + proc.stderr[-2000:]
    assert proc.returncode == 0, f"{', '.join(failed) or names} fail(s) on ipywidgets 7.7.1:\n{tail}"
    passed = set(re.findall(r"^PASSED tests/unit/(test_\w+\.py)::", proc.stdout, re.M))
    missing = [p.name for p in paths if p.name not in passed]
    assert not missing, f"no test of {', '.join(missing)} ran on ipywidgets 7.7.1:\n{tail}"
