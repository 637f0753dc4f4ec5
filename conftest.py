"""Repo-wide pytest setup: the tests, and the kernels nbval starts, import the installed utils of this checkout;
a model the run would train twice is trained once; with `-n 2` (pytest-xdist), each notebook's cells stay
together, in order, in one worker."""

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from utils.translator.train_cache import ENV as TRAIN_CACHE

ROOT = Path(__file__).resolve().parent
os.environ.setdefault("PYTHONHASHSEED", "0")
# Kernels draw with the inline backend, which ipykernel picks only when MPLBACKEND is unset: a caller's
# MPLBACKEND=Agg (common on headless servers) would make every figure cell print a warning instead.
os.environ.pop("MPLBACKEND", None)
# Idle OpenMP threads sleep instead of spinning: on 2 shared cores spinning made training steps 10x slower.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# One thread per process (tests, nbval's and JupyterLab's kernels) unless the caller sets another count: the two
# workers already keep both cores busy, so a second thread per kernel only competes (a whole run took 452 s with
# one thread, against 476 s with torch's default, back to back on our 2 cores; CI reruns nbval with 4 threads).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# One folder per run (workers, nbval's and JupyterLab's kernels inherit it): lesson 07's translator, trained
# by whichever of nbval and the browser test runs it first, is loaded by the other (utils/translator/train_cache.py).
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
    proc = subprocess.run(
        [sys.executable, "-c", "import utils.course.lessons as m; print(m.checkout())"],
        cwd=Path(sys.prefix),
        capture_output=True,
        text=True,
    )
    found = proc.stdout.strip()
    if proc.returncode != 0 or Path(found) != ROOT:
        sys.exit(
            f"{sys.executable} imports utils from {found or 'nowhere'}, not from this checkout ({ROOT}):\n"
            f"{proc.stderr.strip()[-800:]}\nrun `pip install -r requirements.txt` (or `pip install -e .`) here"
        )


def pytest_unconfigure(config):
    if _OWN_CACHE and not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ[TRAIN_CACHE], ignore_errors=True)


def work_unit(nodeid, root=ROOT):
    """The unit of work a test belongs to under `-n 2`: units run whole, in collection order, on one worker.

    A notebook's nbval cells share one kernel and must run in order, so a notebook is a unit; a browser test
    parametrized by a lesson joins that lesson's unit (in the same worker, a model the lesson trains is
    trained by whichever of the two runs first and loaded by the other: utils/translator/train_cache.py); a
    test file defining a module- or class-scoped fixture is a unit (the fixture is built once); any other test
    is a unit of its own."""
    path, _, rest = nodeid.partition("::")
    if path.endswith(".ipynb"):
        return f"notebook {Path(path).stem}"
    lesson = re.search(r"\[(\d\d_\w+)\]$", rest)
    if path.startswith("tests/browser/") and lesson and (root / "notebooks" / f"{lesson[1]}.ipynb").exists():
        return f"notebook {lesson[1]}"
    if _defines_shared_fixture(root / path):
        return path
    return nodeid


@functools.cache
def _defines_shared_fixture(path):
    return path.suffix == ".py" and path.exists() and bool(SHARED_FIXTURE.search(path.read_text()))


SHARED_FIXTURE = re.compile(r"""@pytest\.fixture\(.*scope=["'](module|class|package)["']""")


# The order units are handed out in, longest first (from a full run's per-test times: lesson 07 with its browser
# test, which trains the translator; lesson 09, whose nbval trains one too; lesson 06, whose nbval alone is one of the longest; ...), so
# that no long unit starts last and keeps one worker busy alone at the end. Lesson 02 is far down: its browser test
# runs it only down to its widget, near the top. Only the order depends on it; unlisted units follow, in collection
# order.
LONGEST_FIRST = [
    "notebook 07",
    "notebook 09",
    "notebook 06",
    "notebook 08",
    "notebook 04",
    "tests/lessons/test_grade.py",
    "notebook 05",
    "notebook 02",
    "tests/lessons/test_grade_lessons.py::test_a_real_lessons",
    "notebook 03",
    "tests/unit/test_ipywidgets7.py",
    "notebook",
    "tests/browser/",
    "tests/browser/test_site.py",
]


def _order(item):
    unit = work_unit(item.nodeid)
    rank = next((i for i, prefix in enumerate(LONGEST_FIRST) if unit.startswith(prefix)), len(LONGEST_FIRST))
    return rank


def pytest_collection_modifyitems(config, items):
    """Longest units first (a stable sort: a notebook's cells keep their order)."""
    items.sort(key=_order)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's scope scheduling with the units above (its --dist loadgroup marks do not reach pytest 9's node
    ids), handed out in collection order (longest first)."""
    from xdist.scheduler import LoadScopeScheduling

    class LessonScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # keep the collection order above, not "most tests first"
    return LessonScheduling(config, log)
