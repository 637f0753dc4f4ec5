"""Grade learners' copies of the lessons: every exercise's verdict is decided in the grader's own process,
where no learner code runs.

    python -m utils.course.grade NOTEBOOK... [--json] [--csv FILE] [--save-executed DIR] [-j N] [--lesson NN]
                          [--timeout SECONDS] [--notebook-timeout SECONDS] [--max-output MB]

Before anything else the grader imports every lesson's checkers and hashes utils' files; it reads every
notebook file. Then two things happen to each notebook, at the same time:

- Verdicts. The grader reads the notebook's code cells. An exercise is a call `check.NAME(ANSWER)`
  where `check` is any name bound by `from utils.course.exercises import lessonNN [as check]` or
  `import utils.course.exercises.lessonNN as check`. For each exercise (the last cell that calls it) the
  grader gathers the code that recreates ANSWER: the notebook's import statements up to that cell,
  the cell itself, and, following the names it uses, the latest earlier cell defining each of them
  (a `def`, an assignment such as a prediction `my_prediction = ...` in its own cell) and every later
  cell changing it in place (`cfg.scale = 2`, `xs.append(1)`), transitively. A fresh child process per
  exercise (a new interpreter; utils/course/grade_child.py) runs that code with `check` only recording the
  answer, then calls the answer on the inputs the grader sends and sends back plain data (JSON; arrays
  as .npy, never a pickle). The grader's own checker, given a stand-in that forwards each call to the
  child, decides. Expected values never enter a learner's process; an answer that is not plain data, a
  child that dies, stalls or sends something malformed is FAIL. An exercise whose check call is missing,
  or whose stub is untouched (`raise NotImplementedError`, `...`), is NOT ATTEMPTED.
- Notebook run. The notebook also runs top to bottom in its own new python3 kernel (errors allowed),
  to report each cell that raises, a cell or a notebook that runs too long (a kernel that ignores the
  interrupt is killed), a notebook that prints too much (its output is cut and it is stopped), or a
  kernel that dies. What the kernel's checkers printed stays in the notebook for the learner; when it
  disagrees with the grader's verdict, the grader's wins and the report adds a note
  ("the notebook claims PASS; ...").

Kernels and children run in their own session and, where Linux user namespaces work, in their own user,
mount and PID namespace with utils and the Python installation read-only (isolation_prefix). utils' hashes
are checked before and after each notebook: a change refuses every later notebook.

Options:
  --json                 print one JSON document instead of the tables
  --csv FILE             also write one row per notebook x exercise: notebook, lesson, exercise,
                         status, message (a notebook-level error is a row with an empty exercise)
  --save-executed DIR    keep each executed notebook in DIR (same file name; -2, -3... when two
                         share one), with the grader's verdict table as a last markdown cell
  -j N, --jobs N         grade N notebooks at a time (default 1); each gets cores/N threads
                         unless OMP_NUM_THREADS is set
  --lesson NN            the lesson every notebook must be; a notebook whose exercises are another
                         lesson's, or whose file name (NN_...) says another, is reported ("wrong lesson")
  --timeout SECONDS      per cell in the kernel, and per exercise when the grader reruns it (default 600)
  --notebook-timeout SECONDS
                         total for one notebook's kernel run, and for all its exercises' reruns (default 3600)
  --max-output MB        output a notebook may print before it is stopped (default 20)

Exit code: 0 every exercise passed; 1 some exercise did not (or none was found); 2 a notebook raised,
timed out, printed too much, lost its kernel, could not be read, is of the wrong lesson, or was refused
(utils changed).
"""

import argparse
import ast
import asyncio
import builtins
import csv
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import multiprocessing
import os
import re
import signal
import subprocess
import symtable
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from utils.course import grade_child
from utils.course.exercises import FAIL, NOT_ATTEMPTED, PASS

PACKAGE = "utils.course.exercises"
STATUSES = (PASS, FAIL, NOT_ATTEMPTED)
MAX_MESSAGE = 2000  # characters of a verdict's message kept (a message can quote a learner's value)
STARTUP = 120  # seconds a child's interpreter may take to start
INTERRUPT_GRACE = 10  # seconds an interrupted cell has to stop before its kernel is killed
MARKER = "__utils_grade_claims__:"
# Run last in the learner's kernel, only to notice a notebook whose own verdicts disagree with the grader's.
COLLECT = f"""
try:
    import json as _grade_json
    from utils.course import exercises as _grade_exercises
    print({MARKER!r} + _grade_json.dumps(_grade_exercises.results()))
except Exception:
    pass
"""


# ---------------------------------------------------------------------------------------------------
# Reading the notebook: which cells recreate each exercise's answer


@functools.lru_cache(maxsize=1)
def _transformer():
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    return TransformerManager()


def _python(source):
    """A cell's source as plain Python: `%magic` and `!shell` lines become get_ipython() calls."""
    manager = _transformer()
    if manager is None:
        return source
    try:
        return manager.transform_cell(source)
    except Exception:
        return source


def _exercise_aliases(node):
    """[(bound name, lesson module)] for an import statement that binds a lesson's exercise module."""
    found = []
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == PACKAGE:
        found = [(a.asname or a.name, a.name) for a in node.names if re.fullmatch(r"lesson\w+", a.name)]
    elif isinstance(node, ast.Import):
        for a in node.names:
            module = a.name[len(PACKAGE) + 1 :] if a.name.startswith(PACKAGE + ".") else ""
            if a.asname and re.fullmatch(r"lesson\w+", module):
                found.append((a.asname, module))
    return found


class _DropExerciseImports(ast.NodeTransformer):
    """Removes the imports that bind a lesson's exercise module: the grader binds those names itself."""

    def _visit(self, node):
        dropped = {name for name, _ in _exercise_aliases(node)}
        if not dropped:
            return node
        node.names = [a for a in node.names if (a.asname or a.name) not in dropped]
        return node if node.names else ast.copy_location(ast.Pass(), node)

    visit_Import = visit_ImportFrom = _visit


class _Cell:
    """One code cell, analysed: what it defines, what it uses, its imports and its check calls."""

    def __init__(self, number, source):
        self.number, self.source = number, _python(source)
        tree = ast.parse(self.source)
        table = symtable.symtable(self.source, f"<cell {number}>", "exec")
        top_imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        self.imports = [ast.unparse(n) for n in top_imports]
        imported = {(a.asname or a.name).split(".")[0] for n in top_imports for a in n.names}
        # Names whose definition needs the cell itself (an import at top level is rerun on its own).
        self.assigns = {
            s.get_name()
            for s in table.get_symbols()
            if s.is_assigned() or (s.is_imported() and s.get_name() not in imported)
        }
        self.defines = self.assigns | imported
        self.uses = _globals_used(table) - self.defines
        self.aliases = [pair for n in ast.walk(tree) for pair in _exercise_aliases(n)]
        self.changes, calls_on = _changed_names(tree)
        self.calls_on = set().union(*calls_on.values())
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and (n.args or n.keywords)
        ]
        self.calls = [(n.func.value.id, n.func.attr) for n in calls]
        # check.NAME(answer) with `answer` a name this cell neither defines nor changes: the answer is that
        # name's value, recreated by earlier cells alone (the rest of this cell, e.g. a demonstration, is not run)
        self.answer_names = {}
        for n in calls:
            arg = n.args[0] if len(n.args) == 1 and not n.keywords else None
            mine = self.assigns | self.changes | set().union(*(v for c, v in calls_on.items() if c is not n))
            if isinstance(arg, ast.Name) and arg.id not in mine:
                self.answer_names.setdefault((n.func.value.id, n.func.attr), set()).add(arg.id)


def _root(node):
    """`cfg` for `cfg`, `cfg.scale`, `cfg.layers[0].weight`; None for anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _changed_names(tree):
    """(names a cell changes through an attribute or an item: `cfg.scale = 2`, `d[k] += 1`, `del x.y`;
    {statement-level call: the names it may change in place: `xs.append(1)`, `init.zeros_(layer.weight)`}),
    outside function bodies, which run only when called."""
    changes, calls_on = set(), {}
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            changes |= {_root(t) for t in ast.walk(target) if isinstance(t, (ast.Attribute, ast.Subscript))}
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            names = {_root(a) for a in [*call.args, *(k.value for k in call.keywords)]}
            if isinstance(call.func, ast.Attribute):
                names.add(_root(call.func.value))
            calls_on[call] = names - {None}
        stack += [n for n in ast.iter_child_nodes(node) if isinstance(n, (ast.stmt, ast.excepthandler))]
    return changes - {None}, calls_on


def _globals_used(table):
    """Every global name a cell reads, at top level or inside its functions, classes and lambdas."""
    if table.get_type() == "module":
        names = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    else:
        names = {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
    for child in table.get_children():
        names |= _globals_used(child)
    return names


def _closure(cells, target, aliases, names=None):
    """Positions (in `cells`) of the cells that recreate what cell `target` uses, target included; with
    `names`, of the cells before `target` that recreate those names."""
    needed, seen = ({target}, set()) if names is None else (set(), set())
    work = [(name, target) for name in (cells[target].uses if names is None else names)]
    while work:
        name, before = work.pop()
        if name in aliases or (name, before) in seen:
            continue
        seen.add((name, before))
        j = next((j for j in range(before - 1, -1, -1) if name in cells[j].defines), -1)
        if j >= 0 and name in cells[j].assigns and j not in needed:  # an import alone is in the imports
            needed.add(j)
            work += [(n, j) for n in cells[j].uses]
        # Then every later cell that changes it in place: `cfg.scale = 2`, `np.isclose = ...`, `xs.append(1)`
        # (a call only on a name the notebook assigned: `plt.plot(x)` does not change plt for the answer).
        assigned = j >= 0 and name in cells[j].assigns
        for k in range(j + 1, before):
            if k not in needed and (name in cells[k].changes or (assigned and name in cells[k].calls_on)):
                needed.add(k)
                work += [(n, k) for n in cells[k].uses]
    return sorted(needed)


@functools.cache
def _lesson_exercises(module):
    """{attribute: exercise name} of utils.course.exercises.<module>, imported in the grader's own process."""
    from utils.course.exercises import Exercise

    try:
        if importlib.util.find_spec(f"{PACKAGE}.{module}") is None:
            return None
    except (ImportError, ValueError):
        return None
    mod = importlib.import_module(f"{PACKAGE}.{module}")
    return {attr: obj.name for attr, obj in vars(mod).items() if isinstance(obj, Exercise)}


def _lesson_module(number):
    """ "lesson03" for 3 or "03", when that lesson has exercises; else None."""
    name = f"lesson{int(number):02d}"
    return name if _lesson_exercises(name) is not None else None


def plan(nb, path=None, lesson=None):
    """What the grader will check in notebook `nb`: the lesson modules, every exercise they define, and
    for each exercise whose check call appears, the code (imports, cells) that recreates its answer.

    The lesson is `lesson` (an instructor's --lesson) or else the file name's number (03_...); when the
    exercises the notebook imports are another lesson's, plan["mismatch"] says so."""
    cells, unparsable = [], []
    for number, cell in enumerate(nb.cells, start=1):
        if cell.cell_type == "code" and cell.source.strip():
            try:
                cells.append(_Cell(number, cell.source))
            except (SyntaxError, ValueError):
                unparsable.append(number)
    aliases = {}
    for c in cells:
        aliases.update(c.aliases)
    found = sorted({m for m in aliases.values() if _lesson_exercises(m) is not None})
    number = re.match(r"(\d\d)_", Path(path).name) if path is not None else None
    named = _lesson_module(number[1]) if number else None
    wanted = _lesson_module(lesson) if lesson is not None else None
    problems = []
    if lesson is not None and wanted is None:
        problems.append(f"--lesson {lesson} is not a lesson with exercises")
    if wanted and named and wanted != named:
        problems.append(f"the file name says {named}, --lesson says {wanted}")
    expected = wanted or named
    if expected and found and found != [expected]:
        says = "--lesson" if wanted else "the file name"
        problems.append(f"{says} says {expected}, but the notebook imports the exercises of {', '.join(found)}")
    modules = [expected] if expected else found  # without the import, the file name says the lesson
    known = {(m, attr): name for m in modules for attr, name in _lesson_exercises(m).items()}
    last_call, last_calls = {}, {}
    for pos, c in enumerate(cells):
        for alias, attr in c.calls:
            if (aliases.get(alias), attr) in known:
                if last_call.get((aliases[alias], attr)) != pos:
                    last_calls[(aliases[alias], attr)] = []
                last_call[(aliases[alias], attr)] = pos
                last_calls[(aliases[alias], attr)].append(alias)
    items = []
    for (module, attr), pos in sorted(last_call.items(), key=lambda kv: (kv[1], kv[0])):
        names = set().union(
            *(v for (a, x), v in cells[pos].answer_names.items() if (aliases.get(a), x) == (module, attr))
        )
        answer = next(iter(names)) if len(names) == 1 and len(last_calls[(module, attr)]) == 1 else None
        needed = _closure(cells, pos, aliases, None if answer is None else [answer])
        items.append(
            {
                "module": module,
                "attr": attr,
                "name": known[(module, attr)],
                "target": cells[pos].number,
                "answer": answer,  # the name whose value is the answer, or None: rerun the target cell
                "imports": [(c.number, src) for c in cells[: pos + 1] for src in c.imports],
                "cells": [(cells[j].number, cells[j].source) for j in needed],
            }
        )
    mismatch = "wrong lesson: " + "; ".join(problems) if problems else None
    return {
        "aliases": aliases,
        "modules": modules,
        "known": known,
        "items": items,
        "unparsable": unparsable,
        "mismatch": mismatch,
    }


# ---------------------------------------------------------------------------------------------------
# Where learner code runs: children and kernels in their own namespaces, with the grader's files read-only


@functools.cache
def isolation_prefix(network=True):
    """The command that starts a learner's process (kernel or child) where it cannot reach the grader.

    With Linux user namespaces (`unshare`, util-linux): a new user, mount and PID namespace, so the process
    sees only its own processes (it cannot signal or trace the grader, nor read its memory through /proc),
    and the grader's code (utils, the Python installation, its site-packages) is mounted read-only in a way
    the learner's root-in-a-namespace cannot undo; without `network` (a child, which talks to the grader over
    an inherited pipe) also a network namespace with no interface but its own loopback. Measured when first
    needed; [] where it does not work, and then the process only gets its own session (README: what is not
    prevented)."""
    if os.environ.get("UTILS_GRADE_ISOLATION", "auto") == "none" or sys.platform != "linux":
        return []
    import shutil

    if shutil.which("unshare") is None:
        return []
    read_only = sorted(
        {str(Path(p).resolve()) for p in (*_code_dirs(), sys.prefix, sys.base_prefix) if Path(p).is_dir()}
    )
    script = (
        'n=$1; shift; while [ "$n" -gt 0 ]; do mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" '
        "|| exit 97; shift; n=$((n - 1)); done; exec unshare --user --map-root-user --mount --pid --fork "
        f'--kill-child --mount-proc {"" if network else "--net "}-- "$@"'
    )
    prefix = ["unshare", "--user", "--map-root-user", "--mount", "--", "sh", "-c", script, "sh", str(len(read_only))]
    prefix += read_only
    probe = "import os; print(os.getpid())"
    try:
        out = subprocess.run([*prefix, sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return prefix if out.returncode == 0 and out.stdout.strip() == "1" else []


def _code_dirs():
    """The folders of the code the grader runs: utils, and every site-packages folder on sys.path."""
    dirs = [Path(__file__).resolve().parent]
    dirs += [Path(p) for p in sys.path if p and {"site-packages", "dist-packages"} & set(Path(p).parts)]
    return dirs


def _utils_files():
    root = Path(__file__).resolve().parent
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def utils_digest():
    """{path relative to utils: SHA-256} of every file of the utils the grader loaded."""
    root = Path(__file__).resolve().parent
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in _utils_files()}


@functools.cache
def load_checkers():
    """Import every lesson's checkers (and what they import) into the grader, before any learner code runs.
    Returns the digest of utils' files as they were then."""
    from utils.course import exercises

    for spec in sorted(Path(exercises.__file__).parent.glob("lesson*.py")):
        importlib.import_module(f"{PACKAGE}.{spec.stem}")
    import numpy  # noqa: F401 - what compare_arrays imports when called
    import torch  # noqa: F401

    return utils_digest()


def utils_changed():
    """The utils files that differ from what the grader loaded (added, removed or edited), [] if none."""
    before, now = load_checkers(), utils_digest()
    return sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))


# ---------------------------------------------------------------------------------------------------
# The grader's children: one per exercise recreates the answer; the grader's own checker judges it


class _Lost(BaseException):
    """The child is gone or stalled: the exercise is FAIL with this message. A BaseException, so that no
    checker's `except Exception` can take it for the learner's error."""


class _NotPlainAnswer(BaseException):
    """The child sent back something that is not plain data."""


def _learner_error(error):
    """The exception the learner's code raised in the child, rebuilt from its name and message (the name of
    a built-in exception gives that exception, so a checker's `except ValueError` still works)."""
    name = error.get("type") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    name = name if isinstance(name, str) and re.fullmatch(r"[A-Za-z_]\w{0,99}", name) else "Exception"
    message = message if isinstance(message, str) else ""
    if name in ("NotImplementedError", "NotAttempted"):
        return NotImplementedError(message)
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, Exception):
        try:
            return builtin(message)
        except Exception:  # an exception that needs more arguments (UnicodeDecodeError)
            pass
    return type(name, (Exception,), {})(message)


class _Child:
    """One child process: started, fed one exercise's cells, then asked to call the answer."""

    def __init__(self, item, aliases, cwd, deadline):
        self.deadline, self.proc, self.conn = deadline, None, None
        payload = {
            "sys_path": [str(Path(p).resolve()) if p else os.getcwd() for p in sys.path],
            "cwd": str(cwd),
            "aliases": aliases,
            "module": item["module"],
            "attr": item["attr"],
            "target": item["target"],
            "answer": item.get("answer"),
            "imports": [_without_exercise_imports(src) for _, src in item["imports"]],
            "cells": [(number, _without_exercise_imports(src)) for number, src in item["cells"]],
        }
        mine, theirs = multiprocessing.Pipe()
        try:
            self.proc = subprocess.Popen(
                [*isolation_prefix(network=False), sys.executable, "-I", "-c", grade_child.BOOT, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env=_environment(MPLBACKEND="Agg"),
            )
        finally:
            theirs.close()
        self.conn = mine
        mine.send_bytes(json.dumps(payload).encode())

    def receive(self, deadline=None):
        """The child's next message (a dict), or _Lost when it dies, stalls or sends something malformed."""
        wait = (deadline or self.deadline) - time.monotonic()
        try:
            ready = wait > 0 and self.conn.poll(wait)
            if ready:
                message = grade_child.receive(self.conn)
                if isinstance(message, dict):
                    return message
                raise _Lost("the grader's child sent something that is not a message")
        except (EOFError, OSError, ValueError, RecursionError) as err:
            code = self.stop()
            if isinstance(err, EOFError) or code is not None:
                raise _Lost(f"your code stopped the grader's child (exit code {code})") from None
            raise _Lost(f"the grader's child sent a message it could not read ({type(err).__name__})") from None
        self.stop()
        raise _Lost("timed out") from None

    def __call__(self, *args, **kwargs):
        """Stands for the learner's function in the grader: the call runs in the child; plain data comes back."""
        try:
            request = {
                "args": grade_child.encode(list(args), trusted=True),
                "kwargs": grade_child.encode(kwargs, trusted=True),
            }
        except Exception as err:  # the grader's own arguments: a grader bug, never the learner's PASS
            raise _Lost(f"the grader could not send the arguments ({type(err).__name__}: {err})") from None
        try:
            grade_child.send(self.conn, request)
        except OSError:
            raise _Lost(f"your code stopped the grader's child (exit code {self.stop()})") from None
        reply = self.receive()
        if set(reply) == {"returned"}:
            try:
                return grade_child.decode(reply["returned"])
            except (ValueError, TypeError, RecursionError) as err:
                raise _NotPlainAnswer(f"the grader's child sent back data it could not read ({err})") from None
        if set(reply) == {"raised"}:
            raise _learner_error(reply["raised"])
        if set(reply) == {"not plain"}:
            raise _NotPlainAnswer(f"your function returned a {str(reply['not plain'])[:200]}")
        raise _NotPlainAnswer("the grader's child sent a reply that is not one")

    def stop(self):
        """Kill the child and everything it started (its session; its PID namespace dies with it)."""
        if self.proc is None:
            return None
        code = self.proc.poll()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the child is still unreaped here: its pid is not reused
        except OSError:
            pass
        self.proc.kill()
        self.proc.wait()
        if self.conn is not None:
            self.conn.close()
        self.proc = None
        return code


def _without_exercise_imports(source):
    return ast.unparse(ast.fix_missing_locations(_DropExerciseImports().visit(ast.parse(source))))


NOT_PLAIN = (
    "; the grader accepts only plain data: numbers, strings, bytes, lists, tuples, sets, dicts, NumPy arrays and "
    "torch tensors (not a subclass of one)"
)


def check_one(item, aliases, exercise, cwd, timeout=600):
    """(status, message) of one exercise: a fresh child recreates the answer and calls it for the grader's
    own `exercise` (the checker), which decides in this process."""
    started = time.monotonic()
    child = None
    try:
        child = _Child(item, aliases, cwd, started + max(STARTUP, timeout))
        child.receive()  # "ready": the interpreter started
        child.deadline = time.monotonic() + timeout
        outcome = child.receive()
        kind = outcome.get("outcome")
        if kind == "raised":
            error = _learner_error(outcome)
            what = f"rerunning cell {outcome.get('cell')} raised {type(error).__name__}: {error}"
            if isinstance(error, NotImplementedError):
                return NOT_ATTEMPTED, f"{what} (replace `raise NotImplementedError` with your code)"
            return FAIL, what
        if kind == "no call":
            return NOT_ATTEMPTED, f"the check call in cell {item['target']} did not run"
        if kind == "not plain":
            return FAIL, f"your answer is a {str(outcome.get('type'))[:200]}" + NOT_PLAIN
        if kind == "value":
            try:
                answer = grade_child.decode(outcome.get("value"))
            except (ValueError, TypeError, RecursionError) as err:
                return FAIL, f"the grader's child sent an answer it could not read ({err})"
        elif kind == "callable":
            answer = child
        else:
            return FAIL, "the grader's child sent something that is not an answer"
        result = exercise.evaluate(answer)
        return (result.status if result.status in STATUSES else FAIL), str(result.message)
    except _Lost as lost:
        if str(lost) == "timed out":
            return FAIL, f"stopped after {timeout:g} s without finishing (an endless loop?)"
        return FAIL, str(lost)
    except _NotPlainAnswer as err:
        return FAIL, str(err) + NOT_PLAIN
    except Exception as err:  # the grader's own failure: said, never a PASS
        return FAIL, f"the grader could not check it: {type(err).__name__}: {err}"
    finally:
        if child is not None:
            child.stop()


def check_answers(the_plan, cwd, timeout=600, total=3600):
    """Verdicts [(status, message)] for the plan's items, each decided in the grader from what a fresh child
    sent back. Once the items together have run `total` s, the rest are FAIL. Returns (verdicts, None)."""
    load_checkers()
    verdicts, spent = [], 0.0
    for item in the_plan["items"]:
        left = total - spent
        if left <= 0:
            verdicts.append((FAIL, f"not checked: the {total:g} s the grader gives one notebook's exercises ran out"))
            continue
        exercise = getattr(importlib.import_module(f"{PACKAGE}.{item['module']}"), item["attr"])
        began = time.monotonic()
        status, message = check_one(item, the_plan["aliases"], exercise, cwd, min(timeout, left))
        spent += time.monotonic() - began
        if status == FAIL and message.startswith("stopped after") and spent >= total:
            message = f"stopped: the {total:g} s the grader gives one notebook's exercises ran out"
        verdicts.append((status, message[:MAX_MESSAGE]))
    return verdicts, None


# ---------------------------------------------------------------------------------------------------
# Running the notebook in a kernel


class _Stop(Exception):
    """Raised between cells to stop a notebook that ran out of time or printed too much."""


def _size(value):
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_size(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_size(v) for v in value)
    return 0


@functools.lru_cache(maxsize=1)
def _client_class():
    """nbclient's client with a deadline for the whole notebook and a cap on the output it keeps."""
    import nbformat
    from jupyter_client.utils import ensure_async
    from nbclient import NotebookClient

    from utils.course.kernel_client import ShortPollKernelManager

    class _IsolatedKernelManager(ShortPollKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            return [*isolation_prefix(), *super().format_kernel_cmd(extra_arguments)]

    class _Client(NotebookClient):
        def setup_limits(self, deadline, max_output):
            self.deadline, self.max_output, self.output_size, self.stopped = deadline, max_output, 0, None

        async def _async_handle_timeout(self, timeout, cell=None):
            reply = await super()._async_handle_timeout(timeout, cell)  # interrupts the kernel
            try:  # an interrupted cell replies at once; one that does not (it swallows KeyboardInterrupt, or
                await self.kc.shell_channel.get_msg(timeout=INTERRUPT_GRACE)  # is stopped) costs no more time
            except Exception:
                self.stopped = "ignored the interrupt"
                try:
                    await ensure_async(self.km.shutdown_kernel(now=True))
                finally:
                    raise _Stop(self.stopped)
            return reply

        async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
            if cell.cell_type == "code" and cell.source.strip():
                if self.stopped:
                    raise _Stop(self.stopped)
                if time.monotonic() >= self.deadline:
                    self.stopped = "timed out"
                    raise _Stop(self.stopped)
            return await super().async_execute_cell(cell, cell_index, *args, **kwargs)

        def process_message(self, msg, cell, cell_index):
            kind = msg.get("msg_type")
            if kind in ("status", "execute_input"):  # "status: idle" ends the cell: always processed
                return super().process_message(msg, cell, cell_index)
            self.output_size += _size(msg.get("content", {}))  # outputs, display updates, widget messages
            if self.output_size <= self.max_output:
                return super().process_message(msg, cell, cell_index)
            if self.stopped != "too much output":
                self.stopped = "too much output"
                cell.outputs.append(
                    nbformat.v4.new_output(
                        "stream",
                        name="stderr",
                        text=f"\n[output cut: the notebook printed more than {self.max_output / 1e6:g} MB; "
                        "it was stopped here]\n",
                    )
                )
                interrupted = self.km.interrupt_kernel()
                if inspect.isawaitable(interrupted):
                    asyncio.ensure_future(interrupted)
            return None

    return _Client, _IsolatedKernelManager


def run_notebook(nb, cwd, timeout=600, notebook_timeout=3600, max_output=20e6):
    """Execute `nb` in place in a new kernel. Returns (status, errors, claims): claims are the verdicts
    the kernel recorded itself ({name: {"status", "message"}}), or None when they could not be read."""
    import nbformat
    from nbclient.exceptions import DeadKernelError

    from utils.course.kernel_client import notebook_client

    n_cells = len(nb.cells)
    for cell in nb.cells:  # a cell the run does not reach must not show the learner's old outputs
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.cells.append(nbformat.v4.new_code_cell(COLLECT))
    errors, flags = [], set()
    start = time.monotonic()
    deadline = start + notebook_timeout

    running = {}  # the cell the kernel is running, to say which one killed it

    def on_cell_execute(cell, cell_index, **_):
        running.update(cell=cell_index + 1, source=next((ln for ln in cell.source.splitlines() if ln.strip()), "")[:80])

    def cell_timeout(cell):
        return max(1, min(timeout, deadline - time.monotonic()))

    def on_cell_executed(cell, cell_index, execute_reply, **_):
        content = execute_reply.get("content", {}) if execute_reply else {}
        if content.get("status") != "error" or cell_index >= n_cells:
            return
        first = next((line for line in cell.source.splitlines() if line.strip()), "")
        error = f"{content.get('ename')}: {content.get('evalue')}"
        if content.get("ename") == "CellTimeoutError":
            flags.add("timed out")
            error = (
                f"stopped: the notebook ran longer than {notebook_timeout:g} s in total"
                if time.monotonic() >= deadline - 0.5
                else f"stopped: the cell ran longer than {timeout:g} s"
            )
        elif client.stopped == "too much output":
            error = f"stopped: the notebook printed more than {max_output / 1e6:g} MB"
        errors.append({"cell": cell_index + 1, "source": first[:80], "error": error[:MAX_MESSAGE]})

    client_class, manager_class = _client_class()
    client = notebook_client(
        nb,
        client_class=client_class,
        kernel_name="python3",
        allow_errors=True,
        record_timing=False,
        interrupt_on_timeout=True,
        timeout_func=cell_timeout,
        on_cell_execute=on_cell_execute,
        on_cell_executed=on_cell_executed,
        shutdown_kernel="immediate",
        error_on_timeout={"ename": "CellTimeoutError", "evalue": "the cell ran too long", "traceback": []},
        resources={"metadata": {"path": str(cwd)}},
    )
    client.kernel_manager_class = manager_class  # the kernel runs where it cannot reach the grader
    client.setup_limits(deadline, max_output)
    try:
        client.execute(env=_environment(PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0")))
    except _Stop:
        pass
    except DeadKernelError as err:
        flags.add("kernel died")
        errors.append(
            {
                "cell": running.get("cell"),
                "source": running.get("source", ""),
                "error": f"the kernel died while running it ({err})"[:MAX_MESSAGE],
            }
        )
    except Exception as err:  # the kernel would not start, or nbclient gave up
        flags.add("error")
        errors.append({"cell": None, "error": f"{type(err).__name__}: {err}".strip()[:MAX_MESSAGE]})
    if client.stopped == "timed out" and "timed out" not in flags:
        flags.add("timed out")
        errors.append(
            {
                "cell": None,
                "error": f"stopped: the notebook ran longer than {notebook_timeout:g} s "
                "in total; the remaining cells did not run",
            }
        )
    if client.stopped == "ignored the interrupt":
        flags.add("timed out")
        errors.append(
            {
                "cell": running.get("cell"),
                "source": running.get("source", ""),
                "error": f"stopped: the cell ran longer than {timeout:g} s and ignored the interrupt; the kernel "
                "was killed and the remaining cells did not run",
            }
        )
    if client.stopped == "too much output":
        flags.add("too much output")
        if not any("printed more than" in e["error"] for e in errors):
            errors.append({"cell": None, "error": f"stopped: the notebook printed more than {max_output / 1e6:g} MB"})
    claims = _claims(nb.cells[-1])
    del nb.cells[n_cells:]
    if errors and not flags:
        flags.add("error")
    status = next((s for s in ("kernel died", "too much output", "timed out", "error") if s in flags), "ok")
    return status, errors, claims


def _claims(cell):
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and MARKER in out.get("text", ""):
            line = next(ln for ln in out["text"].splitlines() if ln.startswith(MARKER))
            try:
                claims = json.loads(line[len(MARKER) :])
            except ValueError:
                return None
            return claims if isinstance(claims, dict) else None
    return None


# ---------------------------------------------------------------------------------------------------
# Grading one notebook, and the reports


def _tampered(files):
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    return f"utils changed on disk since the grader loaded it ({shown})"


def read_notebook(path):
    """The notebook at `path` as nbformat reads it, or the exception that reading it raised."""
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except Exception as err:  # missing file, not JSON, not a notebook
        return err


def grade(path, timeout=600, notebook_timeout=3600, max_output_mb=20, save_to=None, lesson=None, nb=None):
    """Grade one notebook: its status, its cell errors and every exercise's verdict (decided by the grader).
    `nb`: the notebook as read_notebook gave it earlier (main reads every notebook before any kernel runs, so
    one learner's code cannot rewrite another's file). Refused (status "refused") when utils' files changed
    since the grader loaded its checkers."""
    import nbformat

    path = Path(path)
    report = {"notebook": str(path), "status": "ok", "errors": [], "exercises": [], "seconds": None}
    started = time.perf_counter()
    changed = utils_changed()
    if changed:
        error = f"{_tampered(changed)}: not graded; restore utils (git checkout, or reinstall) and grade again"
        report.update(status="refused", errors=[{"cell": None, "error": error}])
        return report
    nb = read_notebook(path) if nb is None else nb
    if isinstance(nb, Exception):
        report.update(status="unreadable", errors=[{"cell": None, "error": f"{type(nb).__name__}: {nb}"}])
        return report
    try:
        the_plan = plan(nb, path, lesson)
    except Exception as err:  # a lesson's checkers would not import: the grader's problem, reported
        report.update(
            status="error",
            errors=[{"cell": None, "error": f"the grader could not read the exercises: {type(err).__name__}: {err}"}],
        )
        return report
    cwd = path.resolve().parent
    checked = {}

    def verdicts():
        try:
            checked["verdicts"], checked["error"] = check_answers(the_plan, cwd, timeout, notebook_timeout)
        except Exception as err:  # the grader itself failed: say so, never PASS
            checked["verdicts"] = [(FAIL, "not checked")] * len(the_plan["items"])
            checked["error"] = f"the grader could not check the answers: {type(err).__name__}: {err}"

    thread = threading.Thread(target=verdicts, daemon=True)
    thread.start()
    status, errors, claims = run_notebook(nb, cwd, timeout, notebook_timeout, max_output_mb * 1e6)
    thread.join()
    report["status"], report["errors"] = status, errors
    if the_plan["mismatch"]:
        report["errors"].append({"cell": None, "error": the_plan["mismatch"]})
        report["status"] = "wrong lesson" if status == "ok" else status
    changed = utils_changed()
    if changed:  # its kernel (or another's, with -j) wrote there: every later notebook is refused
        report["errors"].append({"cell": None, "error": f"{_tampered(changed)} while this notebook ran"})
        report["status"] = "error" if report["status"] == "ok" else report["status"]
    if checked["error"]:
        report["errors"].append({"cell": None, "error": checked["error"]})
        report["status"] = "error" if status == "ok" else status
    by_name = {item["name"]: v for item, v in zip(the_plan["items"], checked["verdicts"])}
    for name in the_plan["known"].values():
        st, message = by_name.get(name, (NOT_ATTEMPTED, "its check call is not in the notebook"))
        note = ""
        claim = (claims or {}).get(name)
        if isinstance(claim, dict) and claim.get("status") != st:
            note = f"the notebook claims {claim.get('status')}; the grader's check says {st}" + (
                f": {message}" if message else ""
            )
        report["exercises"].append(
            {
                "exercise": name,
                "lesson": name.split(".")[0],
                "status": st,
                "message": message,
                "note": note[:MAX_MESSAGE],
            }
        )
    report["seconds"] = round(time.perf_counter() - started, 1)
    if save_to is not None:
        nb.cells.append(nbformat.v4.new_markdown_cell(markdown(report)))
        Path(save_to).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, save_to)
        report["saved"] = str(save_to)
    return report


def exit_code(reports):
    """0 all passed, 1 an exercise failed, was not attempted or none was found, 2 a notebook errored."""
    if any(r["status"] != "ok" for r in reports):
        return 2
    if any(not r["exercises"] or any(e["status"] != PASS for e in r["exercises"]) for r in reports):
        return 1
    return 0


def _where(error):
    return f"cell {error['cell']} ({error.get('source', '')})" if error["cell"] else "notebook"


def table(report):
    """The report of one notebook as a plain-text table."""
    ex = report["exercises"]
    passed = sum(e["status"] == PASS for e in ex)
    took = f", ran in {report['seconds']} s" if report["seconds"] is not None else ""
    lines = [f"{report['notebook']}: {report['status']}{took}; {passed}/{len(ex)} exercises passed"]
    rows = [("exercise", "status", "message")] + [(e["exercise"], e["status"], e["message"]) for e in ex]
    if ex:
        w0, w1 = (max(len(r[i]) for r in rows) for i in (0, 1))
        lines += [f"  {a:<{w0}}  {b:<{w1}}  {c}".rstrip() for a, b, c in rows]
    else:
        lines.append("  no exercise found")
    lines += [f"  note on {e['exercise']}: {e['note']}" for e in ex if e.get("note")]
    lines += [f"  error in {_where(e)}: {e['error']}" for e in report["errors"]]
    return "\n".join(lines)


def markdown(report):
    """The verdict table appended to a learner's executed copy."""

    def cell(text):
        return str(text).replace("|", "\\|").replace("\n", " ")

    ex = report["exercises"]
    lines = [f"## Grade: {sum(e['status'] == PASS for e in ex)}/{len(ex)} exercises passed", ""]
    if ex:
        lines += ["| exercise | status | message |", "| --- | --- | --- |"]
        lines += [f"| {cell(e['exercise'])} | {cell(e['status'])} | {cell(e['message'])} |" for e in ex]
    else:
        lines.append("No exercise found.")
    problems = [f"- {_where(e)}: {e['error']}" for e in report["errors"]]
    if problems:
        lines += ["", f"The notebook's run: {report['status']}.", ""] + [cell(p) for p in problems]
    return "\n".join(lines)


def csv_rows(reports):
    """One row per notebook x exercise (notebook, lesson, exercise, status, message), plus one per notebook
    error (exercise empty, status the notebook's)."""
    rows = []
    for r in reports:
        lessons = sorted({e["lesson"] for e in r["exercises"]})
        for e in r["exercises"]:
            message = e["message"] + (f" (note: {e['note']})" if e.get("note") else "")
            rows.append(
                {
                    "notebook": r["notebook"],
                    "lesson": e["lesson"],
                    "exercise": e["exercise"].split(".")[-1],
                    "status": e["status"],
                    "message": message,
                }
            )
        for err in r["errors"]:
            rows.append(
                {
                    "notebook": r["notebook"],
                    "lesson": " ".join(lessons),
                    "exercise": "",
                    "status": r["status"],
                    "message": f"{_where(err)}: {err['error']}",
                }
            )
    return rows


def _save_paths(notebooks, folder):
    """One file in `folder` per notebook: its own name, or name-2, name-3... when two share one."""
    taken, paths = set(), []
    for nb in notebooks:
        candidate, n = folder / nb.name, 1
        while candidate.name in taken:
            n += 1
            candidate = folder / f"{nb.stem}-{n}{nb.suffix}"
        taken.add(candidate.name)
        paths.append(candidate)
    return paths


KERNEL_THREADS = None  # OMP_NUM_THREADS for the kernels and children of one grading run (None: the caller's)


def _environment(**extra):
    """The environment a kernel or child starts with: ours, `extra`, and KERNEL_THREADS when set."""
    threads = {} if KERNEL_THREADS is None else {"OMP_NUM_THREADS": str(KERNEL_THREADS)}
    return dict(os.environ, **threads, **extra)


def threads_per_notebook(jobs, cpus):
    """The threads each of `jobs` notebooks graded at a time may use on `cpus` cores (at least 1)."""
    return max(1, (cpus or 1) // jobs)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m utils.course.grade",
        description=__doc__.splitlines()[0],
        epilog="exit code: 0 all passed, 1 some exercise not passed, 2 a notebook errored",
    )
    parser.add_argument("notebooks", nargs="+", type=Path, help="learners' .ipynb files")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument(
        "--csv",
        type=Path,
        metavar="FILE",
        help="also write one row per notebook x exercise (notebook, lesson, exercise, status, message)",
    )
    parser.add_argument(
        "--save-executed",
        type=Path,
        metavar="DIR",
        help="keep the executed notebooks in DIR, each ending with its verdict table",
    )
    parser.add_argument(
        "--lesson",
        metavar="NN",
        help="the lesson every notebook must be (e.g. 03); a notebook of another lesson is reported",
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="grade N notebooks at a time")
    parser.add_argument(
        "--timeout",
        type=float,
        default=600,
        metavar="SECONDS",
        help="seconds per cell, and per exercise rerun by the grader (default 600)",
    )
    parser.add_argument(
        "--notebook-timeout",
        type=float,
        default=3600,
        metavar="SECONDS",
        help="seconds for one notebook's whole run, and for all its exercises (default 3600)",
    )
    parser.add_argument(
        "--max-output",
        type=float,
        default=20,
        metavar="MB",
        help="output a notebook may print before it is stopped (default 20)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("-j must be at least 1")
    if args.lesson is not None and (not re.fullmatch(r"\d{1,2}", args.lesson) or _lesson_module(args.lesson) is None):
        parser.error(f"--lesson must be the number of a lesson with exercises (e.g. 03), got {args.lesson!r}")
    saves = _save_paths(args.notebooks, args.save_executed) if args.save_executed else [None] * len(args.notebooks)

    load_checkers()  # every checker, before any learner code runs; their files' hashes are checked from now on

    notebooks = [read_notebook(path) for path in args.notebooks]  # all of them before any learner code runs
    if not isolation_prefix():
        print(
            "warning: no user namespaces here (unshare --user failed): learner code runs as your user, and can "
            "signal the grader or write its files (README: For instructors)",
            file=sys.stderr,
        )

    def one(job):
        path, save, nb = job
        try:
            return grade(
                path,
                timeout=args.timeout,
                notebook_timeout=args.notebook_timeout,
                max_output_mb=args.max_output,
                save_to=save,
                lesson=args.lesson,
                nb=nb,
            )
        except Exception as err:  # the grader's own failure on one notebook: reported, the run goes on
            error = {"cell": None, "error": f"the grader failed on it: {type(err).__name__}: {err}"[:MAX_MESSAGE]}
            return {"notebook": str(path), "status": "error", "errors": [error], "exercises": [], "seconds": None}

    # N notebooks at a time share the cores instead of each spinning on all of them (8 notebooks, -j 2 on 2
    # cores: 90 s with 2 threads per kernel, 40 s with 1); an OMP_NUM_THREADS of the caller's wins.
    global KERNEL_THREADS
    KERNEL_THREADS = None if "OMP_NUM_THREADS" in os.environ else threads_per_notebook(args.jobs, os.cpu_count())
    reports = []
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for report in pool.map(one, zip(args.notebooks, saves, notebooks)):
                reports.append(report)
                if not args.json:
                    print(table(report), end="\n\n", flush=True)
    finally:
        KERNEL_THREADS = None
    code = exit_code(reports)
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=["notebook", "lesson", "exercise", "status", "message"])
            writer.writeheader()
            writer.writerows(csv_rows(reports))
    if args.json:
        isolation = "namespaces" if isolation_prefix() else "none"
        print(
            json.dumps(
                {"notebooks": reports, "exit_code": code, "statuses": list(STATUSES), "isolation": isolation},
                indent=2,
            )
        )
    else:
        total = [e for r in reports for e in r["exercises"]]
        print(
            f"{len(reports)} notebook(s), {sum(e['status'] == PASS for e in total)}/{len(total)} "
            f"exercises passed, {sum(r['status'] != 'ok' for r in reports)} notebook(s) with errors"
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
