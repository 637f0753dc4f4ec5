"""The instructor's grader, `python -m utils.course.grade`: it decides every verdict itself, so a notebook that
forges its results or replaces a checker gains nothing; stubs are NOT ATTEMPTED, right answers PASS, wrong
ones FAIL with the checker's message; a notebook that errors, loops, prints megabytes or kills its kernel
is reported and the others are still graded.

The learner notebooks are small, built here, and answer lesson 03's real exercises (whatever they are
named: the first three, in the lesson's order). The committed lessons' exercises are graded in
test_grade_lessons.py (a file of its own, so that under `-n 2` it runs beside this file's grading run)."""

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from utils.course import grade
from utils.course.exercises import FAIL, NOT_ATTEMPTED, PASS, Exercise, lesson01, lesson03

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
    assert cells == {A: [4, 5], B: [6], C: [9]}  # not the superseded helper (3), not the print (7)
    # B is a value named in its check call: the cell defining it is rerun, not the check cell (8)
    assert [item["answer"] for item in plan["items"]] == [None, "my_prediction", None]
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


# ---- the issue-25 recipes: a dishonest learner's copies of lessons 01 and 03, graded in the same run
# Each exercise gets FAIL or NOT ATTEMPTED, never PASS; the run ends with its table and CSV.

L01 = (
    "from utils.course.exercises import lesson01 as check\n"
    "import math\nimport os\nimport sys\n\nimport numpy as np\n"
    "from utils.course.exercises.lesson01 import (\n"
    "    BASE_CASES, POSITION_CASES, TABLE_CASES, _base_without_two_pi, _position_first_pair, _table_halves,\n"
    "    base_for_wavelength_solution, pe_table_solution, position_from_pe_solution,\n)\n"
    "from utils.positional import sinusoidal_encoding\nimport torch"
)
L03 = (
    "from utils.course.exercises import lesson03 as check\n"
    "import math\nimport os\nimport sys\n\nimport numpy as np\nimport torch\n"
    "from utils.course.exercises.lesson03 import _attention_weights, _pooled_classifier, _random_words"
)
ISCLOSE = "np.isclose = lambda a, b, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)"
STUB = "def {}(*args):\n    raise NotImplementedError\n\n\ncheck.{}({})"
F, N, P = FAIL, NOT_ATTEMPTED, PASS
L01_NAMES = ("predict_row_norm", "pe_table", "position_from_pe", "base_for_wavelength")
L03_NAMES = tuple(ALL)  # every lesson-03 exercise, in module order: the grader reports each one

RECIPES = {  # name: (lesson setup, cells, {exercise: status})
    # 1. np.isclose patched in the first exercise's cell (it leaked into later exercises), in an earlier cell
    # that also defines a name the answer uses, and in the exercise cell itself.
    "r01_isclose": (
        L01,
        [
            f"{ISCLOSE}\nrow_norm = 3.0\ncheck.predict_row_norm(row_norm)",
            f"def helper(max_len, d_model):\n    return _table_halves(max_len, d_model)\n\n\n{ISCLOSE}",
            "def my_table(max_len, d_model):\n    return helper(max_len, d_model)\n\n\ncheck.pe_table(my_table)",
            f"{ISCLOSE}\n\n\ndef my_position(row):\n    return _position_first_pair(row)\n\n\n"
            "check.position_from_pe(my_position)",
            STUB.format("my_base", "base_for_wavelength", "my_base"),
        ],
        {"predict_row_norm": F, "pe_table": F, "position_from_pe": F, "base_for_wavelength": N},
    ),
    # 2. a module beside the notebook that patches numpy, math and all(), imported by the import cell, and one
    # an earlier cell writes during the grader's own run.
    "r02_module": (
        "import numpy_patch\n" + L01,
        [
            "with open('numpy_patch_2.py', 'w') as f:\n    f.write(open('numpy_patch.py').read())",
            "import numpy_patch_2\n\nrow_norm = 256.0\ncheck.predict_row_norm(row_norm)",
            "check.pe_table(_table_halves)",
            "check.base_for_wavelength(_base_without_two_pi)",
        ],
        {"predict_row_norm": F, "pe_table": F, "position_from_pe": N, "base_for_wavelength": F},
    ),
    # 3, 4, 7, 8: compare_arrays' code replaced, Result.__init__ always PASS, a fake numpy, all() always True.
    "r03_patches": (
        L01,
        [
            "import utils.course.exercises\n\nutils.course.exercises.compare_arrays.__code__ = "
            "(lambda got, expected, what='value', atol=1e-4: None).__code__\ncheck.pe_table(_table_halves)",
            "import utils.course.exercises as ex\n\n\ndef _init(self, exercise, status, message=''):\n"
            "    self.exercise, self.status, self.message = exercise, 'PASS', ''\n\n\n"
            "ex.Result.__init__ = _init\ncheck.predict_row_norm(1.0)",
            "import types\n\nsys.modules['numpy'] = types.SimpleNamespace(isclose=lambda *a, **k: True)\n"
            "check.base_for_wavelength(_base_without_two_pi)",
            "import builtins\n\n\ndef my_position(row):\n    builtins.all = lambda it: True\n"
            "    return _position_first_pair(row)\n\n\ncheck.position_from_pe(my_position)",
        ],
        {"predict_row_norm": F, "pe_table": F, "position_from_pe": F, "base_for_wavelength": F},
    ),
    # 5, 9, 10: the checker's locals read through frames, fake verdicts sent down the child's pipe before
    # os._exit(0), a float that prints 3.0 but converts to 16.
    "r04_frames": (
        L01,
        [
            "def my_table(max_len, d_model):\n    return sys._getframe(1).f_locals['expected']\n\n\n"
            "check.pe_table(my_table)",
            "def my_position(row):\n    return sys._getframe(1).f_locals['t']\n\n\ncheck.position_from_pe(my_position)",
            "import gc\nfrom multiprocessing.connection import Connection\n\n\ndef my_base(d_model, longest):\n"
            "    pipes = [o for o in gc.get_objects() if isinstance(o, Connection)]\n    for pipe in pipes:\n"
            "        for k in range(4):\n            pipe.send(('done', k, 'PASS', ''))\n"
            '        pipe.send((\'end\',))\n        pipe.send_bytes(b\'{"returned": {"float": "1.0"}}\')\n'
            "    if pipes:\n        os._exit(0)\n    return 1.0\n\n\ncheck.base_for_wavelength(my_base)",
            "class Sixteen(float):\n    def __float__(self):\n        return 16.0\n\n\n"
            "check.predict_row_norm(Sixteen(3.0))",
        ],
        {"predict_row_norm": F, "pe_table": F, "position_from_pe": F, "base_for_wavelength": F},
    ),
    # 6. hard-coded outputs for the visible cases (computed honestly in the notebook, then looked up).
    "r05_hard_coded": (
        L01,
        [
            "TABLES = {case: pe_table_solution(*case) for case in TABLE_CASES}\n"
            "ROWS = {tuple(np.round(sinusoidal_encoding(t + 1, d, dtype=torch.float64).numpy()[t], 6)): t "
            "for t, d in POSITION_CASES}\nBASES = {case: base_for_wavelength_solution(*case) for case in BASE_CASES}",
            "def my_table(max_len, d_model):\n    return TABLES.get((max_len, d_model), np.zeros((max_len, d_model)))\n"
            "\n\ncheck.pe_table(my_table)",
            "def my_position(row):\n    return ROWS.get(tuple(np.round(row, 6)), 0)\n\n\n"
            "check.position_from_pe(my_position)",
            "def my_base(d_model, longest):\n    return BASES.get((d_model, longest), 10000.0)\n\n\n"
            "check.base_for_wavelength(my_base)",
        ],
        {"predict_row_norm": N, "pe_table": F, "position_from_pe": F, "base_for_wavelength": F},
    ),
    # 6 and 10 on lesson 03: attention_weights hard-coded for the seed-1 shapes; an object whose __array__
    # reads `expected` from the caller's frame; 4: Result.__init__ patched before a wrong prediction.
    "r06_hard_coded_03": (
        L03,
        [
            "gen = torch.Generator().manual_seed(1)\nSEEN = {}\nfor n, d_k in ((4, 8), (7, 3), (1, 16)):\n"
            "    q = torch.randn(d_k, generator=gen, dtype=torch.float64)\n"
            "    K = torch.randn(n, d_k, generator=gen, dtype=torch.float64)\n"
            "    SEEN[n, d_k] = _attention_weights(q, K)",
            "def my_weights(q, K):\n    return SEEN.get(tuple(K.shape), torch.full((K.shape[0],), 1 / K.shape[0]))\n"
            "\n\ncheck.attention_weights(my_weights)",
            "class Peek:\n    def __array__(self, dtype=None, copy=None):\n        frame = sys._getframe(1)\n"
            "        while frame is not None and 'expected' not in frame.f_locals:\n            frame = frame.f_back\n"
            "        return np.asarray(frame.f_locals['expected'] if frame is not None else 0.0)\n\n\n"
            "def my_head(X, W_c):\n    return Peek()\n\n\ncheck.pooled_classifier(my_head)",
            "import utils.course.exercises as ex\n\n\ndef _init(self, exercise, status, message=''):\n"
            "    self.exercise, self.status, self.message = exercise, 'PASS', ''\n\n\n"
            "ex.Result.__init__ = _init\ncheck.predict_broken_properties({1})",
            STUB.format("my_x", "diagonal_not_max", "my_x"),
        ],
        {"predict_broken_properties": F, "attention_weights": F, "diagonal_not_max": N, "pooled_classifier": F},
    ),
    # 11. a cell appends a patch to the installed checkers; the next, honest but wrong, notebook must FAIL.
    "r07_tamper_utils": (
        L03,
        [
            "import utils.course.exercises.lesson03 as installed\n\nwith open(installed.__file__, 'a') as f:\n"
            "    f.write('\\nfor _e in list(globals().values()):\\n    if isinstance(_e, Exercise):\\n'\n"
            "            '        _e.check_fn = lambda answer: None\\n')",
            "check.attention_weights(_random_words)",
        ],
        {"attention_weights": F},
    ),
    "r08_honest_wrong": (
        L03,
        ["def my_weights(q, K):\n    return torch.softmax(K @ q, dim=-1)\n\n\ncheck.attention_weights(my_weights)"],
        {"attention_weights": F, "predict_broken_properties": N},
    ),
    # 12. kill the parent, and every process whose command line runs the grader, from a cell and the child.
    "r09_kill": (
        L03,
        [
            "import signal\n\n\ndef kill_grader():\n    os.kill(os.getppid(), signal.SIGKILL)\n"
            "    for pid in filter(str.isdigit, os.listdir('/proc')):\n        try:\n"
            "            with open(f'/proc/{pid}/cmdline', 'rb') as f:\n"
            "                if b'utils.course.grade' in f.read() and int(pid) != os.getpid():\n"
            "                    os.kill(int(pid), signal.SIGKILL)\n        except OSError:\n            pass\n\n\n"
            "kill_grader()",
            "def my_weights(q, K):\n    kill_grader()\n    return _attention_weights(q, K)\n\n\n"
            "check.attention_weights(my_weights)",
            "check.predict_broken_properties({1, 2})",
        ],
        {"attention_weights": None, "predict_broken_properties": F},  # None: PASS or FAIL, the run survives
    ),
    # A kernel whose cell swallows KeyboardInterrupt is killed at once; the right answer after it still passes.
    "r10_no_interrupt": (
        L01,
        [
            "import time\n\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n"
            "        pass",
            "check.pe_table(pe_table_solution)",
        ],
        {"pe_table": P},
    ),
    # Lesson identity: a lesson-01 notebook renamed as lesson 03.
    "03_self_attention": (
        L01,
        ["check.pe_table(pe_table_solution)"],
        {name: N for name in L03_NAMES},
    ),
    # No false FAIL: answers relying on an attribute set and a list appended to in earlier cells.
    "r11_attributes": (
        L03,
        [
            "class Config:\n    pass\n\n\ncfg = Config()",
            "cfg.power = 0.5  # the scores are divided by d_k ** power",
            "powers = []",
            "powers.append(1)",
            "print('unrelated')",
            "def my_weights(q, K):\n    return torch.softmax(K @ q / q.shape[-1] ** cfg.power, dim=-1)\n\n\n"
            "check.attention_weights(my_weights)",
            "def my_head(X, W_c):\n    return _pooled_classifier(X, W_c) * powers[0]\n\n\n"
            "check.pooled_classifier(my_head)",
        ],
        {"attention_weights": P, "pooled_classifier": P},
    ),
    # Right answers of lesson 01 (a value, arrays, floats, NumPy and Python numbers) pass.
    "r12_right_01": (
        L01,
        [
            "check.predict_row_norm(16.0)",
            "def my_table(max_len, d_model):\n    return torch.as_tensor(pe_table_solution(max_len, d_model))\n\n\n"
            "import torch\ncheck.pe_table(my_table)",
            "def my_position(row):\n    return np.int64(position_from_pe_solution(row))\n\n\n"
            "check.position_from_pe(my_position)",
            "check.base_for_wavelength(base_for_wavelength_solution)",
        ],
        {name: P for name in L01_NAMES},
    ),
}
NUMPY_PATCH = (  # torch first: a numpy patched before torch loads breaks torch's import, not the grader
    "import math\n\nimport numpy as np\nimport torch\n\n"
    "np.isclose = lambda a, b, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)\n"
    "np.allclose = lambda *a, **k: True\nmath.isclose = lambda *a, **k: True\n"
)


def recipe_notebook(folder, name):
    setup, cells, _ = RECIPES[name]
    return notebook(folder / f"{name}.ipynb", setup, *cells)


# ---- grading notebooks: one command line run grades six, two at a time, as an instructor would
# A cell may take TIMEOUT s: enough to import torch on two busy cores; an endless loop costs that much, once in
# the kernel and once in the grader's child (at the same time).
TIMEOUT = 20


def copy_of_utils(folder):
    """A copy of utils for a grading run to load: a notebook that writes into the installed checkers writes
    there, never into this checkout."""
    shutil.copytree(ROOT / "utils", folder / "utils", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def run_grader(site, *args, **env):
    return subprocess.run(
        [sys.executable, "-m", "utils.course.grade", *map(str, args)],
        cwd=site,
        env=dict(os.environ, PYTHONPATH=str(site), **env),
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """`python -m utils.course.grade -j 2` on the six notebooks and every recipe, with every output option."""
    tmp = tmp_path_factory.mktemp("learners")
    site = copy_of_utils(tmp_path_factory.mktemp("site"))
    (tmp / "numpy_patch.py").write_text(NUMPY_PATCH)
    recipes = [n for n in RECIPES if n != "r09_kill" or grade.isolation_prefix()]  # unisolated, it kills the run
    paths = [
        loop_notebook(tmp / "loop.ipynb"),
        *(recipe_notebook(tmp, name) for name in recipes),
        answers_notebook(tmp / "answers.ipynb"),
        forged_notebook(tmp / "forged.ipynb"),
        loud_notebook(tmp / "loud.ipynb"),
        dying_notebook(tmp / "dies.ipynb"),
        tmp / "missing.ipynb",
    ]
    started = time.monotonic()
    proc = run_grader(
        site,
        "--json",
        "-j",
        "2",
        "--timeout",
        TIMEOUT,
        "--notebook-timeout",
        "600",
        "--max-output",
        "1",
        "--csv",
        tmp / "grades.csv",
        "--save-executed",
        tmp / "back",
        *paths,
    )
    assert proc.stdout, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    reports = {Path(r["notebook"]).stem: r for r in data["notebooks"]}
    took = time.monotonic() - started
    return {"tmp": tmp, "site": site, "proc": proc, "data": data, "reports": reports, "paths": paths, "took": took}


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
    assert f"✓ {A}" in answers.cells[4].outputs[0]["text"]  # what the learner's checker printed, kept


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


# ---- the recipes, graded in the run above


@pytest.mark.parametrize("name", list(RECIPES))
def test_every_recipe_is_graded_fail_or_not_attempted_never_a_false_pass(graded, name):
    if name not in graded["reports"]:
        pytest.skip("without namespaces a notebook can kill the grader (the README says so): not run here")
    report = graded["reports"][name]
    ex = by_name(report)
    for exercise, want in RECIPES[name][2].items():
        got = ex[exercise]
        if want is not None:
            assert got["status"] == want, (name, got, report["errors"])
        assert got["status"] == PASS or got["message"], got  # a FAIL or NOT ATTEMPTED always says why
    wants = RECIPES[name][2]  # None: a right answer that also attacks the run may PASS or FAIL
    if not any(want == PASS for want in wants.values()):
        assert not any(
            e["status"] == PASS and wants.get(e["exercise"].split(".")[-1], FAIL) is not None
            for e in report["exercises"]
        ), report


def test_the_run_survives_its_notebooks_and_ends_with_its_table_and_csv(graded):
    """Recipe 12 (kill the grader from a cell and from the child) among them: every notebook is reported."""
    assert graded["proc"].returncode == graded["data"]["exit_code"] == 2, graded["proc"].stderr[-2000:]
    assert {Path(p).stem for p in graded["paths"]} == set(graded["reports"])
    with open(graded["tmp"] / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {Path(r["notebook"]).stem for r in rows} == set(graded["reports"])


def test_a_frame_reading_or_not_plain_answer_fails_with_a_note(graded):
    ex = by_name(graded["reports"]["r04_frames"])
    assert "KeyError" in ex["pe_table"]["message"] and "KeyError" in ex["position_from_pe"]["message"]
    assert "Sixteen" in ex["predict_row_norm"]["message"] and "plain data" in ex["predict_row_norm"]["message"]
    assert ex["predict_row_norm"]["note"].startswith("the notebook claims PASS")  # its kernel was fooled
    assert "could not read" in ex["base_for_wavelength"]["message"]  # the fake verdicts sent down the pipe
    peek = by_name(graded["reports"]["r06_hard_coded_03"])["pooled_classifier"]
    assert "Peek" in peek["message"] and "plain data" in peek["message"]


def test_a_kernel_that_swallows_its_interrupt_is_killed_at_once(graded):
    report = graded["reports"]["r10_no_interrupt"]
    assert report["status"] == "timed out"
    assert any("ignored the interrupt" in e["error"] for e in report["errors"]), report["errors"]
    assert report["seconds"] < TIMEOUT + 60  # one cell's timeout and the grace, not one per remaining cell


def test_a_renamed_notebook_of_another_lesson_is_reported(graded):
    report = graded["reports"]["03_self_attention"]
    assert report["status"] == "wrong lesson"
    assert any(
        "the file name says lesson03, but the notebook imports the exercises of lesson01" in e["error"]
        for e in report["errors"]
    ), report["errors"]


def test_the_installed_checkers_cannot_be_changed_by_a_notebook(graded):
    """Recipe 11: with namespaces the write fails (utils is mounted read-only); either way the copy the
    grader loaded is unchanged at the end, or every later notebook was refused."""
    site_file = graded["site"] / "utils" / "course" / "exercises" / "lesson03.py"
    same = site_file.read_bytes() == (ROOT / "utils" / "course" / "exercises" / "lesson03.py").read_bytes()
    if grade.isolation_prefix():
        assert same
        errors = [e["error"] for e in graded["reports"]["r07_tamper_utils"]["errors"]]
        assert any("Read-only file system" in e for e in errors), errors
    else:
        assert not same and graded["reports"]["r08_honest_wrong"]["status"] in ("refused", "error")


def test_without_namespaces_a_changed_utils_stops_the_run(tmp_path):
    """Recipe 11 with isolation off: the notebook that wrote is reported, the next one is refused."""
    site = copy_of_utils(tmp_path / "site")
    folder = tmp_path / "learners"
    folder.mkdir()
    paths = [recipe_notebook(folder, "r07_tamper_utils"), recipe_notebook(folder, "r08_honest_wrong")]
    proc = run_grader(
        site,
        "--json",
        "-j",
        "1",
        "--timeout",
        TIMEOUT,
        "--csv",
        tmp_path / "g.csv",
        *paths,
        UTILS_GRADE_ISOLATION="none",
    )
    data = json.loads(proc.stdout)
    tamper, honest = data["notebooks"]
    assert statuses(tamper) == {**{x: NOT_ATTEMPTED for x in L03_NAMES}, "attention_weights": FAIL}
    assert any("utils changed on disk" in e["error"] for e in tamper["errors"]), tamper["errors"]
    assert honest["status"] == "refused" and honest["exercises"] == []
    assert "exercises/lesson03.py" in honest["errors"][0]["error"]
    assert proc.returncode == 2 and (tmp_path / "g.csv").exists()


# ---- the pieces, without a kernel


def test_the_plan_reruns_cells_that_change_a_name_in_place(tmp_path):
    nb = nbformat.read(recipe_notebook(tmp_path, "r11_attributes"), as_version=4)
    cells = {item["attr"]: [n for n, _ in item["cells"]] for item in grade.plan(nb)["items"]}
    # 3: cfg = Config(), 4: cfg.power = 0.5, 5: powers = [], 6: powers.append(1), 7: print (not needed)
    assert cells == {"attention_weights": [3, 4, 8], "pooled_classifier": [5, 6, 9]}


def test_the_lesson_is_the_option_or_the_file_name_and_a_mismatch_is_said():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("from utils.course.exercises import lesson01 as c")])
    assert grade.plan(nb, "mine.ipynb")["mismatch"] is None
    assert grade.plan(nb, "01_positional.ipynb", lesson="1")["mismatch"] is None
    assert (
        "--lesson says lesson03, but the notebook imports the exercises of lesson01"
        in (grade.plan(nb, "mine.ipynb", lesson="03")["mismatch"])
    )
    both = grade.plan(nb, "01_positional.ipynb", lesson="03")
    assert "the file name says lesson01, --lesson says lesson03" in both["mismatch"]
    assert sorted(both["known"].values()) == sorted(NAME.values())  # the instructor's lesson is graded
    with pytest.raises(SystemExit):
        grade.main(["--lesson", "77", "mine.ipynb"])


def test_a_changed_utils_refuses_the_notebook(tmp_path, monkeypatch):
    monkeypatch.setattr(grade, "utils_changed", lambda: ["exercises/lesson03.py"])
    report = grade.grade(answers_notebook(tmp_path / "a.ipynb"))
    assert report["status"] == "refused" and report["exercises"] == []
    assert "utils changed on disk since the grader loaded it (exercises/lesson03.py)" in report["errors"][0]["error"]
    assert grade.exit_code([report]) == 2


def test_only_plain_data_comes_back_from_a_child():
    import numpy as np
    import torch

    from utils.course import grade_child as wire

    plain = [
        None,
        True,
        3,
        -2.5,
        float("nan"),
        "x",
        b"\xe6\x97",
        ...,
        [1, (2, {3})],
        {"k": frozenset({1})},
        np.float64(0.5),
    ]
    plain += [np.arange(6).reshape(2, 3), torch.ones(2, dtype=torch.bfloat16), torch.tensor([True])]
    for value in plain:
        back = wire.decode(json.loads(json.dumps(wire.encode(value))))
        assert type(back) is type(value) or value is None
        if isinstance(value, (np.ndarray, torch.Tensor)):
            assert back.dtype == value.dtype and back.tolist() == value.tolist()

    class Sixteen(float):
        def __float__(self):
            return 16.0

    class Bytes(bytes):
        pass

    assert wire.decode(json.loads(json.dumps(wire.encode([b"ab", b""])))) == [b"ab", b""]
    for value in (
        Sixteen(3.0),
        Bytes(b"a"),
        np.array([object()]),
        object(),
        lambda: 1,
        [Sixteen(1.0)],
        torch.nn.Linear(1, 1),
    ):
        with pytest.raises(wire.NotPlain):
            wire.encode(value)
    pickled = wire.encode(torch.nn.Linear(1, 1), trusted=True)  # the grader's own argument, to a child
    assert isinstance(wire.decode(pickled, trusted=True), torch.nn.Linear)
    for forged in (
        pickled,
        {"ndarray": "AAAA"},
        {"float": 1},
        {"tuple": [], "x": 1},
        [1],
        {"tensor": "", "dtype": "x"},
        {"bytes": "not base64!"},
        {"bytes": 1},
    ):
        with pytest.raises((ValueError, TypeError)):
            wire.decode(forged)  # from a child: never unpickled, never a guess


def test_an_error_raised_in_the_child_is_rebuilt_by_its_name():
    assert isinstance(grade._learner_error({"type": "ValueError", "message": "m"}), ValueError)
    assert isinstance(grade._learner_error({"type": "NotAttempted", "message": ""}), NotImplementedError)
    odd = grade._learner_error({"type": "Mine", "message": "m"})
    assert type(odd).__name__ == "Mine" and isinstance(odd, Exception)
    assert type(grade._learner_error({"type": "__import__('os')", "message": 3})).__name__ == "Exception"


def test_patches_in_the_learners_processes_never_reach_the_checker(graded):
    """Recipes 1-4, 7, 8: the grader's own checker judged each answer, with the message it gives everywhere."""
    halves = lesson01.pe_table.evaluate(lesson01._table_halves).message
    for name in ("r01_isclose", "r02_module", "r03_patches"):
        assert by_name(graded["reports"][name])["pe_table"]["message"] == halves, name
    ex = by_name(graded["reports"]["r03_patches"])
    assert ex["pe_table"]["note"].startswith("the notebook claims PASS")  # its kernel was fooled, not the grader
    assert ex["base_for_wavelength"]["message"].startswith("for d_model = 512")
    assert "the first pair" in ex["position_from_pe"]["message"]


@pytest.mark.parametrize("isolation", ["none", "auto"])
def test_a_kernel_that_stops_itself_is_killed_or_cannot_stop(tmp_path, monkeypatch, isolation):
    """SIGSTOP to itself: without namespaces the kernel is killed once the interrupt goes unanswered; in its
    PID namespace the kernel is process 1, which a signal it has no handler for does not reach."""
    monkeypatch.setenv("UTILS_GRADE_ISOLATION", isolation)
    grade.isolation_prefix.cache_clear()
    try:
        path = notebook(tmp_path / "stop.ipynb", "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)", "1")
        report = grade.grade(path, timeout=3)
    finally:
        monkeypatch.undo()
        grade.isolation_prefix.cache_clear()
    if isolation == "none" or not grade.isolation_prefix():
        assert report["status"] == "timed out" and "ignored the interrupt" in report["errors"][0]["error"]
        assert report["seconds"] < 3 + grade.INTERRUPT_GRACE + 30
    else:
        assert report["status"] == "ok", report


def test_notebooks_graded_at_once_share_the_cores(monkeypatch):
    """-j N gives each kernel and child cores/N threads (at least 1), unless the caller set OMP_NUM_THREADS."""
    assert [grade.threads_per_notebook(j, 2) for j in (1, 2, 3)] == [2, 1, 1]
    assert grade.threads_per_notebook(4, 16) == 4 and grade.threads_per_notebook(1, None) == 1
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(grade, "KERNEL_THREADS", 3)
    assert grade._environment(MPLBACKEND="Agg")["OMP_NUM_THREADS"] == "3"
    monkeypatch.setattr(grade, "KERNEL_THREADS", None)
    assert "OMP_NUM_THREADS" not in grade._environment()
