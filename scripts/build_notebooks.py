"""Regenerate notebooks/NN_name.ipynb from lessons_src/NN_name.py, execute it, and save it with outputs.

Usage: python scripts/build_notebooks.py            # every lesson
       python scripts/build_notebooks.py 01 03_self  # lessons whose file name starts with these
"""

import argparse
import os
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def lesson_sources(prefixes=()):
    """The lesson sources in order, optionally only those whose name starts with a prefix."""
    srcs = sorted((ROOT / "lessons_src").glob("[0-9][0-9]_*.py"))
    return [p for p in srcs if not prefixes or any(p.name.startswith(x) for x in prefixes)]


def build(src, timeout=900):
    """Read the .py lesson, execute it in a fresh python3 kernel, and write the .ipynb beside it."""
    nb = jupytext.read(src)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.pop("jupytext", None)
    nb.metadata["jupytext"] = {"formats": "notebooks///ipynb,lessons_src///py:percent"}
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    client.execute()
    out = ROOT / "notebooks" / (src.stem + ".ipynb")
    nbformat.write(nb, out)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="name prefixes, e.g. 01 or 03_self (default: all)")
    args = parser.parse_args(argv)
    # The kernel imports this checkout's utils, even from a second working tree.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    os.environ.setdefault("PYTHONHASHSEED", "0")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads sleep, not spin
    os.environ.pop("MPLBACKEND", None)  # kernels draw inline only when it is unset
    srcs = lesson_sources(args.lessons)
    if not srcs:
        sys.exit(f"no lesson in lessons_src/ starts with {args.lessons}")
    for src in srcs:
        start = time.perf_counter()
        out = build(src)
        print(f"{out.relative_to(ROOT)}: executed in {time.perf_counter() - start:.1f} s, "
              f"{out.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
