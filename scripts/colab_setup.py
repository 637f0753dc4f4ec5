"""Rewrite the Colab setup cell (tags=["colab-setup"], the first code cell) of every lesson from
utils.course.links, in lessons_src/*.py and in the committed notebooks/*.ipynb (the cell prints nothing
outside Colab, so the notebooks need no re-execution).

Usage: python scripts/colab_setup.py           # rewrite every lesson that differs
       python scripts/colab_setup.py --check   # only report; exit 1 when a lesson differs
       python scripts/colab_setup.py --badges  # print each lesson's README "open" cell (Colab, Binder)
"""

import argparse
import re
import sys

import nbformat

from utils.course.lessons import checkout, lessons
from utils.course.links import badges, colab_setup_source

ROOT = checkout(__file__)

TAG = "colab-setup"
MARKER = f'# %% tags=["{TAG}"]'
CELL_START = re.compile(r"^# %%")


def fix_source(text):
    """The percent-format lesson `text` with the generated setup cell as its first code cell."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if CELL_START.match(line)] + [len(lines)]
    preamble, chunks = lines[: starts[0]], [lines[a:b] for a, b in zip(starts, starts[1:])]
    cell = [MARKER, *colab_setup_source().split("\n"), ""]
    setup = [i for i, c in enumerate(chunks) if TAG in c[0]]
    code = [i for i, c in enumerate(chunks) if "[markdown]" not in c[0]]
    if setup and setup == code[:1]:  # already the first code cell: rewrite it where it stands
        chunks[setup[0]] = cell
    else:
        chunks = [c for c in chunks if TAG not in c[0]]  # drop misplaced setup cells
        code = [i for i, c in enumerate(chunks) if "[markdown]" not in c[0]]
        chunks.insert(code[0] if code else len(chunks), cell)
    return "\n".join(preamble + [line for c in chunks for line in c])


def fix_notebook(nb):
    """Make the generated setup cell the first code cell of `nb`; return True if anything changed."""
    source = colab_setup_source()
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    setup = [i for i in code if TAG in c_tags(nb.cells[i])]
    if setup == code[:1] and setup:  # in place: keep the cell's id and execution count
        changed = nb.cells[setup[0]].source != source
        nb.cells[setup[0]].source = source
        return changed
    for i in reversed(setup):
        del nb.cells[i]
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": [TAG]})
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    nb.cells.insert(code[0] if code else len(nb.cells), cell)
    return True


def c_tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report lessons that differ; change nothing")
    parser.add_argument("--badges", action="store_true", help="print the README badges of every lesson")
    args = parser.parse_args(argv)
    if args.badges:
        for lesson in lessons():
            if lesson.notebook.exists():
                print(f"{lesson.name}: {badges(f'notebooks/{lesson.notebook.name}')}")
        return
    stale = []
    for lesson in lessons():
        src, ipynb = lesson.source, lesson.notebook
        if not src.exists():
            continue
        text = src.read_text()
        fixed = fix_source(text)
        if fixed != text:
            stale.append(src.relative_to(ROOT))
            if not args.check:
                src.write_text(fixed)
        if ipynb.exists():
            nb = nbformat.read(ipynb, as_version=4)
            if fix_notebook(nb):
                stale.append(ipynb.relative_to(ROOT))
                if not args.check:
                    nbformat.write(nb, ipynb)
    verb = "differ" if args.check else "rewritten"
    print("\n".join(f"{p}: {verb}" for p in stale) or "every lesson has the generated Colab setup cell")
    if args.check and stale:
        sys.exit(1)


if __name__ == "__main__":
    main()
