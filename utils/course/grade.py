"""Grade learners' copies of the lessons: every exercise's verdict is decided by the grader, not the notebook.

    python -m utils.course.grade NOTEBOOK... [--json] [--csv FILE] [--save-executed DIR] [-j N]
                          [--timeout SECONDS] [--notebook-timeout SECONDS] [--max-output MB]

Two things happen to each notebook, at the same time:

- Verdicts. The grader reads the notebook's code cells. An exercise is a call `check.NAME(ANSWER)`
  where `check` is any name bound by `from utils.course.exercises import lessonNN [as check]` or
  `import utils.course.exercises.lessonNN as check`. For each exercise (the last cell that calls it) the
  grader gathers the code that recreates ANSWER: the notebook's import statements up to that cell,
  the cell itself, and, following the names it uses, the latest earlier cell defining each of them
  (a `def`, an assignment such as a prediction `my_prediction = ...` in its own cell), transitively.
  That code runs in a child process the grader starts (one per notebook, a fresh one after a crash or
  a time-out), where the lesson's checkers were imported and copied before any learner code ran and
  `check` only records the answer. The copied checker then judges it. So a notebook that writes PASS
  into `utils.course.exercises` results or replaces a checker grades nothing but its own kernel.
  An exercise whose check call is missing, or whose stub is untouched (`raise NotImplementedError`,
  `...`), is NOT ATTEMPTED; one whose recreating code raises is FAIL with the error.
- Notebook run. The notebook also runs top to bottom in its own new python3 kernel (errors allowed),
  to report each cell that raises, a cell or a notebook that runs too long, a notebook that prints
  too much (its output is cut and it is stopped), or a kernel that dies. What the kernel's checkers
  printed stays in the notebook for the learner; when it disagrees with the grader's verdict, the
  grader's wins and the report adds a note ("the notebook claims PASS; ...").

Options:
  --json                 print one JSON document instead of the tables
  --csv FILE             also write one row per notebook x exercise: notebook, lesson, exercise,
                         status, message (a notebook-level error is a row with an empty exercise)
  --save-executed DIR    keep each executed notebook in DIR (same file name; -2, -3... when two
                         share one), with the grader's verdict table as a last markdown cell
  -j N, --jobs N         grade N notebooks at a time (default 1)
  --timeout SECONDS      per cell in the kernel, and per exercise when the grader reruns it (default 600)
  --notebook-timeout SECONDS
                         total for one notebook's kernel run, and for all its exercises' reruns (default 3600)
  --max-output MB        output a notebook may print before it is stopped (default 20)

Exit code: 0 every exercise passed; 1 some exercise did not (or none was found); 2 a notebook raised,
timed out, printed too much, lost its kernel or could not be read.
"""

import argparse
import ast
import asyncio
import builtins
import csv
import functools
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
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from utils.course.exercises import FAIL, NOT_ATTEMPTED, PASS

PACKAGE = "utils.course.exercises"
STATUSES = (PASS, FAIL, NOT_ATTEMPTED)
MAX_MESSAGE = 2000  # characters of a verdict's message kept (a message can quote a learner's value)
STARTUP = 120  # seconds the grader's child may take to import the checkers
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
        self.calls = [
            (n.func.value.id, n.func.attr)
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and (n.args or n.keywords)
        ]


def _globals_used(table):
    """Every global name a cell reads, at top level or inside its functions, classes and lambdas."""
    if table.get_type() == "module":
        names = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    else:
        names = {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
    for child in table.get_children():
        names |= _globals_used(child)
    return names


def _closure(cells, target, aliases):
    """Positions (in `cells`) of the cells that recreate what cell `target` uses, target included."""
    needed, seen = {target}, set()
    work = [(name, target) for name in cells[target].uses]
    while work:
        name, before = work.pop()
        if name in aliases or (name, before) in seen:
            continue
        seen.add((name, before))
        for j in range(before - 1, -1, -1):
            if name in cells[j].defines:
                if name in cells[j].assigns and j not in needed:  # an import alone is in the imports
                    needed.add(j)
                    work += [(n, j) for n in cells[j].uses]
                break
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


def plan(nb, path=None):
    """What the grader will check in notebook `nb`: the lesson modules, every exercise they define, and
    for each exercise whose check call appears, the code (imports, cells) that recreates its answer."""
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
    modules = sorted({m for m in aliases.values() if _lesson_exercises(m) is not None})
    if not aliases and path is not None:  # the learner deleted the import: the file name says the lesson
        number = re.match(r"(\d\d)_", Path(path).name)
        if number and _lesson_exercises(f"lesson{number[1]}") is not None:
            modules = [f"lesson{number[1]}"]
    known = {(m, attr): name for m in modules for attr, name in _lesson_exercises(m).items()}
    last_call = {}
    for pos, c in enumerate(cells):
        for alias, attr in c.calls:
            if (aliases.get(alias), attr) in known:
                last_call[(aliases[alias], attr)] = pos
    items = []
    for (module, attr), pos in sorted(last_call.items(), key=lambda kv: (kv[1], kv[0])):
        needed = _closure(cells, pos, aliases)
        items.append(
            {
                "module": module,
                "attr": attr,
                "name": known[(module, attr)],
                "target": cells[pos].number,
                "imports": [(c.number, src) for c in cells[: pos + 1] for src in c.imports],
                "cells": [(cells[j].number, cells[j].source) for j in needed],
            }
        )
    return {"aliases": aliases, "modules": modules, "known": known, "items": items, "unparsable": unparsable}


# ---------------------------------------------------------------------------------------------------
# The grader's child process: recreate each answer, then judge it with checkers copied before any learner code


def _frozen(fn):
    """A copy of function `fn` whose globals are a snapshot: later patches of its module do not reach it."""
    if not isinstance(fn, types.FunctionType):
        return fn
    copy = types.FunctionType(fn.__code__, dict(fn.__globals__), fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def _restore(snapshots):
    """Put back every module dict as it was before learner code ran."""
    for namespace, saved in snapshots:
        for key in [k for k in namespace if k not in saved]:
            del namespace[key]
        for key, value in saved.items():
            if namespace.get(key, saved) is not value:
                namespace[key] = value


def _recorder(module, log):
    """Stands for `check`: `check.NAME(answer)` appends (module, NAME, answer) to `log`; nothing else does anything."""

    class Slot:
        def __init__(self, attr):
            object.__setattr__(self, "_attr", attr)

        def __call__(self, answer=None, *args, **kwargs):
            log.append((module, object.__getattribute__(self, "_attr"), answer))

        def __getattr__(self, name):  # check.NAME.hint(), .solution(): no-ops here
            return lambda *args, **kwargs: None

        def __setattr__(self, name, value):
            pass

        def __delattr__(self, name):
            pass

    class Module:
        def __getattr__(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            return Slot(attr)

        def __setattr__(self, name, value):  # `check.NAME = ...` in a learner's cell changes nothing here
            pass

        def __delattr__(self, name):
            pass

    return Module()


class _NoIPython:
    """What get_ipython() returns in the grader's child: magics and shell escapes do nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _compiled(source, number):
    tree = ast.fix_missing_locations(_DropExerciseImports().visit(ast.parse(source)))
    return compile(tree, f"<cell {number}>", "exec")


def _recreate_and_check(item, aliases, checker, evaluate, snapshots):
    """(status, message) of one exercise: rerun its cells with `check` recording, then judge the answer."""
    log = []
    recorders = {alias: _recorder(module, log) for alias, module in aliases.items()}
    ns = {"__name__": "__main__", "__builtins__": builtins, "get_ipython": _NoIPython}
    for number, source in item["imports"]:
        try:
            exec(_compiled(source, number), ns)
        except BaseException:  # an import the answer does not need may fail; one it needs fails below
            pass
    ns.update(recorders)
    key = (item["module"], item["attr"])

    def answers():
        return [answer for module, attr, answer in log if (module, attr) == key]

    for number, source in item["cells"]:
        if number == item["target"]:
            log.clear()
        try:
            exec(_compiled(source, number), ns)
        except BaseException as err:
            if number == item["target"] and answers():
                break  # the cell failed after its check call: judge the answer it gave
            what = f"rerunning cell {number} raised {type(err).__name__}: {err}"
            if isinstance(err, NotImplementedError):
                return NOT_ATTEMPTED, f"{what} (replace `raise NotImplementedError` with your code)"
            return FAIL, what
    if not answers():
        return NOT_ATTEMPTED, f"the check call in cell {item['target']} did not run"
    answer = answers()[-1]
    _restore(snapshots)
    try:
        result = evaluate(checker, answer)
        status, message = result.status, result.message
    except BaseException as err:  # SystemExit, KeyboardInterrupt: the checker's own net catches Exception only
        status, message = FAIL, f"your code raised {type(err).__name__}: {err}"
    return (status if status in STATUSES else FAIL), str(message)


# The child's first lines: only the standard library until it has the grader's sys.path (as multiprocessing's
# spawn does), so it imports the very utils the grader runs, whatever started the grader.
BOOT = (
    "import sys; from multiprocessing.connection import Connection; conn = Connection(int(sys.argv[1])); "
    "payload = conn.recv(); sys.path[:] = payload['sys_path']; from utils.course.grade import _child; "
    "_child(conn, payload)"
)


def _child(conn, payload):
    """The grader's child process (started by check_answers): checks items[start:], sends each verdict."""
    sys.stdout = sys.stderr = open(os.devnull, "w")  # learner prints go nowhere; verdicts go over `conn`
    parent = os.getppid()

    def orphaned():  # the grader was stopped (Ctrl-C): do not outlive it, even inside an endless loop
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(3)

    threading.Thread(target=orphaned, daemon=True).start()
    try:
        from utils.course import exercises

        checkers = {}
        modules = [importlib.import_module(f"{PACKAGE}.{m}") for m in payload["modules"]]
        for module in modules:
            for attr, obj in vars(module).items():
                if isinstance(obj, exercises.Exercise):
                    checkers[(module.__name__.rsplit(".", 1)[-1], attr)] = types.SimpleNamespace(
                        name=obj.name, check_fn=_frozen(obj.check_fn), reference=obj.reference
                    )
        evaluate = _frozen(exercises.Exercise.evaluate)
        snapshots = [(vars(m), dict(vars(m))) for m in (builtins, exercises, *modules)]
        os.chdir(payload["cwd"])
        sys.path.append(payload["cwd"])  # like the kernel, which runs in the notebook's folder
    except BaseException as err:
        conn.send(("error", f"{type(err).__name__}: {err}"[:MAX_MESSAGE]))
        return
    conn.send(("ready",))
    items = payload["items"]
    for k in range(payload["start"], len(items)):
        conn.send(("start", k))
        item = items[k]
        try:
            status, message = _recreate_and_check(
                item, payload["aliases"], checkers[(item["module"], item["attr"])], evaluate, snapshots
            )
        except BaseException as err:
            status, message = FAIL, f"the grader could not rerun it: {type(err).__name__}: {err}"
        conn.send(("done", k, status, message[:MAX_MESSAGE]))
    conn.send(("end",))


def _stop(proc):
    """Kill the child and everything it started (its own session and process group), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child is still unreaped here: its pid is not reused
    except OSError:
        pass
    proc.kill()
    proc.wait()


def check_answers(the_plan, cwd, timeout=600, total=3600):
    """Verdicts [(status, message)] for the plan's items, each decided in a child process the grader controls.

    An item that runs longer than `timeout` s is FAIL and the next ones get a fresh child; once the items
    together have run `total` s, the rest are FAIL (a child's start-up is not counted). Returns
    (verdicts, error): error is a notebook-level message, or None."""
    items = the_plan["items"]
    verdicts = [None] * len(items)
    if not items:
        return verdicts, None
    payload = {
        "modules": the_plan["modules"],
        "aliases": the_plan["aliases"],
        "items": items,
        "cwd": str(cwd),
        "sys_path": list(sys.path),
    }
    budget = total
    start, error, unchecked = 0, None, "not checked"
    while start < len(items) and error is None and budget > 0:
        recv, send = multiprocessing.Pipe()
        proc = subprocess.Popen(
            [sys.executable, "-c", BOOT, str(send.fileno())],
            pass_fds=(send.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=dict(os.environ, MPLBACKEND="Agg"),
        )
        send.close()
        current, expected, ended, began = None, start, False, None
        startup = max(STARTUP, timeout)
        limit = time.monotonic() + startup
        try:
            recv.send(dict(payload, start=start))
            while True:
                wait = limit - time.monotonic()
                if wait <= 0 or not recv.poll(wait):
                    break
                try:
                    msg = recv.recv()
                except (EOFError, OSError):
                    proc.wait(5)  # it closed the pipe: it is exiting
                    break
                kind = msg[0] if isinstance(msg, tuple) and msg else None
                if kind == "error":
                    error = f"the grader could not load the checkers: {msg[1]}"
                    break
                if kind == "ready":
                    continue
                if kind == "start" and msg[1:] == (expected,) and current is None:
                    current, began = expected, time.monotonic()
                    limit = began + min(timeout, budget)
                elif (
                    kind == "done"
                    and len(msg) == 4
                    and msg[1] == current
                    and msg[2] in STATUSES
                    and isinstance(msg[3], str)
                ):
                    verdicts[current] = (msg[2], msg[3][:MAX_MESSAGE])
                    budget -= time.monotonic() - began
                    current, expected, began = None, expected + 1, None
                    limit = time.monotonic() + startup
                elif kind == "end" and current is None:
                    ended = True
                    break
                else:
                    error = "the grader's child sent a message out of order"
                    break
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            died = proc.poll()  # None while it runs (stopped below for running too long)
            _stop(proc)
            recv.close()
        if ended or error is not None:
            break
        if current is None:  # it died or stalled between items, or before starting
            if expected == start:
                error = "the grader's child stopped before checking anything" + (
                    f" (exit code {died})" if died is not None else f" (not ready after {startup:g} s)"
                )
            start = expected
            continue
        budget -= time.monotonic() - began
        if died is not None:
            verdicts[current] = (FAIL, f"your code stopped the grader's process (exit code {died})")
        elif budget <= 0:
            verdicts[current] = (FAIL, f"stopped: the {total:g} s the grader gives one notebook's exercises ran out")
        else:
            verdicts[current] = (FAIL, f"stopped after {timeout:g} s without finishing (an endless loop?)")
        start = current + 1
    if budget <= 0:
        unchecked = f"not checked: the {total:g} s the grader gives one notebook's exercises ran out"
    verdicts = [v if v is not None else (FAIL, unchecked) for v in verdicts]
    return verdicts, error


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
    from nbclient import NotebookClient

    class _Client(NotebookClient):
        def setup_limits(self, deadline, max_output):
            self.deadline, self.max_output, self.output_size, self.stopped = deadline, max_output, 0, None

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

    return _Client


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

    client = notebook_client(
        nb,
        client_class=_client_class(),
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
    client.setup_limits(deadline, max_output)
    try:
        client.execute(env=dict(os.environ, PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0")))
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


def grade(path, timeout=600, notebook_timeout=3600, max_output_mb=20, save_to=None):
    """Grade one notebook: its status, its cell errors and every exercise's verdict (decided by the grader)."""
    import nbformat

    path = Path(path)
    report = {"notebook": str(path), "status": "ok", "errors": [], "exercises": [], "seconds": None}
    started = time.perf_counter()
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as err:  # missing file, not JSON, not a notebook
        report.update(status="unreadable", errors=[{"cell": None, "error": f"{type(err).__name__}: {err}"}])
        return report
    try:
        the_plan = plan(nb, path)
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
    saves = _save_paths(args.notebooks, args.save_executed) if args.save_executed else [None] * len(args.notebooks)

    def one(path_and_save):
        path, save = path_and_save
        return grade(
            path,
            timeout=args.timeout,
            notebook_timeout=args.notebook_timeout,
            max_output_mb=args.max_output,
            save_to=save,
        )

    reports = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for report in pool.map(one, zip(args.notebooks, saves)):
            reports.append(report)
            if not args.json:
                print(table(report), end="\n\n", flush=True)
    code = exit_code(reports)
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=["notebook", "lesson", "exercise", "status", "message"])
            writer.writeheader()
            writer.writerows(csv_rows(reports))
    if args.json:
        print(json.dumps({"notebooks": reports, "exit_code": code, "statuses": list(STATUSES)}, indent=2))
    else:
        total = [e for r in reports for e in r["exercises"]]
        print(
            f"{len(reports)} notebook(s), {sum(e['status'] == PASS for e in total)}/{len(total)} "
            f"exercises passed, {sum(r['status'] != 'ok' for r in reports)} notebook(s) with errors"
        )
    return code


if __name__ == "__main__":
    sys.exit(main())
