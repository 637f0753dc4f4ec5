"""Grade learners' copies of the lessons: run each in a fresh kernel and report every exercise.

    python -m utils.grade NOTEBOOK... [--json] [--timeout SECONDS]

Each notebook runs top to bottom in its own new python3 kernel (errors allowed, a time limit per
cell); then the checkers' verdicts (utils.exercises.results()) are read from that kernel. Exercises
of the lesson that were never checked count as not attempted. A notebook that errors is reported and
the others are still graded. Exit code: 0 every exercise passed, 1 some did not (or none was found),
2 a notebook raised, timed out or could not be read.
"""

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from utils.exercises import FAIL, NOT_ATTEMPTED, PASS

ROOT = Path(__file__).resolve().parents[1]  # the checkout whose utils the learner's kernel imports
MARKER = "__utils_grade_results__:"
LESSON_MODULE = re.compile(r"utils\.exercises(?:\.|\s+import\s+)(lesson\w+)")
# Run last in the learner's kernel: every recorded verdict, and every exercise the lesson defines.
COLLECT = """
import importlib as _il, json as _js, sys as _sy
from utils import exercises as _ex
for _m in {modules!r}:
    try:
        _il.import_module("utils.exercises." + _m)
    except Exception:
        pass
_known = sorted(_e.name for _n, _mod in list(_sy.modules.items()) if _n.startswith("utils.exercises.lesson")
                for _e in vars(_mod).values() if isinstance(_e, _ex.Exercise))
print({marker!r} + _js.dumps({{"results": _ex.results(), "known": _known}}))
"""


def grade(path, timeout=600):
    """Run one notebook and return its report: status, cell errors and every exercise's verdict."""
    path = Path(path)
    report = {"notebook": str(path), "status": "ok", "errors": [], "exercises": [], "seconds": None}
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as err:  # missing file, not JSON, not a notebook
        report.update(status="unreadable", errors=[{"cell": None, "error": f"{type(err).__name__}: {err}"}])
        return report
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    modules = sorted(set(LESSON_MODULE.findall(code)))
    n_cells = len(nb.cells)
    nb.cells.append(nbformat.v4.new_code_cell(COLLECT.format(modules=modules, marker=MARKER)))

    def on_cell_executed(cell, cell_index, execute_reply, **_):
        content = execute_reply.get("content", {}) if execute_reply else {}
        if content.get("status") == "error" and cell_index < n_cells:
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            report["errors"].append({"cell": cell_index + 1, "source": first[:80],
                                     "error": f"{content.get('ename')}: {content.get('evalue')}"})

    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=True, record_timing=False,
        interrupt_on_timeout=True, on_cell_executed=on_cell_executed,
        error_on_timeout={"ename": "CellTimeoutError", "evalue": f"the cell ran longer than {timeout} s",
                          "traceback": []},
        resources={"metadata": {"path": str(path.resolve().parent)}})
    start = time.perf_counter()
    # The learner's kernel imports this checkout's utils, whatever folder the notebook is in.
    env = dict(os.environ, PYTHONHASHSEED="0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    try:
        client.execute(env=env)
    except (CellTimeoutError, DeadKernelError, RuntimeError, TimeoutError) as err:
        report["errors"].append({"cell": None, "error": f"{type(err).__name__}: {err}".strip()[:300]})
        report["status"] = "kernel died" if isinstance(err, DeadKernelError) else "error"
    report["seconds"] = round(time.perf_counter() - start, 1)
    if report["errors"] and report["status"] == "ok":
        report["status"] = "error"
    collected = _collected(nb.cells[-1])
    if collected is None:
        if report["status"] == "ok":
            report["status"] = "error"
        report["errors"].append({"cell": None, "error": "could not read the exercise results from the kernel"})
        return report
    results, known = collected["results"], collected["known"]
    for name in sorted(set(results) | set(known)):
        r = results.get(name, {"status": NOT_ATTEMPTED, "message": "its check cell never ran"})
        report["exercises"].append({"exercise": name, "status": r["status"], "message": r["message"]})
    return report


def _collected(cell):
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and MARKER in out.get("text", ""):
            line = next(ln for ln in out["text"].splitlines() if ln.startswith(MARKER))
            return json.loads(line[len(MARKER):])
    return None


def exit_code(reports):
    """0 all passed, 1 an exercise failed, was not attempted or none was found, 2 a notebook errored."""
    if any(r["status"] != "ok" for r in reports):
        return 2
    if any(not r["exercises"] or any(e["status"] != PASS for e in r["exercises"]) for r in reports):
        return 1
    return 0


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
    for e in report["errors"]:
        where = f"cell {e['cell']} ({e.get('source', '')})" if e["cell"] else "notebook"
        lines.append(f"  error in {where}: {e['error']}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m utils.grade", description=__doc__.splitlines()[0],
                                     epilog="exit code: 0 all passed, 1 some exercise not passed, "
                                            "2 a notebook errored")
    parser.add_argument("notebooks", nargs="+", type=Path, help="learners' .ipynb files")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per cell (default 600)")
    args = parser.parse_args(argv)
    reports = []
    for path in args.notebooks:
        reports.append(grade(path, timeout=args.timeout))
        if not args.json:
            print(table(reports[-1]), end="\n\n", flush=True)
    code = exit_code(reports)
    if args.json:
        print(json.dumps({"notebooks": reports, "exit_code": code,
                          "statuses": [PASS, FAIL, NOT_ATTEMPTED]}, indent=2))
    else:
        total = [e for r in reports for e in r["exercises"]]
        print(f"{len(reports)} notebook(s), {sum(e['status'] == PASS for e in total)}/{len(total)} "
              f"exercises passed, {sum(r['status'] != 'ok' for r in reports)} notebook(s) with errors")
    return code


if __name__ == "__main__":
    sys.exit(main())
