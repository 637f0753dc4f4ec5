"""Regenerate notebooks/NN_name.ipynb from lessons_src/NN_name.py, execute it, and save it with outputs.

Usage: python scripts/build_notebooks.py            # every lesson
       python scripts/build_notebooks.py 01 03_self  # lessons whose file name starts with these
"""

import argparse
import difflib
import os
import sys
import time

import jupytext
import nbformat

from utils.course.kernel_client import notebook_client
from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)  # the kernel imports the same installed utils (pip install -e .)
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def lesson_sources(prefixes=()):
    """The lesson sources in order, optionally only those whose name starts with a prefix."""
    return [lesson.source for lesson in lessons(list(prefixes)) if lesson.source.exists()]


def keep_cell_ids(nb, old):
    """Give `nb`'s cells the ids of `old`'s where they are the same cell (unchanged, or edited in place).

    Cells are aligned by (type, source): unchanged cells keep their id wherever they moved to, and a run
    of edited cells replacing as many old ones keeps the old ids, so only new cells get new ids.
    """
    key = [(c.cell_type, c.source) for c in nb.cells]
    old_key = [(c.cell_type, c.source) for c in old.cells]
    kept = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_key, key, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for old_cell, cell in zip(old.cells[i1:i2], nb.cells[j1:j2]):
                if "id" in old_cell:
                    cell["id"] = old_cell["id"]
                    kept.add(old_cell["id"])
    # A cell moved elsewhere unchanged reads as deleted here and inserted there: give it its old id back.
    unused = {}
    for old_cell, k in zip(old.cells, old_key):
        if old_cell.get("id") and old_cell["id"] not in kept:
            unused.setdefault(k, []).append(old_cell["id"])
    for cell, k in zip(nb.cells, key):
        if cell.get("id") not in kept and unused.get(k):
            cell["id"] = unused[k].pop(0)
            kept.add(cell["id"])
    return nb


def collapse_verification(nb):
    """Collapse in JupyterLab every cell the source tags `hide-input` (a check the reader may open, not read)."""
    for cell in nb.cells:
        jupyter = cell.metadata.get("jupyter", {})
        if "hide-input" in cell.metadata.get("tags", []):
            jupyter["source_hidden"] = True
        else:
            jupyter.pop("source_hidden", None)
        if jupyter:
            cell.metadata["jupyter"] = jupyter
        else:
            cell.metadata.pop("jupyter", None)
    return nb


def read_source(src):
    """The lesson as a notebook (inputs only), with the cell ids of its committed notebook if there is one."""
    nb = collapse_verification(jupytext.read(src))
    committed = ROOT / "notebooks" / (src.stem + ".ipynb")
    if committed.exists():
        keep_cell_ids(nb, nbformat.read(committed, as_version=4))
    return nb


def build(src, timeout=900):
    """Read the .py lesson, execute it in a fresh python3 kernel, and write the .ipynb beside it."""
    nb = read_source(src)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.pop("jupytext", None)
    nb.metadata["jupytext"] = {"formats": "notebooks///ipynb,lessons_src///py:percent"}
    client = notebook_client(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    )
    client.execute()
    out = ROOT / "notebooks" / (src.stem + ".ipynb")
    nbformat.write(nb, out)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="name prefixes, e.g. 01 or 03_self (default: all)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads sleep, not spin
    os.environ.pop("MPLBACKEND", None)  # kernels draw inline only when it is unset
    srcs = lesson_sources(args.lessons)
    if not srcs:
        sys.exit(f"no lesson in lessons_src/ starts with {args.lessons}")
    for src in srcs:
        start = time.perf_counter()
        out = build(src)
        print(
            f"{out.relative_to(ROOT)}: executed in {time.perf_counter() - start:.1f} s, "
            f"{out.stat().st_size / 1024:.0f} KiB"
        )


if __name__ == "__main__":
    main()
