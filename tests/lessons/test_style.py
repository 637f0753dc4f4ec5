"""One code style everywhere: `ruff check` and `ruff format --check` (configured in pyproject.toml) pass on
utils/, lessons_src/, scripts/, benchmarks/ and tests/. To fix what they list: scripts/format_tree.sh."""

import subprocess
import sys

import pytest

from utils.course.lessons import checkout

ROOT = checkout(__file__)
FOLDERS = ["utils", "lessons_src", "scripts", "benchmarks", "tests", "conftest.py"]
FIX = "run scripts/format_tree.sh (then rebuild the lessons whose source it reformatted)"


def ruff(*args):
    proc = subprocess.run([sys.executable, "-m", "ruff", *args, *FOLDERS], cwd=ROOT, capture_output=True, text=True)
    if "No module named ruff" in proc.stderr:
        pytest.fail("ruff is not installed: pip install -r requirements.txt")
    return proc


def test_lint_finds_nothing():
    proc = ruff("check", "--output-format", "concise", "--no-cache")
    assert proc.returncode == 0, f"ruff check finds problems; {FIX}:\n{proc.stdout[-4000:]}{proc.stderr[-1000:]}"


def test_every_file_is_formatted():
    proc = ruff("format", "--check", "--no-cache")
    unformatted = [
        line.removeprefix("Would reformat: ") for line in proc.stdout.splitlines() if line.startswith("Would reformat")
    ]
    assert proc.returncode == 0, f"{len(unformatted)} file(s) not formatted; {FIX}:\n" + "\n".join(unformatted)


def test_the_style_covers_every_python_file():
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    outside = [f for f in tracked if not any(f == top or f.startswith(top + "/") for top in FOLDERS)]
    assert not outside, f"Python files the style check does not see; add their folder to FOLDERS: {outside}"
