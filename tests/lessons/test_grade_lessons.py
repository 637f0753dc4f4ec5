"""The grader on the committed lessons: it finds every exercise's check call, and on lesson 03 the reference
solutions PASS and the stubs are NOT ATTEMPTED. Apart from test_grade.py (its module fixture grades the learner
notebooks) so that under `-n 2` the two run on different workers."""

import re

import nbformat
import pytest

from utils.course import grade
from utils.course.exercises import NOT_ATTEMPTED, PASS
from utils.course.lessons import lessons

CHECK_CALL = re.compile(r"^(\w+)\.(\w+)\((\w+)\)\s*$", re.M)  # check.name(my_answer)
LESSONS = [lesson.notebook for lesson in lessons()]


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_the_grader_finds_every_exercise_of_every_lesson(path):
    plan = grade.plan(nbformat.read(path, as_version=4), path)
    if not plan["known"]:
        pytest.skip(f"{path.name} has no exercises")
    assert sorted(item["name"] for item in plan["items"]) == sorted(plan["known"].values()), (
        "an exercise whose check call the grader cannot find would always be NOT ATTEMPTED"
    )


def filled_in(path):
    """A lesson where each `check.name(answer)` is preceded by `answer = <the reference>`."""
    nb = nbformat.read(path, as_version=4)
    aliases = grade.plan(nb)["aliases"]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = CHECK_CALL.sub(
                lambda m: (
                    (
                        f"from utils.course.exercises.{aliases[m[1]]} import {m[2]} as _reference_{m[2]}\n"
                        f"{m[3]} = _reference_{m[2]}.reference\n{m[0]}"
                    )
                    if m[1] in aliases
                    else m[0]
                ),
                cell.source,
            )
    return nb


def test_a_real_lessons_reference_solutions_pass_and_its_stubs_are_not_attempted():
    """Lesson 03's answers, recreated from its own cells by the grader's child (its kernel run is what the
    notebook tests already do)."""
    lesson = next(p for p in LESSONS if p.name.startswith("03_"))
    plan = grade.plan(filled_in(lesson), lesson)
    stubs = grade.plan(nbformat.read(lesson, as_version=4), lesson)
    both = dict(plan, items=plan["items"] + stubs["items"])
    verdicts, error = grade.check_answers(both, lesson.parent, timeout=120)
    assert error is None
    n = len(plan["items"])
    assert n == len(plan["known"]) and all(v == (PASS, "") for v in verdicts[:n]), verdicts
    assert all(status == NOT_ATTEMPTED for status, _ in verdicts[n:]), verdicts
