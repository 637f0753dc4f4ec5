"""The instructor's grader, `python -m utils.course.grade`: it decides every verdict itself, so a notebook that
forges its results or replaces a checker gains nothing; stubs are NOT ATTEMPTED, right answers PASS, wrong
ones FAIL with the checker's message; a notebook that errors, loops, prints megabytes or kills its kernel
is reported and the others are still graded.

The learner notebooks are small, built here, and answer lesson 03's real exercises (whatever they are
named: the first three, in the lesson's order). One test grades a real lesson end to end."""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from utils.course import grade
from utils.course.exercises import FAIL, NOT_ATTEMPTED, PASS, Exercise, lesson03
from utils.course.lessons import lessons

ROOT = Path(__file__).resolve().parents[2]
ALL = [attr for attr, obj in vars(lesson03).items() if isinstance(obj, Exercise)]
# A is answered with a `def` (its reference is a function); B and C are the next two, in the lesson's order.
A = next(attr for attr in ALL if callable(getattr(lesson03, attr).reference))
B, C = [attr for attr in ALL if attr != A][:2]
NAME = {attr: getattr(lesson03, attr).name for attr in ALL}  # "lesson03.attention_weights"
SETUP = (
    "from utils.course.exercises import lesson03 as check\n"
    f"from utils.course.exercises.lesson03 import {A} as _A, {B} as _B, {C} as _C  # to write answers with"
)


def wrong(attr):
    """The first named mistake of an exercise, as the learner's answer."""
    first = getattr(lesson03, attr).wrong[0]
    return getattr(first, "answer", first)


def says(attr, answer):
    """What the pristine checker says about `answer`."""
    return getattr(lesson03, attr).evaluate(answer).message


def stub(attr, var):
    """A stub as the lessons give it: a function raising NotImplementedError, or `...` for a prediction."""
    if callable(getattr(lesson03, attr).reference):
        return f"def {var}(*args):\n    raise NotImplementedError"
    return f"{var} = ..."


def notebook(path, *cells):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# A learner's copy")] + [nbformat.v4.new_code_cell(c) for c in cells]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


WRONG = 'getattr(_{x}.wrong[0], "answer", _{x}.wrong[0])'


def answers_notebook(path):
    """A right (a def calling a helper defined two cells up), a wrong (a prediction-style value in its own
    cell) and an untouched stub."""
    return notebook(
        path,
        SETUP,
        "def helper(*args):\n    return None  # superseded below",
        "def helper(*args):\n    return _A.reference(*args)",
        f"def my_answer(*args):\n    return helper(*args)\n\n\ncheck.{A}(my_answer)",
        f"my_prediction = {WRONG.format(x='B')}",
        "print('an unrelated cell')",
        f"check.{B}(my_prediction)",
        stub(C, "my_c") + f"\n\n\ncheck.{C}(my_c)",
    )


def forged_notebook(path):
    """Writes PASS into the results, replaces `check.X`, a checker's check_fn, the module's helpers and
    Exercise.evaluate: its kernel says PASS three times, the grader does not."""
    return notebook(
        path,
        SETUP + "\nimport utils.course.exercises as ex\nfrom utils.course.exercises import lesson03",
        stub(A, "my_a") + f"\n\ncheck.{A} = lambda *args: None\ncheck.{A}(my_a)\n"
        f"ex._RESULTS[{NAME[A]!r}] = ex.Result({A!r}, 'PASS')",
        f"lesson03.{B}.check_fn = lambda answer: None\nex.lesson03.{B}.check_fn = lambda answer: None\n"
        "ex.lesson03.compare_arrays = lambda *args, **kwargs: None\n"
        f"my_b = {WRONG.format(x='B')}\ncheck.{B}(my_b)",
        "ex.Exercise.evaluate = lambda self, answer: ex.Result(self.name, 'PASS')\n"
        f"my_c = {WRONG.format(x='C')}\ncheck.{C}(my_c)",
        "ex.results = lambda: {name: {'status': 'PASS', 'message': ''} for name in " + repr(list(NAME.values())) + "}",
    )


def loop_notebook(path):
    """A's answer never returns (it sleeps, to leave the shared cores to the others); B is right; C's answer
    cell raises."""
    return notebook(
        path,
        SETUP,
        f"import time\n\n\ndef my_a(*args):\n    while True:\n        time.sleep(0.05)\n\n\ncheck.{A}(my_a)",
        f"my_b = _B.reference\ncheck.{B}(my_b)",
        "my_c = name_never_defined",
        f"check.{C}(my_c)",
    )


# These two stop (or lose) their kernel before it imports anything heavy: cheaper to run.
def loud_notebook(path):
    """Prints 50 MB, then answers A right."""
    return notebook(path, "for i in range(500_000):\n    print('x' * 99)", SETUP, f"check.{A}(_A.reference)")


def dying_notebook(path):
    return notebook(path, "import os\nos._exit(1)", SETUP, f"check.{A}(_A.reference)")


def statuses(report):
    return {e["exercise"].split(".")[-1]: e["status"] for e in report["exercises"]}


def by_name(report):
    return {e["exercise"].split(".")[-1]: e for e in report["exercises"]}


# ---- the plan: which cells recreate an answer (no kernel, no child: milliseconds)


def test_the_plan_reruns_the_latest_definitions_an_answer_needs(tmp_path):
    nb = nbformat.read(answers_notebook(tmp_path / "a.ipynb"), as_version=4)
    plan = grade.plan(nb)
    assert plan["aliases"] == {"check": "lesson03"} and plan["modules"] == ["lesson03"]
    assert sorted(plan["known"].values()) == sorted(NAME.values())
    cells = {item["attr"]: [n for n, _ in item["cells"]] for item in plan["items"]}
    # cells are numbered as the notebook shows them (1 = the markdown title, 2 = the imports)
    assert cells == {A: [4, 5], B: [6, 8], C: [9]}  # not the superseded helper (3), not the print (7)
    imports = [src for item in plan["items"] for _, src in item["imports"]]
    assert f"from utils.course.exercises.lesson03 import {A} as _A, {B} as _B, {C} as _C" in imports


def test_the_plan_knows_every_alias_and_reads_magics(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(c)
            for c in (
                "%matplotlib inline\nimport utils.course.exercises.lesson03 as ex3\nfrom utils.course.exercises import lesson03",
                f"!echo hi\nex3.{A}(None)",
                f"lesson03.{B}(None)",
                f"lesson03.{B}.hint()",
                "def broken(:\n    pass",
            )
        ]
    )
    plan = grade.plan(nb)
    assert plan["aliases"] == {"ex3": "lesson03", "lesson03": "lesson03"}
    assert [(item["attr"], item["target"]) for item in plan["items"]] == [(A, 2), (B, 3)]
    assert plan["unparsable"] == [5]


def test_without_the_import_the_file_name_says_which_lesson(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    assert sorted(grade.plan(nb, tmp_path / "03_self_attention.ipynb")["known"].values()) == sorted(NAME.values())
    assert grade.plan(nb, tmp_path / "mine.ipynb")["known"] == {}


# ---- grading notebooks: one command line run grades six, two at a time, as an instructor would
# A cell may take TIMEOUT s: enough to import torch on two busy cores; an endless loop costs that much, once in
# the kernel and once in the grader's child (at the same time).
TIMEOUT = 20


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """`python -m utils.course.grade -j 2` on six notebooks, with every output option."""
    tmp = tmp_path_factory.mktemp("learners")
    paths = [
        loop_notebook(tmp / "loop.ipynb"),
        answers_notebook(tmp / "answers.ipynb"),
        forged_notebook(tmp / "forged.ipynb"),
        loud_notebook(tmp / "loud.ipynb"),
        dying_notebook(tmp / "dies.ipynb"),
        tmp / "missing.ipynb",
    ]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "utils.course.grade",
            "--json",
            "-j",
            "2",
            "--timeout",
            str(TIMEOUT),
            "--notebook-timeout",
            "600",
            "--max-output",
            "1",
            "--csv",
            str(tmp / "grades.csv"),
            "--save-executed",
            str(tmp / "back"),
            *map(str, paths),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.stdout, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    reports = {Path(r["notebook"]).stem: r for r in data["notebooks"]}
    return {"tmp": tmp, "proc": proc, "data": data, "reports": reports, "paths": paths}


def test_right_wrong_and_stub_answers(graded):
    report = graded["reports"]["answers"]
    assert report["status"] == "ok" and not report["errors"], report
    ex = by_name(report)
    assert statuses(report) == {**{x: NOT_ATTEMPTED for x in ALL}, A: PASS, B: FAIL, C: NOT_ATTEMPTED}
    assert ex[B]["message"] == says(B, wrong(B)) and ex[B]["message"]
    assert "replace `raise NotImplementedError`" in ex[C]["message"] or "fill in" in ex[C]["message"]
    assert all(ex[x]["message"] == "its check call is not in the notebook" for x in ALL if x not in (A, B, C))
    assert not any(e["note"] for e in report["exercises"])  # the kernel's own checkers agreed


def test_forged_verdicts_and_replaced_checkers_do_not_pass(graded):
    report = graded["reports"]["forged"]
    ex = by_name(report)
    assert (ex[A]["status"], ex[B]["status"], ex[C]["status"]) == (NOT_ATTEMPTED, FAIL, FAIL), report
    assert ex[B]["message"] == says(B, wrong(B)) and ex[C]["message"] == says(C, wrong(C))
    for x in (A, B, C):
        assert ex[x]["note"].startswith(f"the notebook claims PASS; the grader's check says {ex[x]['status']}")
    assert report["status"] == "ok"
    assert f"note on {NAME[B]}: the notebook claims PASS" in grade.table(report)


def test_an_endless_loop_is_stopped_and_the_rest_still_graded(graded):
    report = graded["reports"]["loop"]
    ex = by_name(report)
    assert ex[A]["status"] == FAIL and ex[A]["message"].startswith(f"stopped after {TIMEOUT} s"), ex[A]
    assert ex[B]["status"] == PASS  # checked by a fresh child after the first was killed
    assert ex[C]["status"] == FAIL and "NameError" in ex[C]["message"] and "name_never_defined" in ex[C]["message"]
    assert report["status"] == "timed out"
    errors = [e["error"] for e in report["errors"]]
    assert f"stopped: the cell ran longer than {TIMEOUT} s" in errors  # the loop, in the kernel
    assert any("NameError" in e for e in errors)


def test_a_notebook_that_outlasts_its_total_time_is_stopped(tmp_path):
    path = notebook(tmp_path / "slow.ipynb", *["import time\ntime.sleep(2)"] * 20, "print('never reached')")
    report = grade.grade(path, timeout=30, notebook_timeout=5)
    assert report["status"] == "timed out" and report["exercises"] == []
    assert any("ran longer than 5 s in total" in e["error"] for e in report["errors"]), report["errors"]
    assert report["seconds"] < 30


def test_a_notebook_printing_50_mb_is_cut_and_reported(graded):
    report = graded["reports"]["loud"]
    assert report["status"] == "too much output"
    assert any("printed more than 1 MB" in e["error"] for e in report["errors"]), report["errors"]
    assert statuses(report)[A] == PASS  # its check cell never ran in the kernel; the grader checked it anyway
    saved = Path(report["saved"])
    assert saved.stat().st_size < 2e6
    outputs = nbformat.read(saved, as_version=4).cells[1].outputs
    assert "output cut" in outputs[-1]["text"]


def test_a_kernel_that_dies_and_a_missing_file_are_reported(graded):
    dies, missing = graded["reports"]["dies"], graded["reports"]["missing"]
    assert dies["status"] == "kernel died" and statuses(dies)[A] == PASS
    assert [(e["cell"], e["source"]) for e in dies["errors"]] == [(2, "import os")]
    assert by_name(dies)[B] == {
        "exercise": NAME[B],
        "lesson": "lesson03",
        "status": NOT_ATTEMPTED,
        "message": "its check call is not in the notebook",
        "note": "",
    }
    assert missing["status"] == "unreadable" and "FileNotFoundError" in missing["errors"][0]["error"]
    assert graded["proc"].returncode == graded["data"]["exit_code"] == 2


def test_csv_has_a_row_per_notebook_and_exercise(graded):
    with open(graded["tmp"] / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["notebook", "lesson", "exercise", "status", "message"]
    answers = [r for r in rows if r["notebook"].endswith("answers.ipynb")]
    assert [(r["exercise"], r["status"]) for r in answers] == [
        (x, statuses(graded["reports"]["answers"])[x]) for x in ALL
    ]
    assert all(r["lesson"] == "lesson03" for r in answers)
    (missing,) = [r for r in rows if r["notebook"].endswith("missing.ipynb")]
    assert missing["exercise"] == "" and missing["status"] == "unreadable"
    loud = [r for r in rows if r["notebook"].endswith("loud.ipynb") and not r["exercise"]]
    assert loud and all(r["status"] == "too much output" and r["lesson"] == "lesson03" for r in loud)
    assert len(rows) == sum(len(r["exercises"]) + len(r["errors"]) for r in graded["data"]["notebooks"])


def test_saved_copies_end_with_the_graders_verdicts(graded):
    back = graded["tmp"] / "back"
    assert sorted(p.name for p in back.iterdir()) == sorted(
        p.name for p in graded["paths"] if p.name != "missing.ipynb"
    )
    nb = nbformat.read(back / "forged.ipynb", as_version=4)
    last = nb.cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith("## Grade: 0/")
    assert f"| {NAME[B]} | FAIL |" in last.source
    assert len(nb.cells) == len(nbformat.read(graded["tmp"] / "forged.ipynb", as_version=4).cells) + 1
    answers = nbformat.read(back / "answers.ipynb", as_version=4)
    assert f"PASS: {A}" in answers.cells[4].outputs[0]["text"]  # what the learner's checker printed, kept


def test_one_job_gives_the_same_report_as_two(graded, capsys):
    tmp = graded["tmp"]
    code = grade.main(
        [
            "--json",
            "-j",
            "1",
            "--timeout",
            str(TIMEOUT),
            "--max-output",
            "1",
            str(tmp / "answers.ipynb"),
            str(tmp / "missing.ipynb"),
        ]
    )
    data = json.loads(capsys.readouterr().out)

    def comparable(report):
        return {k: v for k, v in report.items() if k not in ("seconds", "saved")}

    assert code == 2
    assert [comparable(r) for r in data["notebooks"]] == [
        comparable(graded["reports"][n]) for n in ("answers", "missing")
    ]


def test_the_table_and_exit_codes():
    report = {
        "notebook": "n.ipynb",
        "status": "ok",
        "seconds": 1.0,
        "errors": [],
        "exercises": [{"exercise": "lesson03.x", "lesson": "lesson03", "status": PASS, "message": "", "note": ""}],
    }
    assert grade.exit_code([report]) == 0
    assert "1/1 exercises passed" in grade.table(report)
    assert grade.exit_code([dict(report, exercises=[])]) == 1
    failed = dict(report, exercises=[dict(report["exercises"][0], status=FAIL, message="a | b")])
    assert grade.exit_code([failed]) == 1 and "a \\| b" in grade.markdown(failed)
    assert grade.exit_code([failed, dict(report, status="timed out")]) == 2


def test_save_paths_never_collide(tmp_path):
    paths = grade._save_paths([Path("a/03.ipynb"), Path("b/03.ipynb"), Path("04.ipynb")], tmp_path)
    assert [p.name for p in paths] == ["03.ipynb", "03-2.ipynb", "04.ipynb"]


# ---- the committed lessons

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
