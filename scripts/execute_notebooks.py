"""Execute every lesson notebook top to bottom in a fresh kernel and report errors (outputs are not compared).

Used by .ci/run to run the lessons under Colab's library versions: with an overlay of those packages
first on PYTHONPATH, `--expect FILE` first checks that the kernel really imports the pinned versions.
Nothing is written back to the notebooks.

Usage: python scripts/execute_notebooks.py [--expect .ci/colab.txt] [NN ...]
"""

import argparse
import copy
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient.exceptions import CellExecutionError

from utils.course.kernel_client import notebook_client
from utils.course.lessons import checkout, lessons

ROOT = checkout(__file__)
VERSIONS = "import importlib.metadata as m, json; print(json.dumps({n: m.version(n) for n in %r}))"


def pins(path):
    """{distribution: version} of the exact pins in a requirements file."""
    out = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and "==" in line:
            name, version = line.split("==")
            out[name.strip()] = version.strip()
    return out


def kernel_versions(names):
    """The versions of `names` that a fresh python3 kernel imports."""
    import json

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(VERSIONS % (sorted(names),))])
    notebook_client(nb, timeout=120, kernel_name="python3").execute()
    return json.loads(nb.cells[0].outputs[0]["text"])


def execute(path, timeout):
    """Run a copy of the notebook; return (seconds, error text or None)."""
    nb = copy.deepcopy(nbformat.read(path, as_version=4))
    start = time.perf_counter()
    try:
        notebook_client(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
    except CellExecutionError as err:
        return time.perf_counter() - start, str(err).strip().splitlines()[-1]
    return time.perf_counter() - start, None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="name prefixes, e.g. 01 (default: all)")
    parser.add_argument("--expect", type=Path, help="requirements file whose exact pins the kernel must import")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    os.environ.pop("MPLBACKEND", None)  # kernels draw inline only when it is unset
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # older ipykernels' debugger warns on every start
    if args.expect:
        wanted = pins(args.expect)
        got = kernel_versions(wanted)
        wrong = {n: f"{got[n]} (want {v})" for n, v in wanted.items() if got[n] != v}
        if wrong:
            sys.exit(f"the kernel does not import the versions in {args.expect}: {wrong}")
        print(f"kernel imports the pins of {args.expect}: " + ", ".join(f"{n} {v}" for n, v in wanted.items()))
    notebooks = [lesson.notebook for lesson in lessons(args.lessons) if lesson.notebook.exists()]
    if not notebooks:
        sys.exit(f"no notebook in notebooks/ starts with {args.lessons}")
    failed = []
    for path in notebooks:
        seconds, error = execute(path, args.timeout)
        print(f"{path.name}: {'ERROR ' + error if error else 'ran'} in {seconds:.1f} s", flush=True)
        failed += [path.name] if error else []
    print(f"{len(notebooks) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
