"""The instructor's grader, `python -m utils.grade`: stubs are "not attempted", reference solutions
PASS, a wrong answer FAILs with its message, a crashing cell is reported and the rest still graded."""

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from utils import grade
from utils.exercises import FAIL, NOT_ATTEMPTED, PASS

ROOT = Path(__file__).resolve().parents[2]
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WITH_EXERCISES = [p for p in LESSONS if grade.LESSON_MODULE.search(p.read_text())]
CHECK_CALL = re.compile(r"^(check)\.(\w+)\((\w+)\)\s*$", re.M)  # check.name(my_answer): lessons import their exercises as `check`

# A learner's notebook in miniature: exercises defined inline the way utils/exercises/lessonNN.py does.
EXERCISES = '''
import types
from utils.exercises import exercise

def _double(x):
    return 2 * x

@exercise(hint="multiply by two", reference=_double, wrong=[lambda x: x + 2])
def double(answer):
    for x in (0, 1, 5):
        if answer(x) != 2 * x:
            return f"double({x}): expected {2 * x}, got {answer(x)}"

def _square(x):
    return x * x

@exercise(hint="x times x", reference=_square, wrong=[lambda x: 2 * x])
def square(answer):
    for x in (0, 3):
        if answer(x) != x * x:
            return f"square({x}): expected {x * x}, got {answer(x)}"

check = types.SimpleNamespace(double=double, square=square)
'''
STUB = "def my_{name}(x):\n    raise NotImplementedError"


def learner_notebook(path, answers=None, crash=False):
    """Write a notebook with two exercises; `answers` maps a name to the body of the learner's code."""
    answers = answers or {}
    cells = [nbformat.v4.new_markdown_cell("# A lesson"), nbformat.v4.new_code_cell(EXERCISES)]
    if crash:
        cells.append(nbformat.v4.new_code_cell("scores = [1, 2]\nscores[0] / 0"))
    for name in ("double", "square"):
        cells.append(nbformat.v4.new_code_cell(answers.get(name, STUB.format(name=name))))
        cells.append(nbformat.v4.new_code_cell(f"check.{name}(my_{name})"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def statuses(report):
    return {e["exercise"].split(".")[-1]: e["status"] for e in report["exercises"]}


def test_untouched_stubs_are_not_attempted(tmp_path):
    report = grade.grade(learner_notebook(tmp_path / "stub.ipynb"), timeout=60)
    assert report["status"] == "ok" and not report["errors"]
    assert statuses(report) == {"double": NOT_ATTEMPTED, "square": NOT_ATTEMPTED}
    assert grade.exit_code([report]) == 1


def test_right_answers_pass(tmp_path):
    answers = {"double": "def my_double(x):\n    return x + x", "square": "def my_square(x):\n    return x ** 2"}
    report = grade.grade(learner_notebook(tmp_path / "right.ipynb", answers), timeout=60)
    assert statuses(report) == {"double": PASS, "square": PASS}
    assert grade.exit_code([report]) == 0
    assert "2/2 exercises passed" in grade.table(report)


def test_a_wrong_answer_fails_with_its_message(tmp_path):
    answers = {"double": "def my_double(x):\n    return x + 1", "square": "def my_square(x):\n    return x * x"}
    report = grade.grade(learner_notebook(tmp_path / "wrong.ipynb", answers), timeout=60)
    assert statuses(report) == {"double": FAIL, "square": PASS}
    (failed,) = [e for e in report["exercises"] if e["status"] == FAIL]
    assert failed["message"] == "double(0): expected 0, got 1"
    assert grade.exit_code([report]) == 1
    assert "double(0): expected 0, got 1" in grade.table(report)


def test_a_crashing_cell_is_reported_and_the_rest_still_graded(tmp_path):
    answers = {"double": "def my_double(x):\n    return 2 * x"}
    report = grade.grade(learner_notebook(tmp_path / "crash.ipynb", answers, crash=True), timeout=60)
    assert report["status"] == "error"
    (err,) = report["errors"]
    assert err["cell"] == 3 and err["error"].startswith("ZeroDivisionError") and "scores" in err["source"]
    assert statuses(report) == {"double": PASS, "square": NOT_ATTEMPTED}
    assert grade.exit_code([report]) == 2
    assert "error in cell 3" in grade.table(report)


def test_a_cell_that_runs_too_long_is_stopped_and_reported(tmp_path):
    answers = {"double": "import time\ndef my_double(x):\n    return 2 * x\ntime.sleep(30)"}
    report = grade.grade(learner_notebook(tmp_path / "slow.ipynb", answers), timeout=3)
    assert report["status"] == "error"
    assert any("ran longer than 3" in e["error"] or "Interrupt" in e["error"] for e in report["errors"])
    assert statuses(report)["double"] == PASS  # the kernel was interrupted, not lost


def test_command_line_grades_every_notebook_and_prints_json(tmp_path):
    crash = learner_notebook(tmp_path / "crash.ipynb", crash=True)
    right = learner_notebook(tmp_path / "right.ipynb", {"double": "my_double = lambda x: 2 * x",
                                                       "square": "my_square = lambda x: x * x"})
    missing = tmp_path / "missing.ipynb"
    proc = subprocess.run([sys.executable, "-m", "utils.grade", "--json", "--timeout", "60",
                           str(crash), str(right), str(missing)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    by_name = {Path(r["notebook"]).name: r for r in data["notebooks"]}
    assert [by_name[n]["status"] for n in ("crash.ipynb", "right.ipynb", "missing.ipynb")] == [
        "error", "ok", "unreadable"]
    assert statuses(by_name["right.ipynb"]) == {"double": PASS, "square": PASS}
    assert data["exit_code"] == 2


def test_command_line_table(tmp_path):
    nb = learner_notebook(tmp_path / "stub.ipynb")
    proc = subprocess.run([sys.executable, "-m", "utils.grade", str(nb)], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert re.search(r"__main__\.double\s+NOT ATTEMPTED\s+fill in|__main__\.double\s+NOT ATTEMPTED\s+replace",
                     proc.stdout), proc.stdout
    assert "0/2 exercises passed" in proc.stdout


# Lessons 07 and 08 train models (about 90 s together). nbval and the browser tests already run them,
# and tests/test_exercises.py covers their checkers: grading them a third time adds time, not coverage.
TRAINING = {"07_toy_translator", "08_extrapolation_and_beyond"}
GRADED = [p for p in LESSONS if p.stem not in TRAINING]


@pytest.mark.parametrize("path", GRADED, ids=[p.stem for p in GRADED])
def test_committed_lesson_runs_and_its_exercises_are_not_attempted(path):
    report = grade.grade(path, timeout=900)
    assert report["status"] == "ok", report["errors"]
    if path in WITH_EXERCISES:
        assert report["exercises"], f"{path.name} imports its exercises but none was found"
    assert all(e["status"] == NOT_ATTEMPTED for e in report["exercises"]), report["exercises"]


def filled_in(path, tmp_path, pick):
    """A copy of a lesson where each `check.name(answer)` line is preceded by `answer = pick(check.name)`."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = CHECK_CALL.sub(
                lambda m: f"{m[3]} = {pick.format(f'{m[1]}.{m[2]}')}\n{m[0]}", cell.source)
    out = tmp_path / path.name
    nbformat.write(nb, out)
    return out


@pytest.mark.skipif(not WITH_EXERCISES, reason="no committed lesson has exercises yet")
def test_reference_solutions_filled_in_pass_and_a_wrong_one_fails(tmp_path):
    lesson = WITH_EXERCISES[0]
    (tmp_path / "ref").mkdir()
    (tmp_path / "wrong").mkdir()
    report = grade.grade(filled_in(lesson, tmp_path / "ref", "{}.reference"), timeout=900)
    assert report["status"] == "ok", report["errors"]
    assert report["exercises"] and all(e["status"] == PASS for e in report["exercises"]), report["exercises"]
    report = grade.grade(filled_in(lesson, tmp_path / "wrong", "{}.wrong[0]"), timeout=900)
    assert report["exercises"] and all(e["status"] == FAIL and e["message"] for e in report["exercises"])


def test_filling_in_works_on_a_lesson_shaped_notebook(tmp_path):
    """The helper above, on the miniature (so it is tested even before a lesson has exercises)."""
    src = learner_notebook(tmp_path / "lesson.ipynb")
    (tmp_path / "ref").mkdir()
    report = grade.grade(filled_in(src, tmp_path / "ref", "{}.reference"), timeout=60)
    assert statuses(report) == {"double": PASS, "square": PASS}


def test_a_kernel_that_dies_is_reported(tmp_path):
    answers = {"double": "import os\nos._exit(1)"}
    report = grade.grade(learner_notebook(tmp_path / "dies.ipynb", answers), timeout=60)
    assert report["status"] == "kernel died", report
    assert grade.exit_code([report]) == 2
    assert "kernel died" in grade.table(report)
